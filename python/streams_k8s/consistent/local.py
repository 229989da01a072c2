"""Running region FSMs in one process, without Kubernetes: the coordinator's core loop.

One ordered queue of (region, event) for all regions, taken a batch at a time: each event's FSM
step and timer changes, then one status write per region the batch changed (none when nothing
changed; retried until it is confirmed), and only then the batch's board clears, notifications
(board entry + push to every PE of the region) and gauges, in event order. Persistence and the
UDP push are injected, so the same loop serves tests, the sandbox and the Kubernetes
coordinator (which persists to the ConsistentRegion status).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from streams_k8s.api.consistent_region import ConsistentRegionStatus
from streams_k8s.consistent.fsm import (
    ArmTimer,
    CancelTimers,
    ClearBoard,
    Event,
    EventRejected,
    Notify,
    RegionMachine,
    Restarted,
    TimerFired,
)
from streams_k8s.consistent.metrics import GaugeSink
from streams_k8s.consistent.notifications import NotificationBoard

log = logging.getLogger(__name__)

Persist = Callable[[int, ConsistentRegionStatus], Awaitable[None]]
Push = Callable[[int, Sequence[int], Notify], Awaitable[None]]

# Backoff between attempts of a failed status write (seconds).
WRITE_RETRY_DELAYS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
# Events stepped before one round of status writes.
MAX_BATCH = 512


class UnknownRegion(KeyError):
    """No region with that index runs here."""


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


async def _keep_in_memory(region_index: int, status: ConsistentRegionStatus) -> None:
    """The default persistence: the status lives only in the RegionMachine."""


async def _no_push(region_index: int, pes: Sequence[int], note: Notify) -> None:
    """The default push: PEs poll the board."""


class LocalCoordinator:
    """The FSMs of a set of regions, their notification board, timers and gauges."""

    def __init__(
        self,
        regions: Iterable[RegionMachine],
        *,
        persist: Persist = _keep_in_memory,
        push: Push = _no_push,
        gauges: GaugeSink | None = None,
        clock: Callable[[], int] = epoch_ms,
        restarted: bool = False,
    ) -> None:
        self._regions = {m.region_index: m for m in regions}
        self._persist = persist
        self._push = push
        self._gauges = gauges
        self._clock = clock
        self._queue: asyncio.Queue[tuple[int, Event]] = asyncio.Queue()
        self._timers: dict[int, list[asyncio.TimerHandle]] = {}
        self.board = NotificationBoard()
        self.rejected = 0
        if restarted:
            for index in self._regions:
                self.submit(index, Restarted())

    @property
    def regions(self) -> Mapping[int, RegionMachine]:
        return self._regions

    @property
    def backlog(self) -> int:
        """Events queued and not yet processed."""
        return self._queue.qsize()

    def add_region(self, machine: RegionMachine, *, restarted: bool = False) -> None:
        """Start running a region (its ConsistentRegion appeared or was assigned here)."""
        self._regions[machine.region_index] = machine
        if self._gauges is not None:  # scraped from the start, not only after its first event
            self._gauges.update(machine.region_index, machine.gauges())
        if restarted:
            self.submit(machine.region_index, Restarted())

    def remove_region(self, region_index: int) -> None:
        """Stop running a region: its timers, board entries and gauges go; queued events for it
        are dropped when they come up."""
        machine = self._regions.pop(region_index, None)
        if machine is None:
            return
        for handle in self._timers.pop(region_index, []):
            handle.cancel()
        self.board.clear(region_index, machine.pes)
        if self._gauges is not None:
            self._gauges.remove(region_index)

    def submit(self, region_index: int, event: Event) -> None:
        """Queue an event; it is processed in order by `run`."""
        if region_index not in self._regions:
            raise UnknownRegion(region_index)
        self._queue.put_nowait((region_index, event))

    async def idle(self) -> None:
        """Wait until every queued event (and what it caused synchronously) is processed."""
        await self._queue.join()

    async def run(self) -> None:
        """Process events forever, in order, a batch at a time: every event queued when the loop
        comes round (up to ``MAX_BATCH``) is stepped, then each region that changed is written
        once, and only then are the batch's notifications published, in order. A burst of
        progress reports (100 PEs checkpointing at once) costs one status write, not 100."""
        try:
            while True:
                batch = [await self._queue.get()]
                while len(batch) < MAX_BATCH and not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                try:
                    await self._process(batch)
                finally:
                    for _ in batch:
                        self._queue.task_done()
        finally:
            for handles in self._timers.values():
                for handle in handles:
                    handle.cancel()

    async def _process(self, batch: Sequence[tuple[int, Event]]) -> None:
        publish: list[tuple[int, tuple[int, ...], ClearBoard | Notify | Mapping[str, float]]] = []
        changed: dict[int, RegionMachine] = {}
        now = self._clock()
        for region_index, event in batch:
            machine = self._regions.get(region_index)
            if machine is None:  # removed while the event waited
                continue
            try:
                result = machine.step(event, now)
            except EventRejected as err:
                self.rejected += 1
                log.info("region %d refused %s: %s", region_index, event, err)
                continue
            pes = machine.pes
            for action in result.actions:
                match action:
                    case CancelTimers():
                        for handle in self._timers.pop(region_index, []):
                            handle.cancel()
                    case ArmTimer(timer=timer, delay_ms=delay_ms, timer_seq_id=seq):
                        handle = asyncio.get_running_loop().call_later(
                            delay_ms / 1000, self.submit, region_index, TimerFired(timer, seq)
                        )
                        self._timers.setdefault(region_index, []).append(handle)
                    case ClearBoard() | Notify():  # published once the status write is confirmed
                        publish.append((region_index, pes, action))
            if result.gauges is not None:
                publish.append((region_index, pes, result.gauges))
            if result.persist:
                changed[region_index] = machine
        for region_index, machine in changed.items():
            await self._write(region_index, machine.status())
        for region_index, pes, item in publish:
            if region_index not in self._regions:
                continue
            match item:
                case ClearBoard():
                    self.board.clear(region_index, pes)
                case Notify():
                    self.board.post(region_index, pes, item)
                    try:
                        await self._push(region_index, pes, item)
                    except Exception:  # a lost hint is recovered by the PE's poll of the board
                        log.warning("region %d: push of %s failed", region_index, item.type, exc_info=True)
                case _:
                    if self._gauges is not None:
                        self._gauges.update(region_index, item)

    async def _write(self, region_index: int, status: ConsistentRegionStatus) -> None:
        """Persist, retrying until confirmed: PEs must never act on an unrecorded state."""
        delays = iter(WRITE_RETRY_DELAYS)
        attempt = 0
        while True:
            try:
                await self._persist(region_index, status)
                return
            except Exception:
                attempt += 1
                delay = next(delays, WRITE_RETRY_DELAYS[-1])
                log.warning(
                    "region %d: status write failed (attempt %d), retrying in %.2fs",
                    region_index,
                    attempt,
                    delay,
                    exc_info=True,
                )
                await asyncio.sleep(delay)
