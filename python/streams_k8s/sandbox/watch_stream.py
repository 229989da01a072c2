"""A watch served over HTTP: the registry's watcher streamed as chunked JSON lines, with bookmarks
while idle, the server's timeout, and the watch faults (drop, expire, end, stall) acted out on the
connection."""

from __future__ import annotations

import asyncio
import contextlib

import orjson
from aiohttp import web

from streams_k8s.sandbox.authn import IDENTITY
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.http_bodies import JSON, selectors, wants_table
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import parse_field_selector
from streams_k8s.sandbox.store import Watcher
from streams_k8s.sandbox.table import TableRows, include_object

# Real API servers close watches after a randomised timeout of at least 30 minutes.
_DEFAULT_WATCH_TIMEOUT = 1800.0


async def serve_watch(
    request: web.Request,
    registry: Registry,
    rt: ResourceType,
    version: str,
    ns: str | None,
    name: str | None,
    bookmark_interval: float,
) -> web.StreamResponse:
    query = request.query
    labels, fields = selectors(request, registry, rt)
    if name is not None:  # legacy /watch/.../{name}: a field selector on the name
        by_name = parse_field_selector(f"metadata.name={name}", (), rt.kind)
        fields = by_name if fields is None else (lambda o, a=fields, b=by_name: a(o) and b(o))
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    send_initial = query.get("sendInitialEvents") == "true"
    since = query.get("resourceVersion")
    if send_initial:
        since = None
    timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else _DEFAULT_WATCH_TIMEOUT
    rows = None
    if wants_table(request):
        rows = TableRows(rt, version, include_object(query), registry.converter(rt))
    watcher = registry.watch(rt, version, ns, labels, fields, since, send_initial and bookmarks, rows)
    watcher.user = request[IDENTITY].user if IDENTITY in request else ""
    response = web.StreamResponse(headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
        deadline = asyncio.get_running_loop().time() + timeout
        interval = bookmark_interval if bookmarks else None
        await _stream(request, response, registry, watcher, deadline, interval)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        registry.unwatch(watcher)
    return response


async def _stream(
    request: web.Request,
    response: web.StreamResponse,
    registry: Registry,
    watcher: Watcher,
    deadline: float,
    bookmark_interval: float | None,
) -> None:
    """Write the watcher's events until the deadline or a fault ends the stream; a bookmark every
    `bookmark_interval` seconds of quiet (None: the client did not ask for bookmarks)."""
    loop = asyncio.get_running_loop()
    queue = watcher.queue
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        wait = remaining if bookmark_interval is None else min(remaining, bookmark_interval)
        try:
            item = await asyncio.wait_for(queue.get(), wait)
        except TimeoutError:
            if bookmark_interval is not None and loop.time() < deadline and watcher.control != "stall":
                await response.write(registry.bookmark(watcher))
            continue
        chunks: list[bytes] = []
        while True:
            if isinstance(item, str):
                if chunks:
                    await response.write(b"".join(chunks))
                    chunks = []
                if not await _act_out(request, response, watcher, item, deadline):
                    return
            else:
                chunks.append(item)
            if queue.empty():
                break
            item = queue.get_nowait()
        if chunks:
            await response.write(b"".join(chunks))
    await response.write_eof()


async def _act_out(
    request: web.Request, response: web.StreamResponse, watcher: Watcher, action: str, deadline: float
) -> bool:
    """Apply a fault to a watch stream; False ends the stream."""
    if action == "drop":
        if request.transport is not None:
            request.transport.close()
        return False
    if action == "expire":
        status = ApiError(410, "too old resource version (injected)", reason="Expired").status()
        await response.write(orjson.dumps({"type": "ERROR", "object": status}) + b"\n")
        await response.write_eof()
        return False
    if action == "end":
        await response.write_eof()
        return False
    if action == "stall":
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watcher.flowing.wait(), deadline - asyncio.get_running_loop().time())
        return watcher.control != "drop"
    return True  # "resume"
