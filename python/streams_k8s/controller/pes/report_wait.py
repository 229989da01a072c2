"""How long a PE pod seen running waits for the PE's connectivity report before the controller
records it running itself.

The PE's first connectivity report records its pod running in the same status write
(`pes.lifecycle.started_status`): one write per launch instead of two. A runtime that never
reports must not leave the pod unrecorded, so the controller records it after a wait. A fixed 3 s
was too short under load (a 10,000-PE submission on a busy machine: 2,149 PEs written twice, the
record and then the late report), and longer would make a runtime that never reports wait for
nothing. So the wait follows the reports: at least ``REPORT_GRACE``, else 1.5 times the latest
of the recent reports (a report that came after the controller gave up counts, from when the pod
was seen running), at most ``MAX_REPORT_GRACE``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from streams_k8s.k8s.objects import ObjectKey

REPORT_GRACE = 3.0
MAX_REPORT_GRACE = 30.0
_RECENT = 100  # reports the wait follows


@dataclass(frozen=True, slots=True)
class _Started:
    pe_uid: str
    launch: int
    since: float  # monotonic time the pod was first seen running


class ReportWait:
    def __init__(self, minimum: float = REPORT_GRACE, clock: Callable[[], float] = time.monotonic) -> None:
        self.minimum = minimum
        self._clock = clock
        self._started: dict[ObjectKey, _Started] = {}  # pod seen running, not recorded yet
        self._gave_up: dict[ObjectKey, _Started] = {}  # recorded by the controller: is a report coming?
        self._delays: deque[float] = deque(maxlen=_RECENT)  # seconds from running to report

    def __len__(self) -> int:
        return len(self._started) + len(self._gave_up)

    def grace(self) -> float:
        """The wait now, for a pod seen running from now on."""
        return min(MAX_REPORT_GRACE, max(self.minimum, 1.5 * max(self._delays, default=0.0)))

    def remaining(self, key: ObjectKey, pe_uid: str, launch: int) -> float:
        """How much longer launch ``launch`` of the PE, seen running, waits for its report."""
        now = self._clock()
        started = self._started.get(key)
        if started is None or started.pe_uid != pe_uid or started.launch != launch:
            started = _Started(pe_uid, launch, now)
            self._started[key] = started
            self._gave_up.pop(key, None)
        return started.since + self.grace() - now

    def ran_unrecorded(self, key: ObjectKey, pe_uid: str) -> int:
        """The launch seen running and not recorded yet (0: none)."""
        started = self._started.get(key)
        return started.launch if started is not None and started.pe_uid == pe_uid else 0

    def recorded(self, key: ObjectKey, by_report: bool) -> None:
        """The pod seen running is recorded: by its report, or by the controller after the wait."""
        started = self._started.pop(key, None)
        if started is None:
            return
        if by_report:
            self._delays.append(self._clock() - started.since)
        else:
            self._gave_up[key] = started

    def reported(self, key: ObjectKey, pe_uid: str) -> None:
        """The PE has reported connectivity: if the controller had given up on it, how late it was."""
        started = self._gave_up.get(key)
        if started is not None and started.pe_uid == pe_uid:
            del self._gave_up[key]
            self._delays.append(self._clock() - started.since)

    def forget(self, key: ObjectKey) -> None:
        self._started.pop(key, None)
        self._gave_up.pop(key, None)
