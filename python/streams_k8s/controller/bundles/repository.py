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

A PE pod gets the build its job was submitted with, not whatever was last fetched under that
name: the request's source address is looked up among the pods (`PodsByAddress`), and the
pod's Job's `status.bundleDigest` names the content (`pinned_by_pod`). Another job re-fetching
`app.sab` under `pullPolicy: Always` (a new build, say) then cannot change the code a restarted PE
of an older job runs. Requests from elsewhere (redis-cli in a debug pod; a proxy or mesh that
hides the source address) get the bundle by name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from streams_k8s.api.contract import JOB_LABEL, REPOSITORY_PORT
from streams_k8s.controller.bundles.fetch import DIGEST, BundleCache, BundleError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import ObjectKey, meta
from streams_k8s.k8s.pod_addresses import PodsByAddress

log = logging.getLogger(__name__)

HASH = b"apps"
_MAX_ARGS = 16
_MAX_ARG_BYTES = 64 * 1024

# The content a peer gets for a bundle name: (peer address, bundle name) -> sha256 digest, or None
# to serve the bundle by name.
PinnedDigest = Callable[[str, str], str | None]


def pinned_by_pod(pods: PodsByAddress, jobs: Informer) -> PinnedDigest:
    """The digest a Job recorded at submission, for requests from the pods of its PEs."""

    def pinned(peer: str, name: str) -> str | None:
        for pod in pods.at(peer):
            m = meta(pod)
            job_name = (m.get("labels") or {}).get(JOB_LABEL)
            if not job_name:
                continue
            job = jobs.store.get(ObjectKey(str(m.get("namespace")), job_name))
            if job is None or ((job.get("spec") or {}).get("bundle") or {}).get("name") != name:
                return None
            digest = str((job.get("status") or {}).get("bundleDigest") or "")
            return digest if DIGEST.match(digest) else None
        return None

    return pinned


# The namespace whose bundles a peer sees by name: (peer address) -> namespace.
NamespaceOf = Callable[[str], str]


def namespace_by_pod(pods: PodsByAddress, default: str) -> NamespaceOf:
    """A PE pod's own namespace (the operator may watch several), else ``default``."""

    def namespace_of(peer: str) -> str:
        return pods.namespace_at(peer) or default

    return namespace_of


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
    """Serves the bundles of a namespace's cache: ``namespace``'s, or the one it names for a peer."""

    def __init__(
        self, cache: BundleCache, namespace: str | NamespaceOf, pinned: PinnedDigest | None = None
    ) -> None:
        self.cache = cache
        self.namespace_of: NamespaceOf = namespace if callable(namespace) else lambda peer: namespace
        self.pinned = pinned
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

    def names(self, peer: str = "") -> list[str]:
        directory = self.cache.root / "names" / self.namespace_of(peer)
        return sorted(p.name for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []

    def bundle_path(self, name: str, peer: str) -> Path | None:
        """Where the bundle this peer gets is (see the module docs), if the cache has it."""
        digest = self.pinned(peer, name) if self.pinned is not None else None
        if digest is not None:
            found = self.cache.content(name, digest)
            if found is None:  # never another build: the job controller re-fetches it by digest
                log.warning("bundle repository: %s sha256 %s for %s is not cached", name, digest, peer)
            return found.path if found is not None else None
        try:
            found = self.cache.lookup(self.namespace_of(peer), name)
        except BundleError:
            return None  # not a plain file name: never a bundle
        return found.path if found is not None else None

    async def answer(self, args: list[bytes], peer: str = "") -> bytes:
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
            names = self.names(peer)
            return b"*%d\r\n" % len(names) + b"".join(bulk(n.encode()) for n in names)
        path = self.bundle_path(rest[1].decode(errors="replace"), peer)
        if command == b"HEXISTS":
            return b":1\r\n" if path is not None else b":0\r\n"
        return bulk(await asyncio.to_thread(path.read_bytes) if path is not None else None)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = str((writer.get_extra_info("peername") or ("",))[0])
        try:
            while (args := await read_command(reader)) is not None:
                writer.write(await self.answer(args, peer))
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
