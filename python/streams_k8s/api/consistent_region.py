"""ConsistentRegion and ConsistentRegionOperator: exactly-once regions and their coordinator."""

from enum import StrEnum
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from streams_k8s.api.base import PrinterColumn, Resource, Status, WireModel
from streams_k8s.api.processing_element import ImagePullPolicy, TraceLevel
from streams_k8s.api.spec_values import (
    DRAIN_TIMEOUT,
    MAX_CONSECUTIVE_RESET_ATTEMPTS,
    RESET_TIMEOUT,
    Trigger,
)


class RegionState(StrEnum):
    """States of the consistent-region FSM (ordinal = value of the `state` metric)."""

    STARTED = "STARTED"
    PROCESSING = "PROCESSING"
    UNHEALTHY = "UNHEALTHY"
    DRAINING = "DRAINING"
    RESETTING = "RESETTING"
    MAXIMUM_RESET_ATTEMPTS_REACHED = "MAXIMUM_RESET_ATTEMPTS_REACHED"
    CHECKPOINT_PENDING = "CHECKPOINT_PENDING"


class PeCompletion(StrEnum):
    NONE = "None"
    CHECKPOINT_DONE = "CheckpointDone"
    BLOCKING_CHECKPOINT_DONE = "BlockingCheckpointDone"
    RESET_DONE = "ResetDone"


Seconds = Annotated[float, Field(gt=0)]
Nonce = Annotated[str, Field(min_length=1, max_length=253)]
# Entries kept in a region's status history (checkpoints and resets, newest last).
HISTORY_LENGTH = 20


class StartMode(StrEnum):
    """How a region starts when its PEs are replaced (an upgrade, a resume)."""

    RESET = "reset"  # to the last completed checkpoint, as after a coordinator restart
    CLEAN = "clean"  # without a checkpoint (isCleanStart)


class StartRequest(WireModel):
    nonce: Nonce
    mode: StartMode


class ConsistentRegionSpec(WireModel):
    """Static description of a region, from the application's annotations."""

    region_index: Annotated[int, Field(ge=0)]
    logical_index: Annotated[int, Field(ge=0)] | None = None
    num_start_operators: Annotated[int, Field(ge=0)] | None = None
    trigger: Trigger
    period: Seconds | None = Field(None, description="Seconds between checkpoints (periodic trigger).")
    drain_timeout: Seconds = DRAIN_TIMEOUT
    reset_timeout: Seconds = RESET_TIMEOUT
    max_consecutive_reset_attempts: Annotated[int, Field(ge=1)] = MAX_CONSECUTIVE_RESET_ATTEMPTS
    pes_in_region: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)
    operators_to_start_region_map: dict[str, bool] = Field(default_factory=dict)
    operators_to_trigger_map: dict[str, bool] = Field(default_factory=dict)
    # Requests (editing them never rebuilds the region): each new nonce is acted on once.
    checkpoint_request: Nonce | None = Field(
        None,
        description="Set a new value to drain and checkpoint now, outside the period; "
        "status.checkpointRequest records the sequence id that answered it.",
    )
    hold_drains: bool | None = Field(
        None,
        description="While true the coordinator triggers no periodic drain (asked-for checkpoints and "
        "trigger operators still drain).",
    )
    start_request: StartRequest | None = Field(
        None,
        description="Set (a new nonce) when the region's PEs are being replaced: once they are healthy "
        "the region resets to its last completed checkpoint (mode reset) or starts clean (mode clean).",
    )


class HistoryKind(StrEnum):
    CHECKPOINT = "checkpoint"
    RESET = "reset"


class HistoryEntry(WireModel):
    """One completed checkpoint or reset (times in epoch milliseconds)."""

    kind: HistoryKind
    seq_id: Annotated[int, Field(ge=0, alias="seqID")]
    start: float
    completion: float
    duration: Annotated[float, Field(ge=0, description="Milliseconds.")]


class CheckpointRequestStatus(WireModel):
    """The last asked-for checkpoint: its nonce, when it was taken on, and what answered it."""

    nonce: Nonce
    requested: float = Field(description="Epoch milliseconds.")
    seq_id: int | None = Field(None, ge=0, alias="seqID")
    completed: float | None = Field(None, description="Epoch milliseconds.")


class StartRequestStatus(WireModel):
    """The last start request taken on."""

    nonce: Nonce
    mode: StartMode
    requested: float = Field(description="Epoch milliseconds.")


class ConsistentRegionStatus(Status):
    """The coordinator's persisted FSM state; written before PEs are notified."""

    state: RegionState = RegionState.STARTED
    region_healthy: bool = False
    clean_start: bool = False
    must_reset: bool = False
    healthy_first_time: bool = False
    current_reset_attempt: Annotated[int, Field(ge=0)] = 0
    current_max_reset_attempts: Annotated[int, Field(ge=0)] | None = None
    current_seq_id: Annotated[int, Field(ge=0, alias="currentSeqID")] = 1
    last_completed_seq_id: Annotated[int, Field(ge=0, alias="lastCompletedSeqID")] = 0
    pending_seq_id: Annotated[int, Field(ge=0, alias="pendingSeqID")] = 0
    to_retire_seq_id: Annotated[int, Field(ge=0, alias="toRetireSeqID")] = 0
    current_timer_seq_id: Annotated[int, Field(ge=0)] = 0
    pe_to_completion: dict[str, PeCompletion] = Field(default_factory=dict)
    last_consistent_state_time: float | None = Field(None, description="Epoch milliseconds.")
    last_reset_time: float | None = Field(None, description="Epoch milliseconds.")
    avg_drain_time: float | None = Field(None, description="Milliseconds, over the recent drains.")
    avg_reset_time: float | None = Field(None, description="Milliseconds, over the recent resets.")
    # Kept so that metrics and averages survive a coordinator restart.
    last_completed_drain: int = Field(-1, ge=-1, description="Sequence id of the last completed drain.")
    last_completed_reset: int = Field(-1, ge=-1, description="Sequence id of the last completed reset.")
    drain_start_time: float | None = Field(None, description="Epoch milliseconds.")
    reset_start_time: float | None = Field(None, description="Epoch milliseconds.")
    recent_drain_times: list[float] = Field(
        default_factory=list, max_length=10, description="Durations of the last drains, milliseconds."
    )
    recent_reset_times: list[float] = Field(
        default_factory=list, max_length=10, description="Durations of the last resets, milliseconds."
    )
    checkpoint_requested: bool = Field(False, description="An asked-for checkpoint has not completed yet.")
    drains_held: bool = Field(False, description="The period triggers no drain (spec.holdDrains).")
    start_clean: bool = Field(False, description="The next start is clean (spec.startRequest mode clean).")
    checkpoint_request: CheckpointRequestStatus | None = None
    start_request: StartRequestStatus | None = None
    history: list[HistoryEntry] = Field(
        default_factory=list,
        max_length=HISTORY_LENGTH,
        description=f"The last {HISTORY_LENGTH} completed checkpoints and resets, oldest first.",
    )


class ConsistentRegion(Resource):
    kind_name: ClassVar[str] = "ConsistentRegion"
    plural: ClassVar[str] = "streamscrs"
    singular: ClassVar[str] = "streamscr"
    short_names: ClassVar[tuple[str, ...]] = ("stcr",)
    description: ClassVar[str] = "A consistent region of a job and its coordinator state."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Index", type="integer", json_path=".spec.regionIndex"),
        PrinterColumn(name="State", type="string", json_path=".status.state"),
        PrinterColumn(name="Checkpoint", type="integer", json_path=".status.lastCompletedSeqID"),
        PrinterColumn(name="Held", type="boolean", json_path=".status.drainsHeld"),
    )

    kind: Literal["ConsistentRegion"] = "ConsistentRegion"
    spec: ConsistentRegionSpec
    status: ConsistentRegionStatus | None = None


class CoordinatorMode(StrEnum):
    DEDICATED = "dedicated"
    SHARED = "shared"


class ConsistentRegionOperatorSpec(WireModel):
    job_name: Annotated[str, Field(min_length=1)]
    job_uid: Annotated[str, Field(min_length=1, description="The Job's Kubernetes UID.")]
    num_regions: Annotated[int, Field(ge=1)]
    mode: CoordinatorMode = CoordinatorMode.DEDICATED
    log_level: TraceLevel = TraceLevel.INFO
    image_pull_policy: ImagePullPolicy = ImagePullPolicy.IF_NOT_PRESENT
    image_pull_secret: str | None = None


class VReplicaPlacement(WireModel):
    """How many of a vpod's vreplicas one pod holds (the vreplica scheduler's Placeable shape)."""

    pod_name: Annotated[str, Field(min_length=1)]
    vreplicas: Annotated[int, Field(ge=1)]


class ConsistentRegionOperatorStatus(Status):
    has_started: bool = False
    coordinator: str | None = Field(None, description="Pod running this job's coordinator.")
    placements: list[VReplicaPlacement] = Field(
        default_factory=list,
        description="Shared mode: the job's regions (vreplicas) placed on the coordinator pool's pods.",
    )


class ConsistentRegionOperator(Resource):
    kind_name: ClassVar[str] = "ConsistentRegionOperator"
    plural: ClassVar[str] = "streamscros"
    singular: ClassVar[str] = "streamscro"
    short_names: ClassVar[tuple[str, ...]] = ("stcro",)
    description: ClassVar[str] = "The consistent-region coordinator of a job."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Regions", type="integer", json_path=".spec.numRegions"),
        PrinterColumn(name="Mode", type="string", json_path=".spec.mode"),
    )

    kind: Literal["ConsistentRegionOperator"] = "ConsistentRegionOperator"
    spec: ConsistentRegionOperatorSpec
    status: ConsistentRegionOperatorStatus | None = None
