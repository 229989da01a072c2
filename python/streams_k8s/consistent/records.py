"""What a region's status keeps beyond the FSM's own fields: the last asked-for checkpoint (and
the sequence id that answered it), the last start request taken on, and a bounded history of
completed checkpoints and resets (``HISTORY_LENGTH`` entries, oldest first).

A completion is seen in the gauges every persisted step returns: the last completed drain (or
reset) sequence id and its time change together. The first checkpoint that completes after a
request answers it (a drain already under way when the request came counts).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from streams_k8s.api.consistent_region import (
    HISTORY_LENGTH,
    CheckpointRequestStatus,
    ConsistentRegionStatus,
    HistoryEntry,
    HistoryKind,
    StartMode,
    StartRequestStatus,
)

# The status fields kept here (every other one is the FSM's own).
RECORD_FIELDS = frozenset({"checkpoint_request", "start_request", "history"})
# Gauges (`cr_gauge_names`) that move when a drain or a reset completes: (sequence id, time).
_DRAIN_MARK = ("last_completed_drain_seq_id", "last_consistent_state_time_milliseconds")
_RESET_MARK = ("last_completed_reset_seq_id", "last_reset_time_milliseconds")


class RegionRecords:
    def __init__(self, status: ConsistentRegionStatus) -> None:
        self.checkpoint_request = status.checkpoint_request
        self.start_request = status.start_request
        self.history: deque[HistoryEntry] = deque(status.history, maxlen=HISTORY_LENGTH)
        self._marks = {
            HistoryKind.CHECKPOINT: (
                float(status.last_completed_drain),
                float(status.last_consistent_state_time or 0),
            ),
            HistoryKind.RESET: (float(status.last_completed_reset), float(status.last_reset_time or 0)),
        }

    def checkpoint_asked(self, nonce: str, now_ms: int) -> None:
        self.checkpoint_request = CheckpointRequestStatus(nonce=nonce, requested=now_ms)

    def start_asked(self, nonce: str, mode: StartMode, now_ms: int) -> None:
        self.start_request = StartRequestStatus(nonce=nonce, mode=mode, requested=now_ms)

    def observe(self, gauges: Mapping[str, float], snapshot: Callable[[], dict[str, Any]]) -> None:
        """After a persisted step: record a checkpoint or reset that just completed."""
        for kind, names, durations in (
            (HistoryKind.CHECKPOINT, _DRAIN_MARK, "recentDrainTimes"),
            (HistoryKind.RESET, _RESET_MARK, "recentResetTimes"),
        ):
            mark = (gauges[names[0]], gauges[names[1]])
            if mark == self._marks[kind] or mark[0] < 0:
                continue
            self._marks[kind] = mark
            took = float((snapshot()[durations] or [0])[-1])
            seq_id, completion = int(mark[0]), mark[1]
            entry = HistoryEntry(
                kind=kind, seq_id=seq_id, start=completion - took, completion=completion, duration=took
            )
            self.history.append(entry)
            request = self.checkpoint_request
            if kind is HistoryKind.CHECKPOINT and request is not None and request.seq_id is None:
                answered = {"seq_id": seq_id, "completed": completion}
                self.checkpoint_request = request.model_copy(update=answered)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"history": [entry.to_wire() for entry in self.history]}
        if self.checkpoint_request is not None:
            wire["checkpointRequest"] = self.checkpoint_request.to_wire()
        if self.start_request is not None:
            wire["startRequest"] = self.start_request.to_wire()
        return wire

    def copy(self) -> RegionRecords:
        clone = RegionRecords.__new__(RegionRecords)
        clone.checkpoint_request = self.checkpoint_request
        clone.start_request = self.start_request
        clone.history = deque(self.history, maxlen=HISTORY_LENGTH)
        clone._marks = dict(self._marks)
        return clone
