"""UDP datagrams to PEs, at their headless Service `<job>-<pe>.<ns>` (or wherever `host_of` says).

Hints only, as the runtime treats them: a PE that misses one catches up with its next HTTP poll,
so a failure to resolve or send is logged, never raised. (The consistent-region coordinator has
its own sender for its 128-byte notifications; the layers keep the controller from sharing it.)
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

HostOf = Callable[[str, int, str], str]  # (job, PE id, namespace) → host name or address


def pe_service_host(job: str, pe: int, namespace: str) -> str:
    return f"{job}-{pe}.{namespace}"


class PeDatagrams:
    def __init__(self, port: int, host_of: HostOf = pe_service_host) -> None:
        self.port = port
        self.host_of = host_of
        self._transports: dict[int, asyncio.DatagramTransport] = {}

    async def send(self, job: str, pe: int, namespace: str, data: bytes) -> None:
        host = self.host_of(job, pe, namespace)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, self.port, type=socket.SOCK_DGRAM)
            family, _, _, _, address = infos[0]
            transport = self._transports.get(family)
            if transport is None or transport.is_closing():
                transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                    _Ignore, family=family
                )
                self._transports[family] = transport
            transport.sendto(data, address)
        except OSError as err:
            log.info("PE %s-%d: datagram to %s:%d not sent: %s", job, pe, host, self.port, err)

    def close(self) -> None:
        for transport in self._transports.values():
            transport.close()
        self._transports.clear()


class _Ignore(asyncio.DatagramProtocol):
    """PEs never answer on this socket; ICMP errors (port unreachable) are only logged."""

    def error_received(self, exc: Exception) -> None:
        log.debug("PE datagram error: %s", exc)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        log.debug("unexpected datagram from %s ignored", addr)
