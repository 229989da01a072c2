"""UDP datagrams to hosts by name (PEs at their headless Services): hints that may be lost.

Whoever sends them (consistent-region hints, subscription boards) has a slower, reliable path
behind (the PE polls over HTTP), so a name that does not resolve or a send that fails is
logged, never raised. Resolved addresses are reused for a few seconds (a relaunched pod's new
address is picked up after that); one socket per address family.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

log = logging.getLogger(__name__)

ADDRESS_TTL = 2.0  # seconds a resolved address is reused
_PRUNE_AT = 1024  # addresses kept at least before expired ones are dropped


class DatagramSender:
    def __init__(self, port: int) -> None:
        self.port = port
        self._transports: dict[int, asyncio.DatagramTransport] = {}
        self._addresses: dict[str, tuple[float, int, Any]] = {}  # host -> (expiry, family, address)
        self._prune_at = _PRUNE_AT

    async def send(self, host: str, data: bytes) -> None:
        try:
            family, address = await self._resolve(host)
            (await self._transport(family)).sendto(data, address)
        except OSError as err:
            log.info("datagram to %s:%d not sent: %s", host, self.port, err)

    async def _resolve(self, host: str) -> tuple[int, Any]:
        now = time.monotonic()
        cached = self._addresses.get(host)
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        infos = await asyncio.get_running_loop().getaddrinfo(host, self.port, type=socket.SOCK_DGRAM)
        family, _, _, _, address = infos[0]
        if len(self._addresses) >= self._prune_at:  # hosts of jobs long gone: keep the fresh ones
            self._addresses = {h: a for h, a in self._addresses.items() if a[0] > now}
            self._prune_at = max(_PRUNE_AT, 2 * len(self._addresses))  # amortised: rarely again
        self._addresses[host] = (now + ADDRESS_TTL, family, address)
        return family, address

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
    """Nobody answers on this socket; ICMP errors (port unreachable) are only logged."""

    def error_received(self, exc: Exception) -> None:
        log.debug("datagram error: %s", exc)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        log.debug("unexpected datagram from %s ignored", addr)
