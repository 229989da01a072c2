"""UDP push hints to PEs: one datagram per PE of the region, to ``<job>-<pe>.<ns>:10001``.

Hints only: a lost or refused datagram costs the PE at most its 5-second HTTP poll of the
board, so send failures are logged, never raised (as in the original). Sending happens in the
background, in notification order, so the coordinator's event loop never waits on name
resolution (`k8s.datagrams` keeps resolved addresses for a few seconds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from streams_k8s.api.contract import CONSISTENT_REGION_PORT, pe_host
from streams_k8s.consistent.fsm import Notify
from streams_k8s.consistent.notifications import encode_datagram
from streams_k8s.k8s.datagrams import DatagramSender


class UdpPush:
    """A ``Push`` for the coordinator loop. ``host_of`` maps a PE id to its host name (by default
    the PE's headless Service)."""

    def __init__(
        self,
        job: str,
        namespace: str,
        *,
        port: int = CONSISTENT_REGION_PORT,
        host_of: Callable[[int], str] | None = None,
    ) -> None:
        self._host_of = host_of or (lambda pe: pe_host(job, pe, namespace))
        self._sender = DatagramSender(port)
        self._outbox: asyncio.Queue[tuple[bytes, Sequence[int]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, region_index: int, pes: Sequence[int], note: Notify) -> None:
        """Queue the region's hint for each PE; returns at once."""
        data = encode_datagram(region_index, note)
        self._outbox.put_nowait((data, pes))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send_all(), name="udp hints")

    async def flushed(self) -> None:
        """Wait until every queued hint was sent (or given up)."""
        await self._outbox.join()

    async def _send_all(self) -> None:
        while True:
            data, pes = await self._outbox.get()
            try:
                await asyncio.gather(*(self._sender.send(self._host_of(pe), data) for pe in pes))
            finally:
                self._outbox.task_done()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._sender.close()
