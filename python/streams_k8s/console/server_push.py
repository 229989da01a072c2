"""Server-sent events: a page's view, pushed again whenever the objects behind it change.

One stream per open page. It sends the view's snapshot at once, then waits on its
`Subscription`; when a change touches the view (its job, or its namespace for a namespace-wide
change) it waits a moment for the rest of the burst, computes the snapshot again and sends it if
it differs from the last one sent. A comment line every ``KEEPALIVE`` seconds keeps proxies from
closing an idle stream and lets the server notice a closed page. A snapshot of None (the job is
gone, or the viewer may no longer see it) ends the stream with a ``gone`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web

from streams_k8s.console.live import LiveCluster
from streams_k8s.console.live_snapshots import Snapshot
from streams_k8s.k8s.objects import ObjectKey

KEEPALIVE = 15.0
COALESCE = 0.05  # seconds: a pod deletion touches the pod, its PE and the Job within this
Compute = Callable[[], Awaitable[Snapshot | None]]
Relevant = Callable[[ObjectKey], bool]
# The view's parts as HTML by element id: the page swaps them in (one renderer, the server's).
Render = Callable[[Snapshot], dict[str, str]]


def _frame(event: str, data: object) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


async def stream(
    request: web.Request, live: LiveCluster, compute: Compute, relevant: Relevant, render: Render
) -> web.StreamResponse:
    """Serve one SSE stream of the view ``compute`` makes (see module docs)."""
    subscription = live.subscribe()  # before the first snapshot: no change can fall between
    try:
        first = await compute()
        if first is None:
            what = request.path.removeprefix("/api/stream")
            raise web.HTTPNotFound(text=f"{what} not found (or you may not see it)")
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # nginx: do not buffer the stream
            }
        )
        await response.prepare(request)
        await response.write(_frame("snapshot", {"snapshot": first, "panels": render(first)}))
        last = first
        while True:
            try:
                changes = await asyncio.wait_for(subscription.next_changes(), KEEPALIVE)
            except TimeoutError:
                await response.write(b": keepalive\n\n")
                continue
            if not any(relevant(key) for key in changes):
                continue
            await asyncio.sleep(COALESCE)
            snapshot = await compute()
            if snapshot is None:
                await response.write(_frame("gone", {}))
                break
            if snapshot != last:
                await response.write(_frame("snapshot", {"snapshot": snapshot, "panels": render(snapshot)}))
                last = snapshot
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
    except ConnectionResetError:
        pass  # the page closed: nothing to answer
    finally:
        live.unsubscribe(subscription)
    return response
