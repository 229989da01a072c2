"""UDP push hints to PEs: one datagram per PE of the region, to ``<job>-<pe>.<ns>:10001``.

Hints only: a lost or refused datagram costs the PE at most its 5-second HTTP poll of the
board, so send failures are logged, never raised (as in the original).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Sequence
from typing import Any

from streams_k8s.consistent.fsm import Notify
from streams_k8s.consistent.notifications import UDP_PORT, datagram_host, encode_datagram

log = logging.getLogger(__name__)


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

    async def __call__(self, region_index: int, pes: Sequence[int], note: Notify) -> None:
        data = encode_datagram(region_index, note)
        await asyncio.gather(*(self._send(pe, data) for pe in pes))

    async def _send(self, pe: int, data: bytes) -> None:
        host = self._host_of(pe)
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, self._port, type=socket.SOCK_DGRAM)
            family, _, _, _, address = infos[0]
            transport = await self._transport(family)
            transport.sendto(data, address)
        except OSError as err:
            log.info("PE %d: UDP hint to %s:%d not sent: %s", pe, host, self._port, err)

    async def _transport(self, family: int) -> asyncio.DatagramTransport:
        transport = self._transports.get(family)
        if transport is None or transport.is_closing():
            transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(_Ignore, family=family)
            self._transports[family] = transport
        return transport

    def close(self) -> None:
        for transport in self._transports.values():
            transport.close()
        self._transports.clear()


class _Ignore(asyncio.DatagramProtocol):
    """PEs never answer on this socket; ICMP errors (port unreachable) are only logged."""

    def error_received(self, exc: Exception) -> None:
        log.debug("UDP hint error: %s", exc)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        log.debug("unexpected datagram from %s ignored", addr)
