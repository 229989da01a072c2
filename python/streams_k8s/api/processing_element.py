"""ProcessingElement: one process of a running job, and the per-job template of its settings."""

from enum import StrEnum
from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, model_validator

from streams_k8s.api.base import (
    CelRule,
    PrinterColumn,
    Resource,
    ResourceRequirements,
    Status,
    WireModel,
)
from streams_k8s.api.spec_values import DEFAULT_PE_REQUESTS


class ImagePullPolicy(StrEnum):
    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


class BuildType(StrEnum):
    RELEASE = "release"
    DEBUG = "debug"


class TransportSecurityType(StrEnum):
    NONE = "none"
    TLS_V1_2 = "TLSv1.2"


class TraceLevel(StrEnum):
    OFF = "OFF"
    ERROR = "ERROR"
    WARN = "WARN"
    INFO = "INFO"
    DEBUG = "DEBUG"
    TRACE = "TRACE"


class Connectivity(StrEnum):
    FULL = "Full"
    PARTIAL = "Partial"
    NONE = "None"


class VolumeClaim(WireModel):
    """A PersistentVolumeClaim and an optional sub-path inside it."""

    name: Annotated[str, Field(min_length=1)]
    sub_path: str | None = None


class FileSystemCheckpoint(WireModel):
    path: Annotated[str, Field(min_length=1)] = "/checkpoint"
    volume_claim: VolumeClaim | None = None


class RedisCheckpoint(WireModel):
    service: Annotated[str, Field(min_length=1)]
    replica_count: Annotated[int, Field(ge=0)] | None = None
    shard_count: Annotated[int, Field(ge=1)] | None = None
    restricted_property: str | None = None
    shuffle: bool = False


class CheckpointRepository(WireModel):
    """Where consistent-region checkpoints go: a file system or a redis service, not both."""

    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule="!(has(self.fileSystem) && has(self.redis))",
            message="checkpointRepository: fileSystem and redis are mutually exclusive",
        ),
    )

    file_system: FileSystemCheckpoint | None = None
    redis: RedisCheckpoint | None = None

    @model_validator(mode="after")
    def _one_store(self) -> Self:
        if self.file_system is not None and self.redis is not None:
            raise ValueError("checkpointRepository: fileSystem and redis are mutually exclusive")
        return self


def _default_resources() -> ResourceRequirements:
    return ResourceRequirements(requests=dict(DEFAULT_PE_REQUESTS))


class ProcessingElementTemplate(WireModel):
    """PE settings given once per job in spec.processingElement; every PE of the job inherits them."""

    build_type: BuildType | None = None
    image: str | None = Field(None, description="Full PE image; overrides the registry/buildType default.")
    image_pull_policy: ImagePullPolicy | None = Field(
        None, description="Unset: inherited from the Job's imagePullPolicy."
    )
    image_pull_secret: str | None = None
    transport_security_type: TransportSecurityType = TransportSecurityType.NONE
    resources: ResourceRequirements = Field(default_factory=_default_resources)
    allow_ptrace: bool = False
    run_with_valgrind: bool = Field(False, description="Implies buildType debug and ptrace capabilities.")
    app_trace_level: TraceLevel | None = None
    runtime_trace_level: TraceLevel = TraceLevel.INFO
    delete_failed_pod: bool = True
    restart_completed_pod: bool = False
    restart_deleted_pod: bool = False
    restart_failed_pod: bool | None = Field(None, description="Unset: the PE's SPL restartable flag.")
    initial_probe_delay_in_seconds: Annotated[int, Field(ge=0)] = 30
    probe_failure_threshold: Annotated[int, Field(ge=1)] = 1
    probe_interval_in_seconds: Annotated[int, Field(ge=1)] = 10
    data_path: str | None = None
    data_volume_claim: VolumeClaim | None = Field(None, description="Mounted at /data; wins over dataPath.")
    checkpoint_repository: CheckpointRepository | None = None
    app_properties_secret: str | None = None
    restricted_properties_secret: str | None = None

    @property
    def effective_build_type(self) -> BuildType | None:
        """valgrind needs the debug image."""
        return BuildType.DEBUG if self.run_with_valgrind else self.build_type

    @property
    def needs_ptrace(self) -> bool:
        return self.allow_ptrace or self.run_with_valgrind


class PoolLocation(WireModel):
    pool_index: Annotated[int, Field(ge=0)]
    inpool_index: Annotated[int, Field(ge=0)] | None = None


class Placement(WireModel):
    """Host constraints of a PE, derived from the SPL placement config of its operators."""

    host: str | None = None
    co_locations: list[str] = Field(default_factory=list)
    ex_locations: list[str] = Field(default_factory=list)
    isolation: str | None = Field(None, description="Operator of this PE that asked for hostIsolation.")
    isolation_labels: list[str] = Field(
        default_factory=list, description="Host-isolated operators of the job's other PEs."
    )
    host_pool_location: PoolLocation | None = None


class ProcessingElementSpec(ProcessingElementTemplate):
    """What the controller wants this PE to be: the template plus the fusion result."""

    id: Annotated[int, Field(ge=0)]
    content_id: str | None = Field(None, description="SHA-256 hex of the PE's AADL.")
    sab_name: str | None = None
    operators: list[str] = Field(default_factory=list)
    regions: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)
    placement: Placement = Field(default_factory=Placement)
    input_ports: Annotated[int, Field(ge=0)] = Field(
        0, description="Input port count: the pod's ports sys-0 ... (TCP 10000 + port id)."
    )
    restartable: bool = Field(
        True, description="SPL restartable flag of its operators; restartFailedPod's default."
    )
    suspended: bool = Field(False, description="The job is suspended: the PE has no pod.")
    restart_nonce: str | None = Field(
        None, description="Any change restarts this PE's pod (launch count + 1)."
    )
    job_restart_nonce: str | None = Field(None, description="The Job's restartNonce (it restarts every PE).")


class ProcessingElementStatus(Status):
    launch_count: Annotated[int, Field(ge=0)] = 0
    connectivity: Connectivity = Connectivity.NONE
    pod_name: str | None = None
    node_name: str | None = None
    phase: str | None = Field(None, description="Phase of the PE's current pod.")


class ProcessingElement(Resource):
    kind_name: ClassVar[str] = "ProcessingElement"
    plural: ClassVar[str] = "streamspes"
    singular: ClassVar[str] = "streamspe"
    short_names: ClassVar[tuple[str, ...]] = ("stp",)
    description: ClassVar[str] = "A processing element: operators fused into one pod."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Connectivity", type="string", json_path=".status.connectivity"),
        PrinterColumn(name="Launch", type="integer", json_path=".status.launchCount"),
        PrinterColumn(name="Pod", type="string", json_path=".status.podName"),
        PrinterColumn(name="Node", type="string", json_path=".status.nodeName"),
        PrinterColumn(
            name="Phase",
            type="string",
            json_path=".status.phase",
            description="Phase of the PE's current pod.",
        ),
    )

    kind: Literal["ProcessingElement"] = "ProcessingElement"
    spec: ProcessingElementSpec
    status: ProcessingElementStatus | None = None
