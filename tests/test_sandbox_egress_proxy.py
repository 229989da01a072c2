"""The cluster egress proxy as kube-apiserver uses it (`sandbox.cluster.egress_proxy`): one Unix
socket connection per dial, `CONNECT pod-address:port`, then the pod's bytes both ways; an address
no pod process listens on, or a request that is no CONNECT, answered with an HTTP error and
closed. (tests/test_real_helm.py and test_real_streamtool.py upload through it from the real
kube-apiserver.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from streams_k8s.sandbox.cluster.egress_proxy import ClusterEgress, connect_target
from streams_k8s.sandbox.cluster.pod_network import HostNetwork

POD = "10.244.1.7"


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data.upper())
        await writer.drain()
    writer.close()


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[tuple[Path, int]]:
    """The proxy at a socket, pod POD's process (an upper-casing echo) listening on 127.0.0.1."""
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    network = HostNetwork()
    network.listen(POD, "127.0.0.1")
    egress = ClusterEgress(network)
    socket = tmp_path / "egress.sock"
    await egress.start(socket)
    try:
        yield socket, port
    finally:
        await egress.stop()
        server.close()
        await server.wait_closed()


async def dial(socket: Path, request: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_unix_connection(str(socket))
    writer.write(request.encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    return reader, writer, head


async def test_a_connect_to_a_pod_address_reaches_the_pod_process(proxy: tuple[Path, int]) -> None:
    socket, port = proxy
    reader, writer, head = await dial(socket, f"CONNECT {POD}:{port} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    writer.write(b"upload")
    assert await asyncio.wait_for(reader.readexactly(6), 5) == b"UPLOAD"
    writer.close()


async def test_an_address_no_pod_listens_at_is_a_bad_gateway(proxy: tuple[Path, int]) -> None:
    socket, port = proxy
    reader, writer, head = await dial(socket, f"CONNECT 10.244.9.9:{port} HTTP/1.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 502 ")
    assert await asyncio.wait_for(reader.read(), 5) == b"no pod process listens at 10.244.9.9"
    writer.close()


async def test_a_request_that_is_no_connect_is_refused(proxy: tuple[Path, int]) -> None:
    socket, _ = proxy
    _, writer, head = await dial(socket, "GET / HTTP/1.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405 ")
    writer.close()


@pytest.mark.parametrize(
    ("head", "target"),
    [
        (b"CONNECT 10.244.0.3:10000 HTTP/1.1\r\n\r\n", ("10.244.0.3", 10000)),
        (b"CONNECT [fd00::3]:443 HTTP/1.1\r\n\r\n", ("fd00::3", 443)),
        (b"CONNECT 10.244.0.3 HTTP/1.1\r\n\r\n", None),
        (b"CONNECT 10.244.0.3:0 HTTP/1.1\r\n\r\n", None),
        (b"CONNECT 10.244.0.3:99999 HTTP/1.1\r\n\r\n", None),
        (b"GET /x HTTP/1.1\r\n\r\n", None),
        (b"\xff\xfe\r\n\r\n", None),
    ],
)
def test_connect_target(head: bytes, target: tuple[str, int] | None) -> None:
    assert connect_target(head) == target
