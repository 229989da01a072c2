"""The instance REST API the PE runtime calls (aiohttp, port 10000; OpenAPI at /api/openapi.json).

- `GET /api/state/job/by-id/{id}/name`: the Job's name (text/plain), to resolve PE port labels.
- `GET|PUT /api/state/job/{job}/pe/{pe}/connectivity`: a JSON string `"Full"|"Partial"|"None"`;
  PUT writes the PE's `status.connectivity` (`rest.connectivity_reports`) and answers 204. The PE's
  first report after its pod started also records the pod as running, in the same write; a report
  from a pod of a launch since replaced is a 409 (reason `Superseded`), not written.
- `GET|PUT /api/state/job/{job}/pr/{alias}/width`: a JSON integer from 1 to 1,000, the region's
  `spec.width`; PUT sets it (204; the job controller re-fuses the job).
- `GET /api/endpoints/job/{job}/pe/{pe}`: the PE Service's ports by name.
- `GET /api/endpoints/job/{job}/endpoint/{ep}`: `{canonicalName, port, protocol}` of port `usr-<ep>`.
- `PUT|DELETE /api/endpoints/job/{job}/pe/{pe}/endpoint/{ep}`: add or remove port `usr-<ep>` on the
  PE's headless Service (port and targetPort, never a nodePort); 204.
- `/api/subscriptions/job/{job}/pe/{pe}`: the PE's import/export board, its Export and Import specs,
  export properties and import filter/streams (routes and formats in `pubsub.api`).

Jobs are looked up in the namespaces the operator watches, a PE pod's request in its own namespace
only (`caller_scope`; another caller's name found in several is a 409). Unknown jobs, PEs and
endpoints are 404, malformed input 400 (naming the field), a value the API server refuses 422,
anything unexpected 500, all with a JSON body `{"status", "reason", "message"}`.

Who may write (PUT, PATCH, POST, DELETE; see `streams_k8s.k8s.write_guard` and the README): the
PE pods of the job the path names, by source address or by a token bound to the pod (and, where
the path names a PE, that PE's pods only), or a client whose bearer token passes TokenReview and
whose user may `update` the Job (`streamsjobs.streams.ibm.com`, by name, in its namespace), per
SubjectAccessReview. Reads stay open: the runtime sends no credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
    SVC_PE,
    USER_PORT_PREFIX,
    pe_service_name,
)
from streams_k8s.api.processing_element import Connectivity
from streams_k8s.api.spec_values import MAX_WIDTH
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS
from streams_k8s.controller.pes.pods_by_owner import PodsByOwner
from streams_k8s.controller.rest.caller_scope import CallerScope
from streams_k8s.controller.rest.connectivity_reports import ConnectivityReports, SupersededReport, reporter
from streams_k8s.controller.rest.openapi import ID, MAX_HOST_NAME, NAME, OPENAPI, PROTOCOLS
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.http_errors import json_error, json_errors
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import SERVICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key
from streams_k8s.k8s.pod_addresses import PodsByAddress
from streams_k8s.k8s.reviews import Access, AccessReviews, TokenReviews
from streams_k8s.k8s.write_guard import CALLER_PODS, WriteTarget, write_guard

_MAX_BODY = 64 * 1024
_EDIT_ATTEMPTS = 5


class RestError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def json_response(value: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(value), content_type="application/json")


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except RestError as err:
        return json_error(err.status, err.reason, err.message)
    except ApiError as err:
        if err.status in (400, 422):  # the API server refused a value that passed our checks
            return json_error(422, "Invalid", f"the Kubernetes API refused the change: {err.message or err}")
        if err.conflict:
            return json_error(409, "Conflict", f"the Kubernetes API answered: {err}")
        status = 503 if err.retryable else 502
        return json_error(status, "KubernetesApiError", f"the Kubernetes API answered: {err}")


class InstanceRestApi:
    def __init__(
        self,
        client: KubeClient,
        jobs: Informer,
        pes: Informer,
        services: Informer,
        scope: CallerScope,
        parallel_regions: Informer | None = None,
        pods: PodsByOwner | None = None,
        *,
        writers: PodsByAddress | None = None,
        tokens: TokenReviews | None = None,
        access: AccessReviews | None = None,
    ) -> None:
        """``writers``: the pod cache by address, to recognise PE pods; ``tokens`` and ``access``:
        the TokenReview and SubjectAccessReview of bearer tokens (None: no token is accepted)."""
        self.client = client
        self.jobs, self.pes, self.services = jobs, pes, services
        self.parallel_regions, self.pods, self.scope = parallel_regions, pods, scope
        self.guard = write_guard(self.write_target, writers, tokens, access)
        self.reports = ConnectivityReports(client, pes, pods)

    def app(self) -> web.Application:
        middlewares = [json_errors, _errors, self.scope.middleware, self.guard]
        app = web.Application(middlewares=middlewares, client_max_size=_MAX_BODY)
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

    def _one(self, found: list[Object], what: str) -> Object:
        if not found:
            raise RestError(404, "NotFound", f"{what} not found")
        if len(found) > 1:
            spaces = sorted(str(meta(o).get("namespace")) for o in found)
            raise RestError(409, "Ambiguous", f"{what} exists in namespaces {', '.join(spaces)}")
        return found[0]

    def _job(self, name: str) -> Object:
        if not NAME.match(name):
            raise RestError(400, "BadRequest", f"'{name}' is not a job name")
        found = [j for j in self.jobs.store.select() if meta(j).get("name") == name and self.scope.admits(j)]
        return self._one(found, f"job '{name}'")

    def lookup_pe(self, job_name: str, pe: str) -> tuple[Object, Object]:
        job = self._job(job_name)
        if not ID.match(pe):
            raise RestError(400, "BadRequest", f"'{pe}' is not a PE id")
        namespace = str(meta(job).get("namespace"))
        obj = self.pes.store.get(ObjectKey(namespace, pe_service_name(job_name, int(pe))))
        if obj is None:
            raise RestError(404, "NotFound", f"job '{job_name}' has no PE {pe}")
        return job, obj

    def write_target(self, request: web.Request) -> WriteTarget | None:
        """Who may write what ``request`` addresses: the job's PE pods (the path's PE's, when it
        names one), or a user who may update the Job."""
        job_name = request.match_info.get("job")
        if job_name is None:
            return None
        try:
            namespace = str(meta(self._job(job_name)).get("namespace"))
        except RestError:
            return None
        pods = {APP_LABEL: APP_VALUE, SVC_LABEL: SVC_PE, JOB_LABEL: job_name}
        if (pe := request.match_info.get("pe")) is not None:
            pods[PE_LABEL] = pe
        access = Access("update", JOBS.group, JOBS.plural, namespace, job_name)
        return WriteTarget(f"job {namespace}/{job_name}", access, namespace, pods)

    @staticmethod
    async def _body(request: web.Request) -> Any:
        try:
            return orjson.loads(await request.read())
        except orjson.JSONDecodeError as err:
            raise RestError(400, "BadRequest", f"the body is not JSON: {err}") from None

    # --- /api/state -----------------------------------------------------------------------

    async def job_name(self, request: web.Request) -> web.Response:
        raw = request.match_info["id"]
        if not ID.match(raw):
            raise RestError(400, "BadRequest", f"'{raw}' is not a job id")
        job_id = int(raw)
        found = [
            j
            for j in self.jobs.store.select()
            if (j.get("status") or {}).get("id") == job_id and self.scope.admits(j)
        ]
        return web.Response(text=str(meta(self._one(found, f"job id {job_id}"))["name"]))

    async def get_connectivity(self, request: web.Request) -> web.Response:
        _, pe = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        return json_response((pe.get("status") or {}).get("connectivity", Connectivity.NONE.value))

    async def put_connectivity(self, request: web.Request) -> web.Response:
        _, cached = self.lookup_pe(request.match_info["job"], request.match_info["pe"])
        value = await self._body(request)
        allowed = [c.value for c in Connectivity]
        if value not in allowed:
            raise RestError(400, "BadRequest", f"connectivity must be one of {allowed} as a JSON string")
        try:
            await self.reports.write(
                object_key(cached), cached, value, reporter(request.get(CALLER_PODS) or [])
            )
        except SupersededReport as err:
            raise RestError(409, "Superseded", str(err)) from None
        except ApiError as err:
            if err.not_found:
                raise RestError(404, "NotFound", f"PE {meta(cached).get('name')} no longer exists") from None
            raise
        return web.Response(status=204)

    def _region(self, request: web.Request) -> Object:
        assert self.parallel_regions is not None
        job_name, alias = request.match_info["job"], request.match_info["alias"]
        namespace = str(meta(self._job(job_name)).get("namespace"))
        found = [
            pr
            for pr in self.parallel_regions.store.select_by_labels({JOB_LABEL: job_name}, namespace)
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
            raise RestError(400, "BadRequest", f"width: must be a JSON integer from 1 to {MAX_WIDTH}")
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
        for service in self.services.store.select_by_labels({JOB_LABEL: name}, namespace):
            for port in (service.get("spec") or {}).get("ports") or ():
                if port.get("name") == port_name:
                    info = {"canonicalName": f"{meta(service)['name']}.{namespace}", "port": port["port"]}
                    return json_response({**info, "protocol": port.get("protocol", "TCP")})
        raise RestError(404, "NotFound", f"job '{name}' has no endpoint '{request.match_info['ep']}'")

    @staticmethod
    def _port_name(endpoint: str) -> str:
        name = f"{USER_PORT_PREFIX}{endpoint}"
        if not NAME.match(endpoint) or len(name) > 15:
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
        port, protocol = self._endpoint_record(await self._body(request))
        namespace, name = str(meta(job)["namespace"]), str(meta(job)["name"])
        own = pe_service_name(name, int(request.match_info["pe"]))
        for other in self.services.store.select_by_labels({JOB_LABEL: name}, namespace):
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

    @staticmethod
    def _endpoint_record(info: Any) -> tuple[int, str]:
        """The port and protocol of an EndpointRecord body (canonicalName is the caller's host)."""
        if not isinstance(info, dict):
            raise RestError(400, "BadRequest", "the body must be {canonicalName, port (integer), protocol}")
        port = info.get("port")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise RestError(400, "BadRequest", "port: must be an integer from 1 to 65535")
        protocol = info.get("protocol", "TCP")
        if not isinstance(protocol, str) or protocol.upper() not in PROTOCOLS:
            raise RestError(400, "BadRequest", f"protocol: must be one of {list(PROTOCOLS)}")
        host = info.get("canonicalName", "")
        if not isinstance(host, str) or len(host) > MAX_HOST_NAME or not host.isprintable():
            message = f"canonicalName: must be a host name of at most {MAX_HOST_NAME} characters"
            raise RestError(400, "BadRequest", message)
        return port, protocol.upper()

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
