"""Runtime settings: defaults, overridden by ``STREAMS_K8S_*`` environment variables, then by flags."""

from __future__ import annotations

import os
import re
import socket
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# a namespace is a DNS label (RFC 1123)
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _default_identity() -> str:
    # In a pod the hostname is the pod name: unique and readable in `kubectl get lease`.
    return f"{socket.gethostname()}_{os.getpid()}"


class RuntimeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STREAMS_K8S_", extra="forbid")

    kubeconfig: str | None = Field(
        None, description="kubeconfig path; default $KUBECONFIG, ~/.kube/config or in-cluster"
    )
    context: str | None = Field(None, description="kubeconfig context")
    namespace: str | None = Field(
        None, description="watch only this namespace, or these (comma-separated) (default: all)"
    )

    # Where every server of the process listens (port 0: a free one). In a pod the API and the
    # repository must be reachable through the `streams-api` Service, hence all interfaces.
    bind_address: str = Field("0.0.0.0", description="address every server listens on")
    health_port: int = Field(8081, ge=0, le=65535, description="/healthz and /readyz")
    metrics_port: int = Field(8080, ge=0, le=65535, description="/metrics (may share the health port)")
    # The runtime contract's INSTANCE_API_PORT and REPOSITORY_PORT (k8s imports nothing of ours;
    # tests/test_api_contract.py holds them equal).
    api_port: int = Field(10000, ge=0, le=65535, description="the instance operator's REST API")
    repository_port: int = Field(
        6379, ge=0, le=65535, description="the instance operator's bundle repository"
    )

    leader_election: bool = True
    lease_name: str = "streams-k8s-controller"
    lease_namespace: str | None = Field(
        None, description="default: the pod's namespace, --namespace or 'default'"
    )
    identity: str = Field(default_factory=_default_identity)
    lease_duration: float = Field(15.0, gt=0)
    renew_deadline: float = Field(10.0, gt=0)
    retry_period: float = Field(2.0, gt=0)

    qps: float = Field(50.0, gt=0)
    burst: int = Field(100, ge=1)
    max_concurrency: int = Field(32, ge=1)
    request_timeout: float = Field(30.0, gt=0)

    page_size: int = Field(500, ge=0)
    # Freshness (README "Health"): the server ends each watch within 2x watch_timeout, so a watch
    # silent for inactivity_timeout (events, bookmarks and that end all missing) is stalled: it is
    # cut and the cache relisted. Liveness fails on a watch silent past its budget; past the
    # readiness budget it is only a warning (the caches still serve the PEs: `Manager.readiness`).
    watch_timeout: float = Field(5.0, gt=0, description="minimum server timeoutSeconds (randomised up to 2x)")
    inactivity_timeout: float = Field(
        15.0, gt=0, description="a watch silent this long is stalled: reconnect and relist"
    )
    watch_ready_budget: float = Field(
        30.0, gt=0, description="a watch silent longer is a warning of the health answers"
    )
    watch_stale_budget: float = Field(90.0, gt=0, description="liveness fails when a watch is silent longer")
    api_error_budget: float = Field(
        0.2, gt=0, le=1, description="the API server counts as failing when this share of requests failed"
    )
    api_error_window: float = Field(60.0, gt=0, description="seconds over which API failures are counted")
    api_error_min_requests: int = Field(
        20, ge=1, description="requests in the window before the share counts"
    )
    loop_lag_budget: float = Field(5.0, gt=0)
    backoff_initial: float = Field(0.8, gt=0)
    backoff_max: float = Field(30.0, gt=0)
    backoff_reset: float = Field(120.0, gt=0)

    cache_sync_timeout: float = Field(120.0, gt=0)
    ready_requires_leader: bool = Field(False, description="standby replicas report not ready")
    shutdown_grace: float = Field(30.0, ge=0)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "text"] = "json"

    @field_validator("namespace")
    @classmethod
    def _check_namespaces(cls, value: str | None) -> str | None:
        for name in value.split(",") if value else ():
            if not _NAMESPACE.match(name):
                raise ValueError(f"{name!r} is not a namespace name (comma-separated names, no spaces)")
        return value

    @model_validator(mode="after")
    def _check_lease_timing(self) -> Self:
        if not self.lease_duration > self.renew_deadline > self.retry_period:
            raise ValueError("lease_duration > renew_deadline > retry_period is required")
        return self

    def watched_namespaces(self) -> tuple[str, ...]:
        """The namespaces the controllers watch, each once; empty: every namespace."""
        return tuple(dict.fromkeys(self.namespace.split(","))) if self.namespace else ()

    def watch_scope(self) -> str | tuple[str, ...] | None:
        """What an informer lists and watches: one namespace, several, or (None) every one."""
        watched = self.watched_namespaces()
        return None if not watched else watched[0] if len(watched) == 1 else watched

    def effective_lease_namespace(self) -> str:
        if self.lease_namespace:
            return self.lease_namespace
        pod_namespace = os.environ.get("POD_NAMESPACE")
        return pod_namespace or next(iter(self.watched_namespaces()), "default")
