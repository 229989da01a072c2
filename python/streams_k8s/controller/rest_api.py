"""The instance REST API the PE runtime calls (aiohttp, port 10000; OpenAPI at /api/openapi.json).

- `GET /api/state/job/by-id/{id}/name`: the Job's name (text/plain), to resolve PE port labels.
- `GET|PUT /api/state/job/{job}/pe/{pe}/connectivity`: a JSON string `"Full"|"Partial"|"None"`;
  PUT writes the PE's `status.connectivity` and answers 204. The PE's first report after its pod
  started also records the pod as running, in the same write (`pod_lifecycle.started_status`).
- `GET|PUT /api/state/job/{job}/pr/{alias}/width`: a JSON integer from 1 to 1,000, the region's
  `spec.width`; PUT sets it (204; the job controller re-fuses the job).
- `GET /api/endpoints/job/{job}/pe/{pe}`: the PE Service's ports by name.
- `GET /api/endpoints/job/{job}/endpoint/{ep}`: `{canonicalName, port, protocol}` of port `usr-<ep>`.
- `PUT|DELETE /api/endpoints/job/{job}/pe/{pe}/endpoint/{ep}`: add or remove port `usr-<ep>` on the
  PE's headless Service (port and targetPort, never a nodePort); 204.
- `/api/subscriptions/job/{job}/pe/{pe}`: the PE's import/export board, its Export and Import specs,
  export properties and import filter/streams (routes and formats in `subscription_api`).

Jobs are looked up in the controller's namespace, or in every namespace when it watches all (a
name found in several is a 409: run one controller per namespace then). Unknown jobs, PEs and
endpoints are 404, malformed input 400, all with a JSON body `{"status", "reason", "message"}`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from streams_k8s.api.parallel_region import MAX_WIDTH
from streams_k8s.api.processing_element import Connectivity, ProcessingElement
from streams_k8s.controller import labels
from streams_k8s.controller.kinds import PARALLEL_REGIONS, PES, SERVICES
from streams_k8s.controller.pod_lifecycle import PENDING, pod_phase, started_status
from streams_k8s.controller.pods_by_owner import PodsByOwner
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta
from streams_k8s.naming import pe_service_name

USER_PORT_PREFIX = "usr-"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ID = re.compile(r"^[0-9]{1,19}$")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_MAX_BODY = 64 * 1024
_EDIT_ATTEMPTS = 5
# How long a connectivity report waits for the pod cache to show its pod running: the watch lags
# by far less, and the runtime's HTTP calls time out after about a second.
REPORT_SETTLE = 0.5


class RestError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def _error(status: int, reason: str, message: str) -> web.Response:
    body = {"status": status, "reason": reason, "message": message}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def json_response(value: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(value), content_type="application/json")


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except RestError as err:
        return _error(err.status, err.reason, err.message)
    except web.HTTPException as err:  # unknown path or method: still JSON
        return _error(err.status, err.reason, err.text or err.reason)
    except ApiError as err:
        status = 503 if err.retryable else 502
        return _error(status, "KubernetesApiError", f"the Kubernetes API answered: {err}")


class InstanceRestApi:
    def __init__(
        self,
        client: KubeClient,
        jobs: Informer,
        pes: Informer,
        services: Informer,
        namespace: str | None,
        parallel_regions: Informer | None = None,
        pods: PodsByOwner | None = None,
    ) -> None:
        self.client = client
        self.jobs, self.pes, self.services = jobs, pes, services
        self.parallel_regions = parallel_regions
        self.pods = pods
        self.namespace = namespace

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_errors], client_max_size=_MAX_BODY)
        app.router.add_get("/api/openapi.json", self.openapi)
        app.router.add_get("/api/state/job/by-id/{id}/name", self.job_name)
        app.router.add_get("/api/state/job/{job}/pe/{pe}/connectivity", self.get_connectivity)
        app.router.add_put("/api/state/job/{job}/pe/{pe}/connectivity", self.put_connectivity)
        if self.parallel_regions is not None:
            app.router.add_get("/api/state/job/{job}/pr/{alias}/width", self.get_width)
            app.router.add_put("/api/state/job/{job}/pr/{alias}/width", self.put_width)
        app.router.add_get("/api/endpoints/job/{job}/pe/{pe}", self.pe_ports)
        app.router.add_get("/api/endpoints/job/{job}/endpoint/{ep}", self.get_endpoint)
        app.router.add_put("/api/endpoints/job/{job}/pe/{pe}/endpoint/{ep}", self.put_endpoint)
        app.router.add_delete("/api/endpoints/job/{job}/pe/{pe}/endpoint/{ep}", self.delete_endpoint)
        return app

    # --- lookups --------------------------------------------------------------------------

    def _in_scope(self, obj: Object) -> bool:
        return self.namespace is None or meta(obj).get("namespace") == self.namespace

    def _one(self, found: list[Object], what: str) -> Object:
        if not found:
            raise RestError(404, "NotFound", f"{what} not found")
        if len(found) > 1:
            spaces = sorted(str(meta(o).get("namespace")) for o in found)
            raise RestError(409, "Ambiguous", f"{what} exists in namespaces {', '.join(spaces)}")
        return found[0]

    def _job(self, name: str) -> Object:
        if not _NAME.match(name):
            raise RestError(400, "BadRequest", f"'{name}' is not a job name")
        found = [j for j in self.jobs.store.select() if meta(j).get("name") == name and self._in_scope(j)]
        return self._one(found, f"job '{name}'")

    def lookup_pe(self, job_name: str, pe: str) -> tuple[Object, Object]:
        job = self._job(job_name)
        if not _ID.match(pe):
            raise RestError(400, "BadRequest", f"'{pe}' is not a PE id")
        namespace = str(meta(job).get("namespace"))
        obj = self.pes.store.get(ObjectKey(namespace, pe_service_name(job_name, int(pe))))
        if obj is None:
            raise RestError(404, "NotFound", f"job '{job_name}' has no PE {pe}")
        return job, obj

    @staticmethod
    async def _body(request: web.Request) -> Any:
        try:
            return orjson.loads(await request.read())
        except orjson.JSONDecodeError as err:
            raise RestError(400, "BadRequest", f"the body is not JSON: {err}") from None

    # --- /api/state -----------------------------------------------------------------------

    async def job_name(self, request: web.Request) -> web.Response:
        raw = request.match_info["id"]
        if not _ID.match(raw):
            raise RestError(400, "BadRequest", f"'{raw}' is not a job id")
        job_id = int(raw)
        found = [
            j
            for j in self.jobs.store.select()
            if (j.get("status") or {}).get("id") == job_id and self._in_scope(j)
        ]
        return web.Response(text=str(meta(self._one(found, f"job id {job_id}"))["name"]))

    async def get_connectivity(self, request: web.Request) -> web.Response:
        _, pe = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        return json_response((pe.get("status") or {}).get("connectivity", Connectivity.NONE.value))

    async def put_connectivity(self, request: web.Request) -> web.Response:
        _, pe = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        value = await self._body(request)
        allowed = [c.value for c in Connectivity]
        if value not in allowed:
            raise RestError(400, "BadRequest", f"connectivity must be one of {allowed} as a JSON string")
        m = meta(pe)
        name, namespace = str(m["name"]), str(m["namespace"])
        started = await self._started_status(pe)
        try:
            if started is not None:
                # Conditional: the pod facts were read against this version of the PE.
                status = {**started, "connectivity": value}
                patch = {"metadata": {"resourceVersion": m.get("resourceVersion")}, "status": status}
                try:
                    await self.client.patch(PES, name, patch, namespace, subresource="status")
                    return web.Response(status=204)
                except ApiError as err:
                    if not err.conflict:
                        raise  # else the PE moved on: the controller records its pod itself
            if started is not None or (pe.get("status") or {}).get("connectivity") != value:
                await self.client.patch_status(PES, name, {"connectivity": value}, namespace)
        except ApiError as err:
            if err.not_found:
                raise RestError(404, "NotFound", f"PE {name} no longer exists") from None
            raise
        return web.Response(status=204)

    async def _started_status(self, pe: Object) -> dict[str, Any] | None:
        """The record of a just-started pod, when this report can carry it (see `pod_lifecycle`)."""
        if self.pods is None:
            return None
        # A report comes from a running pod; the pod watch may not have shown it running yet.
        pods = await self.pods.live_pe_pods_when(
            str(meta(pe).get("uid")), lambda ps: any(pod_phase(p) != PENDING for p in ps), REPORT_SETTLE
        )
        return started_status(ProcessingElement.from_wire(pe), pods) if pods else None

    def _region(self, request: web.Request) -> Object:
        assert self.parallel_regions is not None
        job_name, alias = request.match_info["job"], request.match_info["alias"]
        namespace = str(meta(self._job(job_name)).get("namespace"))
        found = [
            pr
            for pr in self.parallel_regions.store.select_by_labels({labels.JOB: job_name}, namespace)
            if (pr.get("spec") or {}).get("alias") == alias
        ]
        return self._one(found, f"parallel region '{alias}' of job '{job_name}'")

    async def get_width(self, request: web.Request) -> web.Response:
        """The parallel region's ``spec.width``: the width asked for (status says when it runs so)."""
        return json_response((self._region(request).get("spec") or {}).get("width"))

    async def put_width(self, request: web.Request) -> web.Response:
        """Set a parallel region's ``spec.width`` (the job controller re-fuses the job)."""
        region = self._region(request)
        width = await self._body(request)
        if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIDTH:
            raise RestError(400, "BadRequest", f"the width must be a JSON integer from 1 to {MAX_WIDTH}")
        name, namespace = str(meta(region)["name"]), str(meta(region)["namespace"])
        await self.client.patch(PARALLEL_REGIONS, name, {"spec": {"width": width}}, namespace)
        return web.Response(status=204)

    # --- /api/endpoints -------------------------------------------------------------------

    def _service(self, job: Object, pe_id: str) -> Object:
        namespace, name = str(meta(job)["namespace"]), str(meta(job)["name"])
        service = self.services.store.get(ObjectKey(namespace, pe_service_name(name, int(pe_id))))
        if service is None:
            raise RestError(404, "NotFound", f"job '{name}' has no Service for PE {pe_id}")
        return service

    async def pe_ports(self, request: web.Request) -> web.Response:
        job, _ = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        service = self._service(job, request.match_info["pe"])
        return json_response({p["name"]: p for p in (service.get("spec") or {}).get("ports") or ()})

    async def get_endpoint(self, request: web.Request) -> web.Response:
        job = self._job(request.match_info["job"])
        port_name = self._port_name(request.match_info["ep"])
        namespace, name = str(meta(job)["namespace"]), str(meta(job)["name"])
        for service in self.services.store.select_by_labels({labels.JOB: name}, namespace):
            for port in (service.get("spec") or {}).get("ports") or ():
                if port.get("name") == port_name:
                    info = {
                        "canonicalName": f"{meta(service)['name']}.{namespace}",
                        "port": port["port"],
                        "protocol": port.get("protocol", "TCP"),
                    }
                    return json_response(info)
        raise RestError(404, "NotFound", f"job '{name}' has no endpoint '{request.match_info['ep']}'")

    @staticmethod
    def _port_name(endpoint: str) -> str:
        name = f"{USER_PORT_PREFIX}{endpoint}"
        if not _NAME.match(endpoint) or len(name) > 15:
            raise RestError(
                400,
                "BadRequest",
                f"endpoint '{endpoint}' must be lower-case letters, digits and '-' and at most "
                f"{15 - len(USER_PORT_PREFIX)} characters (it names the Service port '{name}')",
            )
        return name

    async def put_endpoint(self, request: web.Request) -> web.Response:
        job, _ = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        port_name = self._port_name(request.match_info["ep"])
        info = await self._body(request)
        if (
            not isinstance(info, dict)
            or not isinstance(info.get("port"), int)
            or isinstance(info["port"], bool)
        ):
            raise RestError(400, "BadRequest", "the body must be {canonicalName, port (integer), protocol}")
        port, protocol = info["port"], str(info.get("protocol") or "TCP").upper()
        if not 1 <= port <= 65535 or protocol not in _PROTOCOLS:
            raise RestError(400, "BadRequest", f"port must be 1-65535 and protocol one of {list(_PROTOCOLS)}")
        namespace, name = str(meta(job)["namespace"]), str(meta(job)["name"])
        own = pe_service_name(name, int(request.match_info["pe"]))
        for other in self.services.store.select_by_labels({labels.JOB: name}, namespace):
            ports = (other.get("spec") or {}).get("ports") or ()
            if meta(other)["name"] != own and any(p.get("name") == port_name for p in ports):
                raise RestError(
                    409, "AlreadyExists", f"endpoint '{request.match_info['ep']}' is on {meta(other)['name']}"
                )
        wanted = {"name": port_name, "port": port, "protocol": protocol, "targetPort": port}
        await self._edit_ports(
            namespace, own, lambda ports: [*(p for p in ports if p.get("name") != port_name), wanted]
        )
        return web.Response(status=204)

    async def delete_endpoint(self, request: web.Request) -> web.Response:
        job, _ = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        port_name = self._port_name(request.match_info["ep"])
        namespace, name = str(meta(job)["namespace"]), str(meta(job)["name"])
        service = self._service(job, request.match_info["pe"])
        if not any(p.get("name") == port_name for p in (service.get("spec") or {}).get("ports") or ()):
            raise RestError(
                404, "NotFound", f"PE {request.match_info['pe']} has no endpoint '{request.match_info['ep']}'"
            )
        own = pe_service_name(name, int(request.match_info["pe"]))
        await self._edit_ports(namespace, own, lambda ports: [p for p in ports if p.get("name") != port_name])
        return web.Response(status=204)

    async def _edit_ports(self, namespace: str, name: str, edit: Callable[[list[Any]], list[Any]]) -> None:
        try:
            service = await self.client.get(SERVICES, name, namespace)
        except ApiError as err:
            if err.not_found:
                raise RestError(404, "NotFound", f"Service {name} does not exist") from None
            raise
        await self.patch_retried(
            SERVICES, service, lambda s: {"spec": {"ports": edit(s["spec"].get("ports") or [])}}
        )

    async def patch_retried(
        self, resource: Resource, obj: Object, change: Callable[[Object], Object]
    ) -> None:
        """Merge-patch ``change(obj)``, conditional on the version it was computed from; on a
        conflict read the object again and recompute (a few times, then 409)."""
        namespace, name = str(meta(obj)["namespace"]), str(meta(obj)["name"])
        for _ in range(_EDIT_ATTEMPTS):
            patch = {**change(obj), "metadata": {"resourceVersion": meta(obj).get("resourceVersion")}}
            try:
                await self.client.patch(resource, name, patch, namespace)
                return
            except ApiError as err:
                if err.not_found:
                    raise RestError(404, "NotFound", f"{resource.kind} {name} no longer exists") from None
                if not err.conflict:
                    raise
            obj = await self.client.get(resource, name, namespace)
        raise RestError(409, "Conflict", f"{resource.kind} {name} kept changing; try again")

    # --- OpenAPI --------------------------------------------------------------------------

    async def openapi(self, request: web.Request) -> web.Response:
        return json_response(OPENAPI)


_ERROR_SCHEMA = {
    "type": "object",
    "required": ["status", "reason", "message"],
    "properties": {
        "status": {"type": "integer"},
        "reason": {"type": "string"},
        "message": {"type": "string"},
    },
}
_ENDPOINT = {
    "type": "object",
    "required": ["port"],
    "properties": {
        "canonicalName": {"type": "string"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "protocol": {"enum": list(_PROTOCOLS)},
    },
}
_CONNECTIVITY = {"enum": [c.value for c in Connectivity]}
_XML = {"application/xml": {"schema": {"type": "string"}}}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}


def _errors_for(*codes: int) -> dict[str, Any]:
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {
        str(code): {"description": text, **ref}
        for code, text in ((400, "malformed input"), (404, "unknown job, PE or endpoint"), (409, "conflict"))
        if code in codes
    }


def _param(name: str, pattern: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "pattern": pattern}}


_JOB, _PE, _EP = _param("job", _NAME.pattern), _param("pe", _ID.pattern), _param("ep", _NAME.pattern)
_PORT = _param("port", "^[0-9]{1,9}$")


def _read(summary: str, content: dict[str, Any]) -> dict[str, Any]:
    return {
        "summary": summary,
        "responses": {"200": {"description": summary, "content": content}, **_errors_for(400, 404)},
    }


def _write(summary: str, content: dict[str, Any], *codes: int) -> dict[str, Any]:
    return {
        "summary": summary,
        "requestBody": {"required": True, "content": content},
        "responses": {
            "204": {"description": "the Export or Import was patched"},
            **_errors_for(400, 404, *codes),
        },
    }


_SUBSCRIPTIONS = "/api/subscriptions/job/{job}/pe/{pe}"
_JSON_OBJECT = {"application/json": {"schema": {"type": "object"}}}
OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "streams-k8s instance API", "version": "1"},
    "paths": {
        "/api/state/job/by-id/{id}/name": {
            "get": {
                "summary": "Name of the job with this numeric id",
                "parameters": [_param("id", _ID.pattern)],
                "responses": {
                    "200": {
                        "description": "job name",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors_for(400, 404, 409),
                },
            }
        },
        "/api/state/job/{job}/pe/{pe}/connectivity": {
            "parameters": [_JOB, _PE],
            "get": {
                "summary": "Connectivity the PE last reported",
                "responses": {
                    "200": {
                        "description": "connectivity",
                        "content": {"application/json": {"schema": _CONNECTIVITY}},
                    },
                    **_errors_for(400, 404),
                },
            },
            "put": {
                "summary": "Report the PE's connectivity",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _CONNECTIVITY}}},
                "responses": {"204": {"description": "recorded in the PE status"}, **_errors_for(400, 404)},
            },
        },
        "/api/state/job/{job}/pr/{alias}/width": {
            "parameters": [
                _JOB,
                {"name": "alias", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "get": {
                "summary": "The parallel region's width (spec.width)",
                "responses": {
                    "200": {
                        "description": "width",
                        "content": {"application/json": {"schema": {"type": "integer", "minimum": 1}}},
                    },
                    **_errors_for(400, 404, 409),
                },
            },
            "put": {
                "summary": "Set the parallel region's width (the job is re-fused)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_WIDTH}
                        }
                    },
                },
                "responses": {
                    "204": {"description": "recorded in the ParallelRegion spec"},
                    **_errors_for(400, 404, 409),
                },
            },
        },
        "/api/endpoints/job/{job}/pe/{pe}": {
            "parameters": [_JOB, _PE],
            "get": {
                "summary": "Ports of the PE's Service by name",
                "responses": {
                    "200": {
                        "description": "ports",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **_errors_for(400, 404),
                },
            },
        },
        "/api/endpoints/job/{job}/endpoint/{ep}": {
            "parameters": [_JOB, _EP],
            "get": {
                "summary": "Where a user endpoint of the job is",
                "responses": {
                    "200": {
                        "description": "endpoint",
                        "content": {"application/json": {"schema": _ENDPOINT}},
                    },
                    **_errors_for(400, 404),
                },
            },
        },
        "/api/endpoints/job/{job}/pe/{pe}/endpoint/{ep}": {
            "parameters": [_JOB, _PE, _EP],
            "put": {
                "summary": "Add or replace the user endpoint (Service port usr-<ep>)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ENDPOINT}}},
                "responses": {"204": {"description": "port added"}, **_errors_for(400, 404, 409)},
            },
            "delete": {
                "summary": "Remove the user endpoint",
                "responses": {"204": {"description": "port removed"}, **_errors_for(400, 404)},
            },
        },
        _SUBSCRIPTIONS: {
            "parameters": [_JOB, _PE],
            "get": _read("The PE's import/export board", _JSON_OBJECT),
        },
        f"{_SUBSCRIPTIONS}/export/{{port}}": {
            "parameters": [_JOB, _PE, _PORT],
            "get": _read("The Export spec of the PE output port", _JSON_OBJECT),
        },
        f"{_SUBSCRIPTIONS}/import/{{port}}": {
            "parameters": [_JOB, _PE, _PORT],
            "get": _read("The Import spec of the PE input port", _JSON_OBJECT),
        },
        f"{_SUBSCRIPTIONS}/export/{{port}}/properties": {
            "parameters": [_JOB, _PE, _PORT],
            "put": _write("Add exported stream properties (streamProperties XML)", _XML, 409),
            "patch": _write("Set (add or replace) exported stream properties", _XML, 409),
            "post": {
                "summary": "The named properties (body streamPropertyNames XML)",
                "requestBody": {"required": True, "content": _XML},
                "responses": {
                    "200": {"description": "streamProperties", "content": _XML},
                    **_errors_for(400, 404),
                },
            },
            "delete": _write("Remove the named properties (streamPropertyNames XML)", _XML, 409),
        },
        f"{_SUBSCRIPTIONS}/export/{{port}}/property/{{name}}": {
            "parameters": [
                _JOB,
                _PE,
                _PORT,
                {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "put": _write("Add one property (streamProperty XML)", _XML, 409),
            "patch": _write("Set one property", _XML, 409),
            "get": _read("One property", _XML),
            "delete": {
                "summary": "Remove one property",
                "responses": {"204": {"description": "removed"}, **_errors_for(400, 404, 409)},
            },
        },
        f"{_SUBSCRIPTIONS}/import/{{port}}/filter": {
            "parameters": [_JOB, _PE, _PORT],
            "get": _read("The import filter (empty: none)", _TEXT),
            "put": _write("Set the import filter (empty: none)", _TEXT, 409),
        },
        f"{_SUBSCRIPTIONS}/import/{{port}}/streams": {
            "parameters": [_JOB, _PE, _PORT],
            "get": _read("The imported streams (importedStreams XML)", _XML),
            "put": _write("Replace the imported streams (importedStreams XML)", _XML, 409),
        },
    },
    "components": {"schemas": {"Error": _ERROR_SCHEMA}},
}
