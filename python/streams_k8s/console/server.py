"""The console's HTTP server: pages, their JSON, their push streams and the job graph.

Every view has three addresses: the page (``/jobs/<ns>/<name>``), its data
(``/api/jobs/<ns>/<name>``) and its stream of changes (``/api/stream/jobs/<ns>/<name>``);
likewise ``/jobs``, ``/jobs/<ns>/<name>/pes/<id>`` and ``/namespaces/<ns>/events``. The graph
is ``/jobs/<ns>/<name>/graph.svg``. Everything is read from the informer caches, filtered by
what the viewer may see (`server_access`), and read-only: no route changes the cluster.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler

from streams_k8s.console import views
from streams_k8s.console.live import NO_JOB, LiveCluster
from streams_k8s.console.live_flow import FlowSource
from streams_k8s.console.live_plans import JobPlans, PlanJob, PlanUnavailable, applied_widths
from streams_k8s.console.live_snapshots import (
    Snapshot,
    events_snapshot,
    job_snapshot,
    jobs_snapshot,
    pe_snapshot,
)
from streams_k8s.console.server_access import TOKEN_COOKIE, AuthMode, Refused, Viewers
from streams_k8s.console.server_push import stream
from streams_k8s.k8s.http_errors import json_error, json_errors
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.k8s.reviews import AccessReviewer, Review, TokenReviewer

_OPEN = ("/login", "/healthz")
VIEWER: web.RequestKey[Review | None] = web.RequestKey("viewer")


@dataclass(frozen=True, slots=True)
class _View:
    """One view: how to compute its snapshot for a viewer, and which changes touch it."""

    compute: Callable[[Review | None], Awaitable[Snapshot | None]]
    relevant: Callable[[ObjectKey], bool]


class Console:
    def __init__(self, live: LiveCluster, plans: JobPlans, viewers: Viewers) -> None:
        self.live, self.plans, self.viewers = live, plans, viewers

    def app(self) -> web.Application:
        app = web.Application(middlewares=[json_errors, self._authenticate])
        page, data, push = self._page, self._data, self._push
        for path, view in (
            ("/jobs", self._jobs),
            ("/jobs/{namespace}/{name}", self._job),
            ("/jobs/{namespace}/{name}/pes/{pe}", self._pe),
            ("/namespaces/{namespace}/events", self._events),
        ):
            app.router.add_get(path, page(view))
            app.router.add_get("/api" + path, data(view))
            app.router.add_get("/api/stream" + path, push(view))
        app.router.add_get("/", self._root)
        app.router.add_get("/jobs/{namespace}/{name}/graph.svg", self._graph)
        app.router.add_get("/login", self._login_form)
        app.router.add_post("/login", self._login)
        app.router.add_post("/logout", self._logout)
        app.router.add_get("/healthz", self._healthz)
        return app

    # --- access ---------------------------------------------------------------------------

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in _OPEN or request.match_info.http_exception is not None:
            return await handler(request)
        try:
            request[VIEWER] = await self.viewers.viewer(request)
        except Refused as refused:
            if request.path.startswith("/api/"):
                headers = {"WWW-Authenticate": 'Bearer realm="streams-k8s console"'}
                return json_error(401, "Unauthorized", refused.message, headers)
            return web.Response(status=401, text=views.login_page(refused.message), content_type="text/html")
        return await handler(request)

    async def _visible(self, viewer: Review | None, namespace: str) -> bool:
        return await self.viewers.may_see(viewer, namespace)

    # --- views ----------------------------------------------------------------------------

    def _jobs(self, request: web.Request) -> _View:
        async def compute(viewer: Review | None) -> Snapshot:
            return jobs_snapshot(self.live, await self.viewers.visible(viewer, self.live.namespaces()))

        return _View(compute, lambda key: True)

    def _job(self, request: web.Request) -> _View:
        namespace, name = request.match_info["namespace"], request.match_info["name"]

        async def compute(viewer: Review | None) -> Snapshot | None:
            visible = await self._visible(viewer, namespace)
            return job_snapshot(self.live, namespace, name) if visible else None

        return _View(compute, lambda key: key in (ObjectKey(namespace, name), ObjectKey(namespace, NO_JOB)))

    def _pe(self, request: web.Request) -> _View:
        namespace, name, pe = (request.match_info[k] for k in ("namespace", "name", "pe"))

        async def compute(viewer: Review | None) -> Snapshot | None:
            visible = await self._visible(viewer, namespace)
            return pe_snapshot(self.live, namespace, name, pe) if visible else None

        return _View(compute, lambda key: key in (ObjectKey(namespace, name), ObjectKey(namespace, NO_JOB)))

    def _events(self, request: web.Request) -> _View:
        namespace = request.match_info["namespace"]

        async def compute(viewer: Review | None) -> Snapshot | None:
            return events_snapshot(self.live, namespace) if await self._visible(viewer, namespace) else None

        return _View(compute, lambda key: key.namespace == namespace)

    # --- the three ways to read a view ----------------------------------------------------

    @staticmethod
    async def _snapshot(request: web.Request, view: _View) -> Snapshot:
        snapshot = await view.compute(request[VIEWER])
        if snapshot is None:
            raise web.HTTPNotFound(
                text=f"{request.path.removeprefix('/api')} not found (or you may not see it)"
            )
        return snapshot

    def _page(self, make: Callable[[web.Request], _View]) -> Handler:
        async def page(request: web.Request) -> web.StreamResponse:
            snapshot = await self._snapshot(request, make(request))
            return web.Response(text=views.page(snapshot, request.path), content_type="text/html")

        return page

    def _data(self, make: Callable[[web.Request], _View]) -> Handler:
        async def data(request: web.Request) -> web.StreamResponse:
            snapshot = await self._snapshot(request, make(request))
            return web.Response(body=orjson.dumps(snapshot), content_type="application/json")

        return data

    def _push(self, make: Callable[[web.Request], _View]) -> Handler:
        async def push(request: web.Request) -> web.StreamResponse:
            view, viewer = make(request), request[VIEWER]
            return await stream(request, self.live, lambda: view.compute(viewer), view.relevant, views.panels)

        return push

    # --- the graph, login, health ---------------------------------------------------------

    async def _graph(self, request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        snapshot = job_snapshot(self.live, namespace, name)
        job = self.live.job(namespace, name)
        if job is None or snapshot is None or not await self._visible(request[VIEWER], namespace):
            raise web.HTTPNotFound(text=f"job {namespace}/{name} not found (or you may not see it)")
        widths = applied_widths(self.live.of_job(self.live.parallel_regions, namespace, name))
        try:
            plan = await self.plans.plan(job, widths)
        except PlanUnavailable as err:
            return json_error(503, "PlanUnavailable", str(err))
        svg = views.graph_svg(plan, snapshot["health"])
        return web.Response(
            text=svg, content_type="image/svg+xml", headers={"X-Graph-Version": snapshot["graph"]}
        )

    async def _root(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound("/jobs")

    async def _login_form(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text=views.login_page(""), content_type="text/html")

    async def _login(self, request: web.Request) -> web.StreamResponse:
        if self.viewers.mode is AuthMode.NONE:
            raise web.HTTPFound("/jobs")
        token = str((await request.post()).get("token") or "").strip()
        response = web.HTTPFound("/jobs")
        secure = request.secure
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict", secure=secure, path="/")
        raise response

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        response = web.HTTPFound("/login")
        response.del_cookie(TOKEN_COOKIE, path="/")
        raise response

    async def _healthz(self, request: web.Request) -> web.StreamResponse:
        synced = self.live.synced()
        return web.json_response({"synced": synced}, status=200 if synced else 503)


@dataclass
class ConsoleServer:
    """A started console: where it listens, and how to stop it."""

    runner: web.AppRunner
    port: int

    async def stop(self) -> None:
        await self.runner.cleanup()


async def serve_console(
    manager: Manager,
    plan_job: PlanJob,
    *,
    host: str,
    port: int,
    auth: AuthMode,
    flow: FlowSource | None = None,
) -> ConsoleServer:
    """Declare the console's informers on ``manager`` (shared with its controllers) and serve it.

    Call before ``manager.run()`` so that the informers start with the others; the pages answer
    from the caches as soon as they are synced (``/healthz`` says when). ``flow``: the jobs' flows
    (the operator's reading of its PEs), drawn by the job page's flow scheme."""
    client = manager.client
    tokens = TokenReviewer(client) if auth is AuthMode.TOKEN else None
    access = AccessReviewer(client) if auth is AuthMode.TOKEN else None
    console = Console(LiveCluster(manager, flow), JobPlans(plan_job), Viewers(auth, tokens, access))
    runner = web.AppRunner(console.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return ConsoleServer(runner, int(runner.addresses[0][1]))
