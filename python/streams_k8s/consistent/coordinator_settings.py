"""What a coordinator pod runs: ``STREAMS_K8S_CR_*`` variables, then `streams-k8s coordinator` flags."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams_k8s.api.contract import (
    CONSISTENT_REGION_PORT,
    COORDINATOR_API_PORT,
    PE_HOST_TEMPLATE,
)

# Client-side rate limit of the coordinator's API calls: its status writes are on the path from
# a PE's report to the next notification, so it gets more room than a controller's default.
CLIENT_QPS, CLIENT_BURST = 100.0, 200


class CoordinatorSettings(BaseSettings):
    """What this coordinator pod runs; ``STREAMS_K8S_CR_*`` variables, then flags."""

    model_config = SettingsConfigDict(env_prefix="STREAMS_K8S_CR_", extra="forbid")

    mode: Literal["dedicated", "shared"] = "dedicated"
    job: str | None = Field(None, description="the job (dedicated mode)")
    namespace: str | None = Field(None, description="the job's namespace (default: the pod's)")
    pod_name: str = Field(default_factory=lambda: os.environ.get("POD_NAME") or os.uname().nodename)
    pod_ip: str | None = Field(
        default_factory=lambda: os.environ.get("POD_IP"),
        description="this pod's IP (shared mode: published as the endpoint of the jobs it runs)",
    )
    bind_address: str = "0.0.0.0"
    api_port: int = Field(COORDINATOR_API_PORT, ge=0, le=65535)
    udp_hints: bool = True
    udp_port: int = Field(CONSISTENT_REGION_PORT, ge=1, le=65535)
    udp_host: str = Field(PE_HOST_TEMPLATE, description="where a PE gets its hints (its headless Service)")
    token_review: bool = Field(
        True,
        description="accept writes from users presenting a bearer token (TokenReview + "
        "SubjectAccessReview); off: only the job's PE pods may write (by address, or by a token "
        "bound to the pod)",
    )

    @field_validator("udp_host")
    @classmethod
    def _known_placeholders(cls, template: str) -> str:
        try:
            template.format(job="j", pe=0, namespace="ns")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(f"udp_host may use {{job}}, {{pe}} and {{namespace}} only ({err!r})") from None
        return template

    def effective_namespace(self) -> str | None:
        return self.namespace or os.environ.get("POD_NAMESPACE") or os.environ.get("MY_POD_NAMESPACE")
