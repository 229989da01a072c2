"""Liveness, readiness and Prometheus metrics over HTTP (aiohttp).

``/healthz`` (alias ``/livez``) and ``/readyz`` answer 200 or 503 with a JSON body listing the
problems, and the warnings (what is wrong but fails neither check: a failing API server) if any;
``/metrics`` serves the registry. With equal ports one listener serves all three.
Any other answer is JSON too (``http_errors``): an unknown path is a JSON 404, a failing check a
JSON 500.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from streams_k8s.k8s.http_errors import json_errors

Check = Callable[[], list[str]]


def _answer(problems: list[str], warnings: list[str]) -> web.Response:
    body: dict[str, object] = {"status": "failing", "problems": problems} if problems else {"status": "ok"}
    if warnings:
        body["warnings"] = warnings
    return web.Response(
        body=orjson.dumps(body), status=200 if not problems else 503, content_type="application/json"
    )


class HealthServer:
    def __init__(
        self,
        *,
        liveness: Check,
        readiness: Check,
        warnings: Check = list,
        registry: CollectorRegistry,
        host: str = "0.0.0.0",
        health_port: int = 8081,
        metrics_port: int = 8080,
    ) -> None:
        self.liveness, self.readiness, self.warnings, self.registry = liveness, readiness, warnings, registry
        self.host = host
        self.health_port, self.metrics_port = health_port, metrics_port
        self._runners: list[web.AppRunner] = []

    async def _healthz(self, _: web.Request) -> web.Response:
        return _answer(self.liveness(), self.warnings())

    async def _readyz(self, _: web.Request) -> web.Response:
        return _answer(self.readiness(), self.warnings())

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    def _health_routes(self) -> list[web.RouteDef]:
        return [
            web.get("/healthz", self._healthz),
            web.get("/livez", self._healthz),
            web.get("/readyz", self._readyz),
        ]

    async def start(self) -> None:
        """Listen; ports given as 0 are replaced by the ports actually bound."""
        if self.health_port == self.metrics_port:
            groups = [(self.health_port, [*self._health_routes(), web.get("/metrics", self._metrics)])]
        else:
            groups = [
                (self.health_port, self._health_routes()),
                (self.metrics_port, [web.get("/metrics", self._metrics)]),
            ]
        bound: list[int] = []
        for port, routes in groups:
            app = web.Application(middlewares=[json_errors])
            app.add_routes(routes)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, self.host, port)
            await site.start()
            self._runners.append(runner)
            bound.append(int(runner.addresses[0][1]))
        self.health_port = bound[0]
        self.metrics_port = bound[-1]

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
