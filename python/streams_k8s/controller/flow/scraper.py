"""Reads every PE's metrics on a period, keeps a bounded window per PE, derives each job's flow.

One round: the targets (`targets.pod_targets`) read by the reader (`readers`: each pod's port by
default, or a Prometheus), each read in its turn (`k8s.idle_turn`: while the controllers are busy
it waits, one interval at most, so a round does not hold back a change); each reading kept in its
PE's `PeWindow`; windows of PEs no longer targeted dropped (memory follows the cluster); each
job's `JobFlow` derived anew, and the listeners told which jobs' flows were derived. A reading
that fails (no answer, not 200, text that is not the exposition) marks the PE failing with the
reason; its window is kept, so the PE's rates come back with its next good reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from streams_k8s.app.flow import FlowShape, JobFlow, job_flow
from streams_k8s.app.flow_samples import PeSample
from streams_k8s.app.flow_window import DEFAULT_READINGS, PeWindow
from streams_k8s.controller.flow.readers import PeRef, PodReader, Reader, Reading
from streams_k8s.controller.flow.targets import Target
from streams_k8s.k8s.idle_turn import IdleTurn
from streams_k8s.k8s.objects import ObjectKey

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 5.0  # the runtime refreshes its metrics every 5 s
Listener = Callable[[set[ObjectKey]], None]


@dataclass(slots=True)
class ScrapeCounts:
    """What the scraper did since it started, for its own metrics."""

    rounds: int = 0
    reads: int = 0
    failures: int = 0
    last_round_seconds: float = 0.0


class FlowScraper:
    def __init__(
        self,
        targets: Callable[[], Iterable[Target]],
        *,
        interval: float = DEFAULT_INTERVAL,
        readings: int = DEFAULT_READINGS,
        reader: Reader | None = None,
        shape_of: Callable[[ObjectKey], FlowShape | None] = lambda _: None,
        should_read: Callable[[], bool] = lambda: True,
        idle: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``reader``: where readings come from (default: each PE pod's port, `PodReader`);
        ``idle``: whether the controllers are (reads wait for it); ``clock`` paces the rounds and
        times the pods' readings."""
        self._targets, self._shape_of, self._clock = targets, shape_of, clock
        self._should_read, self._idle = should_read, idle
        self.interval, self.readings = interval, readings
        self.reader: Reader = reader if reader is not None else PodReader(clock=clock)
        self._windows: dict[PeRef, PeWindow] = {}
        self._problems: dict[PeRef, str] = {}
        self.flows: dict[ObjectKey, JobFlow] = {}
        self.counts = ScrapeCounts()
        self._listeners: list[Listener] = []
        self._task: asyncio.Task[None] | None = None

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` with the jobs whose flow each round derived."""
        self._listeners.append(listener)

    def flow(self, namespace: str, job: str) -> JobFlow | None:
        return self.flows.get(ObjectKey(namespace, job))

    def last_samples(self, job: ObjectKey) -> dict[int, PeSample]:
        """The job's PEs' last good readings, by PE id."""
        return {
            pe: last for (key, pe), w in self._windows.items() if key == job and (last := w.last) is not None
        }

    def latest(self, job: ObjectKey) -> tuple[float, dict[int, PeSample]] | None:
        """The job's PEs whose reading in the latest round succeeded, by PE id, and how many
        seconds ago (by ``clock``) the newest of them was taken; None when there is none."""
        found = {
            pe: newest
            for (key, pe), w in self._windows.items()
            if key == job and (key, pe) not in self._problems and (newest := w.newest) is not None
        }
        if not found:
            return None
        age = self._clock() - max(at for at, _ in found.values())
        return age, {pe: sample for pe, (_, sample) in found.items()}

    def _keep(self, ref: PeRef, reading: Reading) -> None:
        if isinstance(reading, str):
            self.counts.failures += 1
            self._problems[ref] = reading
            return
        self.counts.reads += 1
        self._problems.pop(ref, None)
        window = self._windows.get(ref)
        if window is None:
            window = self._windows[ref] = PeWindow(self.readings)
        window.add(*reading)

    async def scrape_once(self) -> None:
        """One round (see the module docs)."""
        started = time.perf_counter()
        targets = list(self._targets())
        turn = IdleTurn(self._idle, self._clock() + self.interval, self._clock)
        for ref, reading in (await self.reader.read(targets, turn)).items():
            self._keep(ref, reading)
        wanted = {(t.job, t.pe) for t in targets}
        for ref in [r for r in self._windows if r not in wanted]:
            del self._windows[ref]
        for ref in [r for r in self._problems if r not in wanted]:
            del self._problems[ref]
        self._derive(targets)
        self.counts.rounds += 1
        self.counts.last_round_seconds = time.perf_counter() - started

    def _derive(self, targets: list[Target]) -> None:
        pes: dict[ObjectKey, set[int]] = defaultdict(set)
        for target in targets:
            pes[target.job].add(target.pe)
        flows = {}
        for job, ids in pes.items():
            windows = {pe: w for pe in ids if (w := self._windows.get((job, pe))) is not None}
            problems = {pe: p for pe in ids if (p := self._problems.get((job, pe))) is not None}
            pending = {pe: PeWindow(self.readings) for pe in ids if pe not in windows}
            flows[job] = job_flow({**pending, **windows}, problems, self._shape_of(job))
        self.flows = flows
        for listener in self._listeners:
            listener(set(flows))

    async def _run(self) -> None:
        while True:
            started = self._clock()
            try:
                if self._should_read():
                    await self.scrape_once()
                elif self.flows:  # no longer the leader: the new leader serves the flow
                    self.flows = {}
            except Exception:  # a bug in one round must not end reading for good
                log.exception("reading the PEs' metrics failed")
            await asyncio.sleep(max(0.0, self.interval - (self._clock() - started)))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="flow-scraper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.reader.close()
