"""kube-apiserver's way into the simulated pod network: an HTTP CONNECT proxy on a Unix socket, the
part Konnectivity plays for a control plane that cannot route to its cluster's pod addresses.

kube-apiserver dials a pod's address itself for a Service's or a pod's `proxy` subresource (how
`kubectl streams submitjob` uploads a bundle). The simulated pods' addresses (10.244.N.M) route
nowhere on this host: their processes listen on loopback aliases (`pod_network`). The real control
plane's kube-apiserver sends its `cluster` egress through this socket
(`control_plane.components.EGRESS_SELECTOR`): one connection per dial, `CONNECT 10.244.N.M:P`,
which the proxy opens to where that pod listens (the simulation's `HostNetwork`) and then relays
both ways. An address no pod process listens on (a node's kubelet port too: the simulated nodes
serve none) is answered 502, as an unreachable address fails.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from streams_k8s.sandbox.cluster.pod_network import HostNetwork

HEAD_LIMIT = 8192
HEAD_TIMEOUT = 10.0
CONNECTED = b"HTTP/1.1 200 Connection established\r\n\r\n"


def connect_target(head: bytes) -> tuple[str, int] | None:
    """The host and port of a `CONNECT host:port HTTP/1.1` request head (None: anything else)."""
    words = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    if len(words) != 3 or words[0] != "CONNECT" or not words[2].startswith("HTTP/1."):
        return None
    host, _, port = words[1].rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def refusal(status: str, why: str) -> bytes:
    body = why.encode()
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


class ClusterEgress:
    """Serves kube-apiserver's CONNECTs into the pod network at a Unix socket, until stopped."""

    def __init__(self, host_network: HostNetwork) -> None:
        self._host_network = host_network
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, socket: Path) -> None:
        self._server = await asyncio.start_unix_server(self._accept, path=str(socket), limit=HEAD_LIMIT)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._tunnel(reader, writer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            return
        target = connect_target(head)
        if target is None:
            writer.write(refusal("405 Method Not Allowed", "only CONNECT host:port"))
            return
        host, port = target
        where = self._host_network.where(host)
        if where is None:
            writer.write(refusal("502 Bad Gateway", f"no pod process listens at {host}"))
            return
        try:
            pod_reader, pod_writer = await asyncio.open_connection(where, port)
        except OSError as err:
            writer.write(refusal("502 Bad Gateway", f"{host}:{port}: {err.strerror or err}"))
            return
        try:
            writer.write(CONNECTED)
            await asyncio.gather(_relay(reader, pod_writer), _relay(pod_reader, writer))
        finally:
            pod_writer.close()
