"""UDP push hints to PEs: one datagram per PE of the region, to ``<job>-<pe>.<ns>:10001``.

Hints only: a lost or refused datagram costs the PE at most its 5-second HTTP poll of the
board, so send failures are logged, never raised (as in the original). Sending happens in the
background, in notification order, so the coordinator's event loop never waits on name
resolution; resolved addresses are kept for a few seconds (a relaunched PE pod's new address
is picked up after that, its poll covering the gap).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from streams_k8s.consistent.fsm import Notify
from streams_k8s.consistent.notifications import UDP_PORT, datagram_host, encode_datagram

log = logging.getLogger(__name__)

ADDRESS_TTL = 2.0  # seconds a resolved PE address is reused


class UdpPush:
    """A ``Push`` for the coordinator loop. ``host_of`` maps a PE id to its host name (by default
    the PE's headless Service)."""

    def __init__(
        self,
        job: str,
        namespace: str,
        *,
        port: int = UDP_PORT,
        host_of: Callable[[int], str] | None = None,
    ) -> None:
        self._port = port
        self._host_of = host_of or (lambda pe: datagram_host(job, pe, namespace))
        self._transports: dict[int, asyncio.DatagramTransport] = {}
        self._addresses: dict[str, tuple[float, int, Any]] = {}  # host -> (expiry, family, address)
        self._outbox: asyncio.Queue[tuple[bytes, Sequence[int]]] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    async def __call__(self, region_index: int, pes: Sequence[int], note: Notify) -> None:
        """Queue the region's hint for each PE; returns at once."""
        data = encode_datagram(region_index, note)
        self._outbox.put_nowait((data, pes))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_all(), name="udp hints")

    async def flushed(self) -> None:
        """Wait until every queued hint was sent (or given up)."""
        await self._outbox.join()

    async def _send_all(self) -> None:
        while True:
            data, pes = await self._outbox.get()
            try:
                await asyncio.gather(*(self._send(pe, data) for pe in pes))
            finally:
                self._outbox.task_done()

    async def _send(self, pe: int, data: bytes) -> None:
        host = self._host_of(pe)
        try:
            family, address = await self._resolve(host)
            transport = await self._transport(family)
            transport.sendto(data, address)
        except OSError as err:
            log.info("PE %d: UDP hint to %s:%d not sent: %s", pe, host, self._port, err)

    async def _resolve(self, host: str) -> tuple[int, Any]:
        now = time.monotonic()
        cached = self._addresses.get(host)
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        infos = await asyncio.get_running_loop().getaddrinfo(host, self._port, type=socket.SOCK_DGRAM)
        family, _, _, _, address = infos[0]
        self._addresses[host] = (now + ADDRESS_TTL, family, address)
        return family, address

    async def _transport(self, family: int) -> asyncio.DatagramTransport:
        transport = self._transports.get(family)
        if transport is None or transport.is_closing():
            transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(_Ignore, family=family)
            self._transports[family] = transport
        return transport

    def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            self._sender = None
        for transport in self._transports.values():
            transport.close()
        self._transports.clear()


class _Ignore(asyncio.DatagramProtocol):
    """PEs never answer on this socket; ICMP errors (port unreachable) are only logged."""

    def error_received(self, exc: Exception) -> None:
        log.debug("UDP hint error: %s", exc)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        log.debug("unexpected datagram from %s ignored", addr)
