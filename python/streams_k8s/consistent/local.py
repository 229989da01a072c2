"""Running region FSMs in one process, without Kubernetes: the coordinator's core loop.

One ordered queue of (region, event) for all regions; for each event the FSM step, then its
actions in order: board clears and timer changes, the status write (only when something
changed, retried until it is confirmed), and only then the notification (board entry + push to
every PE of the region) and the gauges. Persistence and the UDP push are injected, so the same
loop serves tests, the sandbox and the Kubernetes coordinator (which persists to the
ConsistentRegion status).
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
        """Process events forever, one at a time."""
        try:
            while True:
                region_index, event = await self._queue.get()
                try:
                    await self._process(region_index, event)
                finally:
                    self._queue.task_done()
        finally:
            for handles in self._timers.values():
                for handle in handles:
                    handle.cancel()

    async def _process(self, region_index: int, event: Event) -> None:
        machine = self._regions.get(region_index)
        if machine is None:  # removed while the event waited
            return
        try:
            result = machine.step(event, self._clock())
        except EventRejected as err:
            self.rejected += 1
            log.info("region %d refused %s: %s", region_index, event, err)
            return
        pes = machine.pes
        for action in result.actions:
            match action:
                case ClearBoard():
                    self.board.clear(region_index, pes)
                case CancelTimers():
                    for handle in self._timers.pop(region_index, []):
                        handle.cancel()
                case ArmTimer(timer=timer, delay_ms=delay_ms, timer_seq_id=seq):
                    handle = asyncio.get_running_loop().call_later(
                        delay_ms / 1000, self.submit, region_index, TimerFired(timer, seq)
                    )
                    self._timers.setdefault(region_index, []).append(handle)
                case Notify():
                    pass  # published below, once the status write is confirmed
        if result.persist:
            await self._write(region_index, machine.status())
        note = result.notification
        if note is not None:
            self.board.post(region_index, pes, note)
            try:
                await self._push(region_index, pes, note)
            except Exception:  # a lost hint is recovered by the PE's poll of the board
                log.warning("region %d: push of %s failed", region_index, note.type, exc_info=True)
        if result.gauges is not None and self._gauges is not None:
            self._gauges.update(region_index, result.gauges)

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
