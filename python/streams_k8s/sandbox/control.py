"""`/_sandbox/...`: the HTTP form of the sandbox's fault injection and assertions, for clients
outside the test's process (fault rules, cluster changes, deletes behind the controller's back,
the request log)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from streams_k8s.k8s.errors import ApiError as ClientError
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
        self,
        faults: Faults,
        cluster: Callable[[], SimulatedCluster | None],
        server: ApiServer,
        delete_behind: DeleteBehind,
    ) -> None:
        self.faults = faults
        self.cluster = cluster  # None until the simulation runs, or without one
        self.server = server
        self.delete_behind = delete_behind

    async def _cluster_action(self, request: web.Request) -> web.StreamResponse:
        cluster = self.cluster()
        if cluster is None:
            raise ApiError(404, "this sandbox runs no simulated cluster")
        spec = await request.json()
        try:
            return json_response(await cluster.apply(spec if isinstance(spec, dict) else {}) or {})
        except ClientError as err:  # what the API server answered the simulation
            raise ApiError(err.status or 500, err.message or str(err)) from None
        except (ValueError, KeyError, TypeError) as err:
            raise ApiError(400, f"cluster action refused: {err}") from None

    async def __call__(self, path: str, request: web.Request) -> web.StreamResponse:
        """`/_sandbox/...`: the HTTP form of fault injection and assertions."""
        if path == "faults" and request.method == "POST":
            return json_response(self.faults.apply(await request.json()))
        if path == "faults" and request.method == "DELETE":
            self.faults.clear()
            return json_response({"rules": 0})
        if path == "cluster" and request.method == "POST":
            return await self._cluster_action(request)
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
                        "user": r.user,
                    }
                    for r in self.server.requests
                ]
            )
        raise ApiError(404, f"unknown sandbox control endpoint /_sandbox/{path}")
