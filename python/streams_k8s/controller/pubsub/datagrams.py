"""UDP datagrams to PEs, at their headless Service `<job>-<pe>.<ns>` (or wherever `host_of` says).

Hints only, as the runtime treats them: a PE that misses one catches up with its next HTTP poll
(`k8s.datagrams` logs what cannot be sent).
"""

from __future__ import annotations

from collections.abc import Callable

from streams_k8s.api.contract import pe_host
from streams_k8s.k8s.datagrams import DatagramSender

HostOf = Callable[[str, int, str], str]  # (job, PE id, namespace) → host name or address


class PeDatagrams:
    def __init__(self, port: int, host_of: HostOf = pe_host) -> None:
        self.host_of = host_of
        self._sender = DatagramSender(port)

    async def send(self, job: str, pe: int, namespace: str, data: bytes) -> None:
        await self._sender.send(self.host_of(job, pe, namespace), data)

    def close(self) -> None:
        self._sender.close()
