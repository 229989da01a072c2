"""The logical model as frozen dataclasses: the reference the native model is held to.

This was ``streams_k8s.app.model`` before the model moved to the native core; the differential
tests compare the native model with it field by field (names, values and types). The enums are
the package's own (the native model uses them too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streams_k8s.app.model import OperatorKind, SplitterKind


@dataclass(frozen=True, slots=True)
class PortRef:
    """One end of a connection: operator (primitive or composite) index and port index."""

    oper_index: int
    port_index: int
    kind: str  # "input" | "output": the kind of the referenced port


@dataclass(frozen=True, slots=True)
class ThreadedPort:
    congestion_policy: str
    queue_size: int | None


@dataclass(frozen=True, slots=True)
class InputPort:
    index: int
    name: str
    tuple_type_index: int
    encoding: str
    transport: str
    is_mutable: bool
    is_control: bool
    connections: tuple[PortRef, ...]
    threaded_port: ThreadedPort | None = None


@dataclass(frozen=True, slots=True)
class OutputPort:
    index: int
    name: str
    stream_name: str
    tuple_type_index: int
    encoding: str
    transport: str
    is_mutable: bool
    viewable: bool
    connections: tuple[PortRef, ...]


@dataclass(frozen=True, slots=True)
class HostPlacement:
    """SPL ``placement`` host constraints (ADL ``resources``)."""

    host: str | None = None
    pool_index: int | None = None
    inpool_index: int | None = None
    colocations: tuple[str, ...] = ()
    exlocations: tuple[str, ...] = ()
    isolation: bool = False


@dataclass(frozen=True, slots=True)
class Partitions:
    """SPL partition (fusion) constraints (ADL ``partitions``)."""

    colocations: tuple[str, ...] = ()
    exlocations: tuple[str, ...] = ()
    isolation: bool = False


@dataclass(frozen=True, slots=True)
class Annotation:
    tag: str
    values: tuple[tuple[str, str, str], ...]  # (key, type, value)
    internal: bool = False

    def get(self, key: str) -> str | None:
        return next((v for k, _, v in self.values if k == key), None)


@dataclass(frozen=True, slots=True)
class Checkpointing:
    policy: str
    period: float | None


@dataclass(frozen=True, slots=True)
class RuntimeConstant:
    name: str
    value: str
    submission_time_value_index: int | None = None
    default_value: str | None = None


@dataclass(frozen=True, slots=True)
class AdlImport:
    """Either name based (application + stream) or property based (subscription)."""

    application_name: str | None = None
    stream_name: str | None = None
    subscription: str | None = None
    application_scope: str | None = None
    filter: str | None = None


@dataclass(frozen=True, slots=True)
class ExportProperty:
    name: str
    type: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AdlExport:
    stream_name: str | None = None
    properties: tuple[ExportProperty, ...] = ()
    allow_filter: bool | None = None
    congestion_policy: str | None = None


@dataclass(frozen=True, slots=True)
class Operator:
    index: int
    name: str
    kind: OperatorKind
    definition_index: int
    composite: int  # index of the enclosing composite instance
    input_ports: tuple[InputPort, ...] = ()
    output_ports: tuple[OutputPort, ...] = ()
    restartable: bool = True
    relocatable: bool = True
    optimized: bool = True
    single_threaded_on_outputs: bool = True
    placement: HostPlacement = field(default_factory=HostPlacement)
    partitions: Partitions = field(default_factory=Partitions)
    checkpointing: Checkpointing | None = None
    jvm_arguments: tuple[str, ...] | None = None  # present only on Java operators
    annotations: tuple[Annotation, ...] = ()
    runtime_constants: tuple[RuntimeConstant, ...] = ()
    env_vars: tuple[tuple[str, str], ...] = ()
    wrapper: str = "none"
    shared_object_class: str = ""
    shared_object_uri: str = ""
    tracing_level: str | None = None
    import_spec: AdlImport | None = None
    export_spec: AdlExport | None = None

    def annotation(self, tag: str) -> Annotation | None:
        return next((a for a in self.annotations if a.tag == tag), None)

    def input_port(self, index: int) -> InputPort | None:
        return next((p for p in self.input_ports if p.index == index), None)

    def output_port(self, index: int) -> OutputPort | None:
        return next((p for p in self.output_ports if p.index == index), None)


@dataclass(frozen=True, slots=True)
class CompositePort:
    index: int
    incoming: tuple[PortRef, ...]
    outgoing: tuple[PortRef, ...]


@dataclass(frozen=True, slots=True)
class Composite:
    index: int
    name: str
    definition_index: int
    kind: str
    parent: int | None
    input_ports: tuple[CompositePort, ...] = ()
    output_ports: tuple[CompositePort, ...] = ()
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True, slots=True)
class AdlHostPool:
    index: int
    name: str
    exclusive: bool
    size: int | None = None
    hosts: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Splitter:
    iport_index: int
    kind: SplitterKind
    attributes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AdlParallelRegion:
    index: int
    name: str
    oper_index: int  # the parallel operator (primitive or composite)
    splitters: tuple[Splitter, ...]
    constant_width: int | None = None
    width_value_index: int | None = None  # submission-time value giving the width
    replicate_host_tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SubmissionTimeValue:
    index: int
    name: str
    composite_name: str
    kind: str  # named | namedList
    required: bool
    default_value: str | None = None


@dataclass(frozen=True, slots=True)
class TupleType:
    index: int
    attributes: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class OperatorDefinition:
    index: int
    kind: str
    runtime_type: str
    toolkit_index: int
    custom_metric_indices: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CustomMetric:
    index: int
    name: str
    kind: str
    description: str


@dataclass(frozen=True, slots=True)
class ToolkitRef:
    index: int
    name: str
    version: str


@dataclass(frozen=True, slots=True)
class AdlConsistentRegion:
    """A ``@consistent`` region as declared on a composite (``consistentRegion`` annotation);
    None where the annotation leaves a setting out (the plan applies the defaults)."""

    index: int
    trigger: str
    period: float | None
    drain_timeout: float | None
    reset_timeout: float | None
    max_consecutive_reset_attempts: int | None


@dataclass(frozen=True, slots=True)
class Application:
    name: str
    scope: str
    version: str
    build_id: str
    bundle: str
    product_version: str
    application_directory: str
    output_directory: str
    data_directory: str | None
    checkpoint_directory: str | None
    avoid_runtime_yield: str
    adl_version: str  # "v4200" | "v4000"
    main_composite: int
    operators: dict[int, Operator]
    composites: dict[int, Composite]
    hostpools: tuple[AdlHostPool, ...]
    tuple_types: tuple[TupleType, ...]
    definitions: tuple[OperatorDefinition, ...]
    composite_kinds: dict[int, str]
    toolkits: tuple[ToolkitRef, ...]
    custom_metrics: tuple[CustomMetric, ...]
    parallel_regions: tuple[AdlParallelRegion, ...]
    submission_time_values: tuple[SubmissionTimeValue, ...]
    consistent_regions: tuple[AdlConsistentRegion, ...]

    def hostpool(self, index: int) -> AdlHostPool | None:
        return next((p for p in self.hostpools if p.index == index), None)
