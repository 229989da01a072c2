"""`/_sandbox/...`: the HTTP form of the sandbox's fault injection and assertions, for clients
outside the test's process (fault rules, cluster changes, deletes behind the controller's back,
the request log)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from streams_k8s.sandbox.cluster.cluster import SimulatedCluster
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.faults import Faults
from streams_k8s.sandbox.http_bodies import json_response
from streams_k8s.sandbox.server import ApiServer

# Sandbox.delete_behind: (resource, name, namespace, group, force).
DeleteBehind = Callable[[str, str, str | None, str, bool], None]


class ControlEndpoints:
    """Serves the control paths (the API server hands it every `/_sandbox/` request)."""

    def __init__(
        self, faults: Faults, cluster: SimulatedCluster | None, server: ApiServer, delete_behind: DeleteBehind
    ) -> None:
        self.faults = faults
        self.cluster = cluster
        self.server = server
        self.delete_behind = delete_behind

    async def __call__(self, path: str, request: web.Request) -> web.StreamResponse:
        """`/_sandbox/...`: the HTTP form of fault injection and assertions."""
        if path == "faults" and request.method == "POST":
            return json_response(self.faults.apply(await request.json()))
        if path == "faults" and request.method == "DELETE":
            self.faults.clear()
            return json_response({"rules": 0})
        if path == "cluster" and request.method == "POST" and self.cluster is not None:
            return json_response(self.cluster.apply(await request.json()) or {})
        if path == "delete" and request.method == "POST":
            spec = await request.json()
            self.delete_behind(
                spec["resource"],
                spec["name"],
                spec.get("namespace"),
                spec.get("group", ""),
                bool(spec.get("force")),
            )
            return json_response({"deleted": spec["name"]})
        if path == "requests" and request.method == "GET":
            return json_response(
                [
                    {
                        "time": r.time,
                        "method": r.method,
                        "path": r.path,
                        "query": r.query,
                        "status": r.status,
                        "verb": r.info.verb if r.info else None,
                    }
                    for r in self.server.requests
                ]
            )
        raise ApiError(404, f"unknown sandbox control endpoint /_sandbox/{path}")
