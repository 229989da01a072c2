"""The bundle repository over a real socket: what `redis-cli --raw HGET apps <sab>` sends and reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from streams_k8s.controller.bundles.fetch import BundleCache
from streams_k8s.controller.bundles.repository import BundleRepository

SAB = b"PK\x03\x04 a zip with\r\n CRLF and \x00 bytes"


@pytest.fixture
async def repository(tmp_path: Path) -> AsyncIterator[BundleRepository]:
    cache = BundleCache(tmp_path)
    cache.store("default", "apps.parallel.Parallel.sab", SAB)
    cache.store("other", "secret.sab", b"another namespace's bundle")
    server = BundleRepository(cache, "default")
    await server.start("127.0.0.1", 0)
    yield server
    await server.stop()


def resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


async def exchange(port: int, request: bytes, expect: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.readexactly(expect), 5)
    finally:
        writer.close()


async def test_hget_serves_the_bundle_bytes(repository: BundleRepository) -> None:
    expected = b"$%d\r\n%b\r\n" % (len(SAB), SAB)
    got = await exchange(
        repository.port, resp(b"HGET", b"apps", b"apps.parallel.Parallel.sab"), len(expected)
    )
    assert got == expected


@pytest.mark.parametrize(
    ("request_", "answer"),
    [
        (resp(b"HGET", b"apps", b"missing.sab"), b"$-1\r\n"),
        (resp(b"HGET", b"apps", b"secret.sab"), b"$-1\r\n"),  # another namespace: not served
        (resp(b"hget", b"apps", b"../../etc/passwd"), b"$-1\r\n"),
        (resp(b"HEXISTS", b"apps", b"apps.parallel.Parallel.sab"), b":1\r\n"),
        (resp(b"HEXISTS", b"apps", b"missing.sab"), b":0\r\n"),
        (resp(b"HKEYS", b"apps"), b"*1\r\n$26\r\napps.parallel.Parallel.sab\r\n"),
        (resp(b"HKEYS", b"other"), b"*0\r\n"),
        (resp(b"PING"), b"+PONG\r\n"),
        (b"PING\r\n", b"+PONG\r\n"),  # inline, as typed into telnet
        (b"HEXISTS apps missing.sab\r\n", b":0\r\n"),
    ],
)
async def test_commands(repository: BundleRepository, request_: bytes, answer: bytes) -> None:
    assert await exchange(repository.port, request_, len(answer)) == answer


async def test_writes_and_unknown_commands_are_errors(repository: BundleRepository) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", repository.port)
    try:
        for request in (resp(b"HSET", b"apps", b"x", b"y"), resp(b"HGET", b"apps"), resp(b"FLUSHALL")):
            writer.write(request)
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 5)
            assert line.startswith(b"-ERR ")
        # the connection stays usable after an error reply
        writer.write(resp(b"PING"))
        await writer.drain()
        assert await asyncio.wait_for(reader.readline(), 5) == b"+PONG\r\n"
    finally:
        writer.close()


async def test_malformed_requests_get_an_error_and_the_server_lives_on(repository: BundleRepository) -> None:
    for garbage in (b"*x\r\n", b"*1\r\n:5\r\n", b"*1\r\n$999999999\r\n", b"*99999\r\n"):
        reader, writer = await asyncio.open_connection("127.0.0.1", repository.port)
        writer.write(garbage)
        await writer.drain()
        assert (await asyncio.wait_for(reader.readline(), 5)).startswith(b"-ERR Protocol error")
        writer.close()
    assert await exchange(repository.port, resp(b"PING"), 7) == b"+PONG\r\n"


async def test_a_pinned_build_is_served_or_nothing_never_another(tmp_path: Path) -> None:
    cache = BundleCache(tmp_path)
    old = cache.store("default", "app.sab", b"old build")
    cache.store("default", "app.sab", b"new build")  # the name now means the new build
    pins = {"app.sab": old.digest}
    server = BundleRepository(cache, "default", pinned=lambda peer, name: pins.get(name))
    await server.start("127.0.0.1", 0)
    try:
        request = resp(b"HGET", b"apps", b"app.sab")
        assert await exchange(server.port, request, 15) == b"$9\r\nold build\r\n"
        pins["app.sab"] = "0" * 64  # a build the cache lost: not found, rather than the wrong one
        assert await exchange(server.port, request, 5) == b"$-1\r\n"
        assert await exchange(server.port, resp(b"HEXISTS", b"apps", b"app.sab"), 4) == b":0\r\n"
        del pins["app.sab"]  # not a PE pod's request: by name
        assert await exchange(server.port, request, 15) == b"$9\r\nnew build\r\n"
    finally:
        await server.stop()
