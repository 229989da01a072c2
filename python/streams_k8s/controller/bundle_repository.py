"""The bundle repository PE pods fetch their `.sab` from: a small redis-protocol (RESP2) server.

The PE bootstrap runs `redis-cli -h streams-api.<namespace> --raw HGET apps <sab>`; this server
answers it from the controller's bundle cache (the bundles its job controller fetched for the
namespace), read-only. Commands (case-insensitive):

| command | answer |
|---|---|
| `HGET apps <name>` | the bundle's bytes (bulk string), or nil |
| `HEXISTS apps <name>` | `:1` or `:0` |
| `HKEYS apps` | every bundle name (array) |
| `PING [msg]` | `+PONG` or the message |
| anything else, or another hash | `-ERR ...` |

It listens on port 6379 of the controller; the `streams-api` Service routes port `repository` to
the leader replica, the one whose job controller fills the cache. Requests are both RESP arrays
(what redis-cli sends) and inline commands (`HGET apps x\\r\\n`, as typed into telnet).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from streams_k8s.controller.bundles import BundleCache, BundleError

log = logging.getLogger(__name__)

REPOSITORY_PORT = 6379
HASH = b"apps"
_MAX_ARGS = 16
_MAX_ARG_BYTES = 64 * 1024


class ProtocolError(Exception):
    """Bytes that are not a RESP request; the connection is answered -ERR and closed."""


async def read_command(reader: asyncio.StreamReader) -> list[bytes] | None:
    """One request as its arguments; None at end of stream."""
    line = await reader.readline()
    if not line:
        return None
    if not line.endswith(b"\r\n") and not line.endswith(b"\n"):
        raise ProtocolError("unterminated request")
    line = line.rstrip(b"\r\n")
    if not line.startswith(b"*"):
        return line.split()  # inline command
    count = _number(line[1:], "array length")
    if not 0 <= count <= _MAX_ARGS:
        raise ProtocolError(f"array of {count} arguments")
    args = []
    for _ in range(count):
        header = (await reader.readline()).rstrip(b"\r\n")
        if not header.startswith(b"$"):
            raise ProtocolError("expected a bulk string")
        size = _number(header[1:], "bulk length")
        if not 0 <= size <= _MAX_ARG_BYTES:
            raise ProtocolError(f"argument of {size} bytes")
        data = await reader.readexactly(size + 2)
        if data[-2:] != b"\r\n":
            raise ProtocolError("bulk string not followed by CRLF")
        args.append(data[:-2])
    return args


def _number(raw: bytes, what: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ProtocolError(f"bad {what} {raw[:20]!r}") from None


def bulk(data: bytes | None) -> bytes:
    return b"$-1\r\n" if data is None else b"$%d\r\n%b\r\n" % (len(data), data)


def error(message: str) -> bytes:
    return b"-ERR " + message.replace("\r", " ").replace("\n", " ").encode() + b"\r\n"


class BundleRepository:
    """Serves the bundles of one namespace's cache."""

    def __init__(self, cache: BundleCache, namespace: str) -> None:
        self.cache = cache
        self.namespace = namespace
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str = "0.0.0.0", port: int = REPOSITORY_PORT) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def names(self) -> list[str]:
        directory = self.cache.root / "names" / self.namespace
        return sorted(p.name for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []

    def bundle(self, name: str) -> bytes | None:
        try:
            found = self.cache.lookup(self.namespace, name)
        except BundleError:
            return None  # not a plain file name: never a bundle
        return Path(found.path).read_bytes() if found is not None else None

    def answer(self, args: list[bytes]) -> bytes:
        if not args:
            return error("empty command")
        command, rest = args[0].upper(), args[1:]
        if command == b"PING":
            return b"+PONG\r\n" if not rest else bulk(rest[0])
        if command not in (b"HGET", b"HEXISTS", b"HKEYS"):
            return error(
                f"unknown command '{args[0][:32].decode(errors='replace')}' (read-only bundle repository)"
            )
        wanted = 1 if command == b"HKEYS" else 2
        if len(rest) != wanted:
            return error(f"wrong number of arguments for '{command.decode().lower()}' command")
        if rest[0] != HASH:
            return b"*0\r\n" if command == b"HKEYS" else (b":0\r\n" if command == b"HEXISTS" else bulk(None))
        if command == b"HKEYS":
            names = self.names()
            return b"*%d\r\n" % len(names) + b"".join(bulk(n.encode()) for n in names)
        name = rest[1].decode(errors="replace")
        if command == b"HEXISTS":
            return b":1\r\n" if self.bundle(name) is not None else b":0\r\n"
        return bulk(self.bundle(name))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (args := await read_command(reader)) is not None:
                writer.write(await asyncio.to_thread(self.answer, args))
                await writer.drain()
        except ProtocolError as err:
            writer.write(error(f"Protocol error: {err}"))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("bundle repository: request failed")
        finally:
            writer.close()
