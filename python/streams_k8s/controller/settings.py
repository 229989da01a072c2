"""The instance operator's settings beyond the runtime's (`k8s.settings.RuntimeSettings`: `run --help`).

From the environment (an empty variable counts as unset where the default is unset):

| variable | default | use |
|---|---|---|
| `STREAMS_K8S_BUNDLE_CACHE` | `<tmp>/streams-k8s-bundles` | bundle cache directory |
| `POD_NAME`, `POD_NAMESPACE` | unset | this replica's pod (downward API); its image is the coordinators' |
| `STREAMS_K8S_COORDINATOR_MODE` | `dedicated` | mode recorded on new jobs' CROs (`dedicated` or `shared`) |
| `STREAMS_K8S_COORDINATOR_IMAGE` | the operator's own image | coordinator image (`controller.coordinators`) |
| `STREAMS_K8S_RETRY_DELAY` | 10 | seconds to a failed submission's first retry (doubling) |
| `STREAMS_K8S_PE_NOTIFICATION_HOST` | unset | where PE subscription datagrams go (not `<job>-<pe>.<ns>`) |
| `STREAMS_K8S_PE_NOTIFICATION_PORT` | 10000 | their UDP port |
| `STREAMS_K8S_FLOW_INTERVAL` | 5 | seconds between readings of the PE metrics (0: off) |
| `STREAMS_K8S_FLOW_POD_NETWORK` | unset | `FROM=TO`: PE pod addresses of FROM read at TO (sandbox) |
| `STREAMS_K8S_FLOW_PROMETHEUS` | unset | a Prometheus URL to query for the PE metrics instead |
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams_k8s import __version__
from streams_k8s.api.consistent_region import CoordinatorMode
from streams_k8s.api.contract import NOTIFICATIONS_PORT
from streams_k8s.controller.flow.scraper import DEFAULT_INTERVAL
from streams_k8s.controller.flow.targets import Address, remapped
from streams_k8s.controller.jobs.submission import RETRY_FIRST_DELAY

PREFIX = "STREAMS_K8S_"


class OperatorSettingError(ValueError):
    """An operator setting that cannot be used; the message names the variable and its value."""


class OperatorSettings(BaseSettings):
    """The settings of the table above (see the module docs), read once at the operator's start."""

    # Other STREAMS_K8S_* variables are the runtime's.
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    bundle_cache: Path | None = None
    pod_name: str | None = Field(None, validation_alias="POD_NAME")
    pod_namespace: str | None = Field(None, validation_alias="POD_NAMESPACE")
    coordinator_mode: CoordinatorMode = CoordinatorMode.DEDICATED
    coordinator_image: str | None = None
    retry_delay: float = RETRY_FIRST_DELAY
    pe_notification_host: str | None = None
    pe_notification_port: int = NOTIFICATIONS_PORT
    flow_interval: float = Field(DEFAULT_INTERVAL, ge=0)
    flow_pod_network: str | None = None
    flow_prometheus: str | None = None

    @field_validator(
        "bundle_cache",
        "pod_name",
        "pod_namespace",
        "coordinator_image",
        "pe_notification_host",
        "flow_pod_network",
        "flow_prometheus",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("flow_pod_network")
    @classmethod
    def _two_networks(cls, value: str | None) -> str | None:
        if value is not None:
            remapped(value)  # refused at start, with what is wrong
        return value

    def flow_address(self) -> Address:
        """Where the operator reads a PE pod's metrics, by the pod's address."""
        return remapped(self.flow_pod_network) if self.flow_pod_network else (lambda ip: ip)

    @classmethod
    def from_environment(cls) -> OperatorSettings:
        """The settings in the environment; `OperatorSettingError` naming the first bad variable."""
        try:
            return cls()
        except ValidationError as err:
            first = err.errors()[0]
            field = str(first["loc"][0])  # a field's name, or the variable that a validation alias names
            variable = f"{PREFIX}{field.upper()}" if field in cls.model_fields else field
            raise OperatorSettingError(f"{variable}={first['input']!r}: {first['msg']}") from None

    def bundle_cache_dir(self) -> Path:
        return self.bundle_cache or Path(tempfile.gettempdir()) / "streams-k8s-bundles"

    def coordinator_image_or(self, operator_image: str | None) -> str:
        """The coordinators' image: the setting, else the image the operator runs (if known), else
        the tag deploy/Dockerfile's build documents."""
        return self.coordinator_image or operator_image or f"streams-k8s:{__version__.split('+', 1)[0]}"
