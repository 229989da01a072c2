"""Sans-IO native core (Rust, PyO3)."""

import collections.abc
import typing

from streams_k8s.app.model import OperatorKind, SplitterKind

__all__ = [
    "AadlError",
    "AdlConsistentRegion",
    "AdlExport",
    "AdlHostPool",
    "AdlImport",
    "AdlParallelRegion",
    "AdlParseError",
    "Annotation",
    "Application",
    "Checkpointing",
    "Composite",
    "CompositePort",
    "CrBatch",
    "CrEvent",
    "CrInvalidRegion",
    "CrRegion",
    "CrRejected",
    "CrStep",
    "CustomMetric",
    "ExportProperty",
    "FusionError",
    "FusionNode",
    "FusionNotice",
    "HostPlacement",
    "InputPort",
    "NameTableIndex",
    "Operator",
    "OperatorDefinition",
    "OutputPort",
    "Partitions",
    "PortRef",
    "PropertiesError",
    "RuntimeConstant",
    "Splitter",
    "SubmissionTimeValue",
    "ThreadedPort",
    "ToolkitRef",
    "TupleType",
    "__version__",
    "automatic_pe_count",
    "cr_gauge_names",
    "fuse",
    "parse_adl",
    "parse_properties",
    "place_vreplicas",
    "render_aadl",
]

__version__: str

class PropertiesError(ValueError):
    """Malformed Java-properties text; the message joins every problem ("line N: reason; ...")."""

    problems: list[tuple[int, str]]
    """Every problem as (line number, reason), in line order."""

def parse_properties(text: str, *, strict: bool = True) -> dict[str, str]:
    """Parse Java-properties text into a dict in file order.

    Strict mode (the default) also rejects keys without a separator and repeated keys.
    Raises PropertiesError listing every problem with its line number.
    """

@typing.final
class NameTableIndex:
    """The per-job name table kept native: operator port (J, O, P) → PE port (E, I, J)."""

    def __new__(cls, entries: list[tuple[int, int, int, int, int, int]]) -> NameTableIndex: ...
    @staticmethod
    def parse(text: str) -> NameTableIndex:
        """Parse a name table; raises PropertiesError listing every bad line."""
    def get(self, job: int, operator: int, port: int) -> tuple[int, int, int] | None: ...
    def entries(self) -> list[tuple[int, int, int, int, int, int]]: ...
    def __len__(self) -> int: ...

# -- scheduler (streams_k8s.scheduler) --

def place_vreplicas(
    ordinals: list[int],
    free: list[int],
    node: list[int],
    zone: list[int],
    num_nodes: int,
    num_zones: int,
    want: int,
    filters: list[tuple[str, int]],
    priorities: list[tuple[str, int]],
) -> tuple[list[tuple[int, int]], int]:
    """Place up to `want` vreplicas of a vpod holding none yet over the schedulable pods.

    Pods are given as parallel lists (ascending ordinals, node and zone index) and `free`
    holds the free slots by ordinal;
    `filters` are (name, MaxSkew or NumPartitions), `priorities` (name, weight), built-in
    plugins only. Returns ([(ordinal, vreplicas)], vreplicas left unplaced).
    """

# ---- consistent-region FSM (rust/cr_fsm, rust/python/cr_fsm.rs) ----

class CrRejected(ValueError):
    """An event the region refused; the region is unchanged. The message says why in words."""

    kind: str
    """The rejection kind: unknownPe, seqIdMismatch, notExpected, staleTimer, ..."""

class CrInvalidRegion(ValueError):
    """A region description or persisted state that cannot be run; the message is f"{field} {problem}"."""

    field: str
    """The input at fault, in the FSM's names: a CrRegion keyword or a key of CrRegion.status()."""
    problem: str
    """What is wrong with it, worded to follow the field's name."""

@typing.final
class CrEvent:
    """One FSM input. Immutable; build it with the static constructors."""

    @staticmethod
    def health(healthy: bool, clean_start: bool) -> CrEvent: ...
    @staticmethod
    def checkpoint(pe: int, seq_id: int) -> CrEvent: ...
    @staticmethod
    def blocking_checkpoint(pe: int, seq_id: int) -> CrEvent: ...
    @staticmethod
    def reset_done(pe: int, seq_id: int, reset_attempt: int) -> CrEvent: ...
    @staticmethod
    def drain(operator: str, seq_id: int) -> CrEvent: ...
    @staticmethod
    def reset(force: bool) -> CrEvent: ...
    @staticmethod
    def timer(timer: str, timer_seq_id: int) -> CrEvent:
        """Raises ValueError for a name other than DrainPeriod, DrainTimeout, ResetTimeout."""
    @staticmethod
    def restarted() -> CrEvent: ...
    @staticmethod
    def checkpoint_now() -> CrEvent:
        """Drain and checkpoint now (or as soon as the region is PROCESSING), outside the period."""
    @staticmethod
    def hold_drains(held: bool) -> CrEvent:
        """Hold (or release) the drains the period triggers."""
    @staticmethod
    def start(clean: bool) -> CrEvent:
        """PEs are about to be replaced: when next healthy, reset to the last checkpoint or start clean."""
    @property
    def name(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]

@typing.final
class CrStep:
    """The actions of one event: refused (`rejected`/`error` set) or accepted."""

    @property
    def rejected(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def persist(self) -> bool: ...
    @property
    def clear_board(self) -> bool: ...
    @property
    def cancel_timers(self) -> bool: ...
    @property
    def arm(self) -> tuple[str, int, int] | None:
        """(timer, delay_ms, timer_seq_id)."""
    @property
    def notification(self) -> tuple[str, str] | None:
        """(type, message)."""
    @property
    def gauges(self) -> list[float] | None: ...

@typing.final
class CrBatch:
    """The results of `CrRegion.step_many`, one per event."""

    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> CrStep: ...
    @property
    def rejected(self) -> int: ...
    @property
    def persist(self) -> bool: ...

@typing.final
class CrRegion:
    """One consistent region and its FSM; `step` mutates it in place."""

    def __new__(
        cls,
        *,
        region_index: int,
        trigger: str,
        period: float,
        drain_timeout: float,
        reset_timeout: float,
        max_consecutive_reset_attempts: int,
        pes_in_region: collections.abc.Sequence[int],
        operators_to_start_region_map: dict[str, bool],
        operators_to_trigger_map: dict[str, bool],
        status: dict[str, typing.Any] | None = None,
    ) -> CrRegion:
        """``status``: persisted state keyed as ``status()`` returns it (missing keys: initial values)."""
    @property
    def region_index(self) -> int: ...
    @property
    def pes(self) -> list[int]: ...
    @property
    def state(self) -> str: ...
    @property
    def current_timer_seq_id(self) -> int: ...
    @property
    def drains_held(self) -> bool: ...
    def status(self) -> dict[str, typing.Any]:
        """The dynamic state keyed by the FSM's own names.

        state, region_healthy, clean_start, must_reset, healthy_first_time, current_reset_attempt,
        current_max_reset_attempts, current_seq_id, last_completed_seq_id, pending_seq_id,
        to_retire_seq_id, current_timer_seq_id, completion ({pe id: slot}),
        last_consistent_state_time_ms, last_reset_time_ms, average_drain_time_ms,
        average_reset_time_ms, last_completed_drain_seq_id, last_completed_reset_seq_id,
        drain_start_time_ms, reset_start_time_ms (epoch ms or None for never), drain_times_ms and
        reset_times_ms (the recent durations), checkpoint_requested, drains_held, start_clean.
        """
    def gauges(self) -> list[float]: ...
    def step(self, event: CrEvent, now_ms: int) -> CrStep:
        """Apply one event; raises CrRejected (region unchanged) if it is refused."""
    def step_many(self, events: collections.abc.Iterable[CrEvent], now_ms: int) -> CrBatch:
        """Apply events in order at one instant; refusals are recorded, never raised."""
    def copy(self) -> CrRegion: ...

def cr_gauge_names() -> list[str]:
    """Prometheus names of the eight gauges, in the order of CrStep.gauges."""

# --- fusion (application pipeline) ---

class FusionError(ValueError):
    """Operators that must share a PE cannot (raised by ``fuse``)."""

    constraint: str
    """The constraint that keeps them apart (partitionExlocation, host placement, ...)."""
    nodes: tuple[int, int]
    """The positions, in ``fuse``'s ``nodes``, of two nodes that must share a PE but cannot."""

@typing.final
class FusionNode:
    """One topology node as ``fuse`` takes it; every string constraint interned into an int."""

    def __new__(
        cls,
        *,
        colocations: collections.abc.Sequence[int],
        exlocations: collections.abc.Sequence[int],
        isolated: bool,
        host_colocations: collections.abc.Sequence[int],
        host_exlocations: collections.abc.Sequence[int],
        host_isolated: bool,
        host_key: int,
        consistent_region: int | None,
        restartable: bool,
        relocatable: bool,
        jvm: int | None,
        channel: int | None,
    ) -> FusionNode: ...
    @property
    def colocations(self) -> list[int]:
        """Partition colocation ids: nodes sharing one are always fused together."""
    @property
    def exlocations(self) -> list[int]:
        """Partition exlocation ids: at most one node per id in a PE."""
    @property
    def isolated(self) -> bool:
        """Partition isolation: the node's unit is alone in its PE."""
    @property
    def host_colocations(self) -> list[int]: ...
    @property
    def host_exlocations(self) -> list[int]: ...
    @property
    def host_isolated(self) -> bool: ...
    @property
    def host_key(self) -> int:
        """The resolved host spec (host, pool, in-pool index); one per PE."""
    @property
    def consistent_region(self) -> int | None: ...
    @property
    def restartable(self) -> bool: ...
    @property
    def relocatable(self) -> bool: ...
    @property
    def jvm(self) -> int | None:
        """The JVM argument set of a Java operator, None for others."""
    @property
    def channel(self) -> int | None:
        """The parallel channel (innermost region and channel), None outside regions."""

@typing.final
class FusionNotice:
    """Why ``fuse`` made a PE count other than the one asked for."""

    @property
    def kind(self) -> typing.Literal["more", "fewer"]:
        """``more``: a constraint forced extra PEs; ``fewer``: fewer fusable units than asked."""
    @property
    def asked(self) -> int: ...
    @property
    def got(self) -> int: ...
    @property
    def constraint(self) -> str | None:
        """The constraint that forced more PEs (``more`` only)."""
    @property
    def nodes(self) -> tuple[int, int] | None:
        """The two nodes it kept apart, one node twice when isolated (``more`` only)."""

def fuse(
    nodes: collections.abc.Sequence[FusionNode],
    edges: list[tuple[int, int]],
    *,
    manual: int | None = None,
    channel_policy: str = "noChannelInfluence",
    previous: list[int | None] | None = None,
) -> tuple[list[list[int]], list[FusionNotice]]:
    """Partition topology nodes into PEs; ``manual=None`` is legacy (one PE per unit).

    ``previous`` (re-fusion): the earlier PE of each node, None for new nodes; units that stay
    whole keep their PE and only the others are placed.

    Returns (PEs as sorted node positions, notices). Raises FusionError when two nodes that must
    share a PE cannot.
    """

def automatic_pe_count(
    operators: int,
    min_threads: int,
    max_threads: int,
    cpu_request_millis: int,
    cpu_limit_millis: int | None = None,
    nodes: int | None = None,
) -> int:
    """The automatic PE count: clamp(ceil(min_threads/limit), 1, ceil(max_threads/request)), ≤ nodes."""

# ---- ADL parse and the logical model (rust/adl, rust/python/adl.rs, adl_model.rs) ----

class AdlParseError(ValueError):
    """An ADL that is not a usable application description (``streams_k8s.app.adl`` raises AdlError)."""

    line: int | None
    """The line of the element at fault; None when the document as a whole is refused."""
    reason: str
    """What is wrong, without the line or document prefix of the message."""

def parse_adl(
    data: bytes,
    *,
    what: str,
    max_bytes: int,
    operator_kind: type[OperatorKind],
    splitter_kind: type[SplitterKind],
) -> Application:
    """Parse untrusted ADL bytes (at most ``max_bytes``, no DOCTYPE) into the model.

    ``what`` names the document in messages; the enum types give the kinds' members.
    Raises AdlParseError.
    """

@typing.final
class PortRef:
    """One end of a connection: operator (primitive or composite) index and port index."""

    @property
    def oper_index(self) -> int: ...
    @property
    def port_index(self) -> int: ...
    @property
    def kind(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class ThreadedPort:
    @property
    def congestion_policy(self) -> str: ...
    @property
    def queue_size(self) -> int | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class InputPort:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def tuple_type_index(self) -> int: ...
    @property
    def encoding(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def is_mutable(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def connections(self) -> tuple[PortRef, ...]: ...
    @property
    def threaded_port(self) -> ThreadedPort | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class OutputPort:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def stream_name(self) -> str: ...
    @property
    def tuple_type_index(self) -> int: ...
    @property
    def encoding(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def is_mutable(self) -> bool: ...
    @property
    def viewable(self) -> bool: ...
    @property
    def connections(self) -> tuple[PortRef, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class HostPlacement:
    """SPL ``placement`` host constraints (ADL ``resources``)."""

    def __new__(
        cls,
        host: str | None = None,
        pool_index: int | None = None,
        inpool_index: int | None = None,
        colocations: tuple[str, ...] = (),
        exlocations: tuple[str, ...] = (),
        isolation: bool = False,
    ) -> HostPlacement: ...
    @property
    def host(self) -> str | None: ...
    @property
    def pool_index(self) -> int | None: ...
    @property
    def inpool_index(self) -> int | None: ...
    @property
    def colocations(self) -> tuple[str, ...]: ...
    @property
    def exlocations(self) -> tuple[str, ...]: ...
    @property
    def isolation(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Partitions:
    """SPL partition (fusion) constraints (ADL ``partitions``)."""

    def __new__(
        cls, colocations: tuple[str, ...] = (), exlocations: tuple[str, ...] = (), isolation: bool = False
    ) -> Partitions: ...
    @property
    def colocations(self) -> tuple[str, ...]: ...
    @property
    def exlocations(self) -> tuple[str, ...]: ...
    @property
    def isolation(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Annotation:
    """An annotation; ``values`` are (key, type, value)."""

    def get(self, key: str) -> str | None:
        """The first value under ``key``."""
    @property
    def tag(self) -> str: ...
    @property
    def values(self) -> tuple[tuple[str, str, str], ...]: ...
    @property
    def internal(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Checkpointing:
    @property
    def policy(self) -> str: ...
    @property
    def period(self) -> float | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class RuntimeConstant:
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def submission_time_value_index(self) -> int | None: ...
    @property
    def default_value(self) -> str | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class AdlImport:
    """Either name based (application + stream) or property based (subscription)."""

    @property
    def application_name(self) -> str | None: ...
    @property
    def stream_name(self) -> str | None: ...
    @property
    def subscription(self) -> str | None: ...
    @property
    def application_scope(self) -> str | None: ...
    @property
    def filter(self) -> str | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class ExportProperty:
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def values(self) -> tuple[str, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class AdlExport:
    @property
    def stream_name(self) -> str | None: ...
    @property
    def properties(self) -> tuple[ExportProperty, ...]: ...
    @property
    def allow_filter(self) -> bool | None: ...
    @property
    def congestion_policy(self) -> str | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Operator:
    """A primitive operator instance."""

    def annotation(self, tag: str) -> Annotation | None: ...
    def input_port(self, index: int) -> InputPort | None: ...
    def output_port(self, index: int) -> OutputPort | None: ...
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> OperatorKind: ...
    @property
    def definition_index(self) -> int: ...
    @property
    def composite(self) -> int: ...
    @property
    def input_ports(self) -> tuple[InputPort, ...]: ...
    @property
    def output_ports(self) -> tuple[OutputPort, ...]: ...
    @property
    def restartable(self) -> bool: ...
    @property
    def relocatable(self) -> bool: ...
    @property
    def optimized(self) -> bool: ...
    @property
    def single_threaded_on_outputs(self) -> bool: ...
    @property
    def placement(self) -> HostPlacement: ...
    @property
    def partitions(self) -> Partitions: ...
    @property
    def checkpointing(self) -> Checkpointing | None: ...
    @property
    def jvm_arguments(self) -> tuple[str, ...] | None: ...
    @property
    def annotations(self) -> tuple[Annotation, ...]: ...
    @property
    def runtime_constants(self) -> tuple[RuntimeConstant, ...]: ...
    @property
    def env_vars(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def wrapper(self) -> str: ...
    @property
    def shared_object_class(self) -> str: ...
    @property
    def shared_object_uri(self) -> str: ...
    @property
    def tracing_level(self) -> str | None: ...
    @property
    def import_spec(self) -> AdlImport | None: ...
    @property
    def export_spec(self) -> AdlExport | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class CompositePort:
    @property
    def index(self) -> int: ...
    @property
    def incoming(self) -> tuple[PortRef, ...]: ...
    @property
    def outgoing(self) -> tuple[PortRef, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Composite:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def definition_index(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def parent(self) -> int | None: ...
    @property
    def input_ports(self) -> tuple[CompositePort, ...]: ...
    @property
    def output_ports(self) -> tuple[CompositePort, ...]: ...
    @property
    def annotations(self) -> tuple[Annotation, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class AdlHostPool:
    def __new__(
        cls,
        index: int,
        name: str,
        exclusive: bool,
        size: int | None = None,
        hosts: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
    ) -> AdlHostPool: ...
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def exclusive(self) -> bool: ...
    @property
    def size(self) -> int | None: ...
    @property
    def hosts(self) -> tuple[str, ...]: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Splitter:
    @property
    def iport_index(self) -> int: ...
    @property
    def kind(self) -> SplitterKind: ...
    @property
    def attributes(self) -> tuple[str, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class AdlParallelRegion:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def oper_index(self) -> int: ...
    @property
    def splitters(self) -> tuple[Splitter, ...]: ...
    @property
    def constant_width(self) -> int | None: ...
    @property
    def width_value_index(self) -> int | None: ...
    @property
    def replicate_host_tags(self) -> tuple[str, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class SubmissionTimeValue:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def composite_name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def required(self) -> bool: ...
    @property
    def default_value(self) -> str | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class TupleType:
    @property
    def index(self) -> int: ...
    @property
    def attributes(self) -> tuple[tuple[str, str], ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class OperatorDefinition:
    @property
    def index(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def runtime_type(self) -> str: ...
    @property
    def toolkit_index(self) -> int: ...
    @property
    def custom_metric_indices(self) -> tuple[int, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class CustomMetric:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def description(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class ToolkitRef:
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class AdlConsistentRegion:
    """A ``@consistent`` region as declared on a composite; None where the annotation leaves a setting out."""

    @property
    def index(self) -> int: ...
    @property
    def trigger(self) -> str: ...
    @property
    def period(self) -> float | None: ...
    @property
    def drain_timeout(self) -> float | None: ...
    @property
    def reset_timeout(self) -> float | None: ...
    @property
    def max_consecutive_reset_attempts(self) -> int | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@typing.final
class Application:
    def hostpool(self, index: int) -> AdlHostPool | None: ...
    @property
    def name(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def build_id(self) -> str: ...
    @property
    def bundle(self) -> str: ...
    @property
    def product_version(self) -> str: ...
    @property
    def application_directory(self) -> str: ...
    @property
    def output_directory(self) -> str: ...
    @property
    def data_directory(self) -> str | None: ...
    @property
    def checkpoint_directory(self) -> str | None: ...
    @property
    def avoid_runtime_yield(self) -> str: ...
    @property
    def adl_version(self) -> str: ...
    @property
    def main_composite(self) -> int: ...
    @property
    def operators(self) -> dict[int, Operator]: ...
    @property
    def composites(self) -> dict[int, Composite]: ...
    @property
    def hostpools(self) -> tuple[AdlHostPool, ...]: ...
    @property
    def tuple_types(self) -> tuple[TupleType, ...]: ...
    @property
    def definitions(self) -> tuple[OperatorDefinition, ...]: ...
    @property
    def composite_kinds(self) -> dict[int, str]: ...
    @property
    def toolkits(self) -> tuple[ToolkitRef, ...]: ...
    @property
    def custom_metrics(self) -> tuple[CustomMetric, ...]: ...
    @property
    def parallel_regions(self) -> tuple[AdlParallelRegion, ...]: ...
    @property
    def submission_time_values(self) -> tuple[SubmissionTimeValue, ...]: ...
    @property
    def consistent_regions(self) -> tuple[AdlConsistentRegion, ...]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

# --- AADL rendering (rust/aadl, rust/python/aadl.rs) ---
# What `render_aadl` reads of the plan, attribute by attribute: the plan's own objects are passed
# as they are, the model's (the classes above) and the topology's and PEs' (the protocols below).

class AadlError(ValueError):
    """A string the AADL cannot hold: XML 1.0 has no C0 control characters other than tab,
    newline and carriage return, nor U+FFFE and U+FFFF (lxml refuses the same)."""

    value: str
    """The string, as it would have been written."""

@typing.type_check_only
class _AadlChannel(typing.Protocol):
    @property
    def region(self) -> int: ...
    @property
    def local(self) -> int: ...
    @property
    def local_max(self) -> int: ...
    @property
    def global_(self) -> int: ...
    @property
    def global_max(self) -> int: ...

@typing.type_check_only
class _AadlNode(typing.Protocol):
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def operator(self) -> Operator: ...
    @property
    def channels(self) -> collections.abc.Sequence[_AadlChannel]: ...
    @property
    def placement(self) -> HostPlacement: ...
    @property
    def threading(self) -> str | None: ...
    @property
    def imports(self) -> collections.abc.Mapping[int, collections.abc.Sequence[tuple[str, int, AdlImport]]]:
        """Imported streams by input port: (Import operator name, its index, what it imports)."""

@typing.type_check_only
class _AadlSplitterStep(typing.Protocol):
    @property
    def region(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def iport(self) -> int: ...
    @property
    def channel(self) -> int: ...

@typing.type_check_only
class _AadlSplitterUse(typing.Protocol):
    @property
    def path(self) -> collections.abc.Sequence[_AadlSplitterStep]: ...

@typing.type_check_only
class _AadlEdge(typing.Protocol):
    @property
    def src(self) -> int: ...
    @property
    def src_port(self) -> int: ...
    @property
    def dst(self) -> int: ...
    @property
    def dst_port(self) -> int: ...
    @property
    def splitter(self) -> _AadlSplitterUse | None: ...

@typing.type_check_only
class _AadlTopology(typing.Protocol):
    @property
    def app(self) -> Application: ...
    @property
    def hostpools(self) -> collections.abc.Sequence[AdlHostPool]: ...
    @property
    def nodes(self) -> collections.abc.Mapping[int, _AadlNode]: ...
    @property
    def default_threading(self) -> str | None: ...
    @property
    def edges(self) -> collections.abc.Sequence[_AadlEdge]:
        """Every connection of the topology."""

@typing.type_check_only
class _AadlPeInput(typing.Protocol):
    @property
    def id(self) -> int: ...
    @property
    def node(self) -> int: ...
    @property
    def port(self) -> int: ...
    @property
    def senders(self) -> collections.abc.Sequence[tuple[int, _AadlEdge]]: ...

@typing.type_check_only
class _AadlPeOutput(typing.Protocol):
    @property
    def id(self) -> int: ...
    @property
    def node(self) -> int: ...
    @property
    def port(self) -> int: ...
    @property
    def channel(self) -> tuple[int, int] | None: ...
    @property
    def receivers(self) -> collections.abc.Sequence[tuple[int, _AadlEdge]]: ...
    @property
    def exports(self) -> collections.abc.Sequence[tuple[str, AdlExport]]: ...

@typing.type_check_only
class _AadlPe(typing.Protocol):
    @property
    def id(self) -> int: ...
    @property
    def index(self) -> int: ...
    @property
    def nodes(self) -> collections.abc.Sequence[int]: ...
    @property
    def inputs(self) -> collections.abc.Sequence[_AadlPeInput]: ...
    @property
    def outputs(self) -> collections.abc.Sequence[_AadlPeOutput]: ...

@typing.type_check_only
class _AadlPorts(typing.Protocol):
    @property
    def pe_of(self) -> dict[int, int]: ...
    @property
    def inputs(self) -> dict[tuple[int, int], tuple[int, int]]: ...
    @property
    def outputs(self) -> dict[tuple[int, int, tuple[int, int] | None], tuple[int, int]]: ...

def render_aadl(
    topology: _AadlTopology,
    pes: collections.abc.Sequence[_AadlPe],
    ports: _AadlPorts,
    *,
    job_name: str,
    job_id: int,
    given: dict[int, str],
) -> list[str]:
    """The AADL document of each of ``pes`` (PEs of ``topology``), in order, byte for byte what
    lxml writes for the same tree. ``ports``: where every node and PE port ended up; ``given``:
    submission-time value index → the value the user gave, as an SPL literal.

    Raises AadlError for a string XML cannot hold, RuntimeError for an inconsistent plan."""
