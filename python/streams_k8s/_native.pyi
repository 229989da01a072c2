"""Sans-IO native core (Rust, PyO3)."""

import collections.abc
import typing

__all__ = [
    "CrBatch",
    "CrEvent",
    "CrInvalidRegion",
    "CrRegion",
    "CrRejected",
    "CrStep",
    "FusionError",
    "FusionNode",
    "FusionNotice",
    "NameTableIndex",
    "PropertiesError",
    "__version__",
    "automatic_pe_count",
    "cr_gauge_names",
    "fuse",
    "parse_properties",
    "place_vreplicas",
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
