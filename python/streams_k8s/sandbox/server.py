"""The HTTP face of the sandbox: Kubernetes REST paths, discovery, watch streams, request log,
bearer-token auth (``authn``), the review APIs (``authn``, ``rbac``) and fault injection, on an
aiohttp application."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from streams_k8s.sandbox import discovery
from streams_k8s.sandbox.admission import FieldValidation, parse_json, parse_yaml
from streams_k8s.sandbox.admission.limits import MAX_REQUEST_BODY, request_too_large
from streams_k8s.sandbox.authn import Authenticator, Identity
from streams_k8s.sandbox.errors import ApiError, bad_request, not_found
from streams_k8s.sandbox.faults import Faults, RequestInfo
from streams_k8s.sandbox.openapi import PROTOBUF_V2, OpenApi
from streams_k8s.sandbox.pod_streams import REFUSED, ContainerLogs, serve_pod_stream
from streams_k8s.sandbox.rbac import Authorizer
from streams_k8s.sandbox.registry import APPLY_PATCH, Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import LabelSelector, parse_field_selector
from streams_k8s.sandbox.store import Watcher
from streams_k8s.sandbox.table import TableRows, include_object, table
from streams_k8s.sandbox.warnings import collecting, header_values

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
PODS = ("", "pods")
POD_STREAMS = ("log", *REFUSED)
_JSON = "application/json"
# Real API servers close watches after a randomised timeout of at least 30 minutes.
_DEFAULT_WATCH_TIMEOUT = 1800.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ControlHandler = Callable[[str, web.Request], Awaitable[web.StreamResponse]]


@dataclass
class RequestRecord:
    """One served request, for assertions in tests (`sandbox.requests`)."""

    time: float
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes
    status: int
    info: RequestInfo | None
    user: str = ""  # who the request authenticated as (authn)


_IDENTITY = web.RequestKey("identity", Identity)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=_JSON, headers=headers)


def error_response(err: ApiError) -> web.Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return json_response(err.status(), err.code, headers)


def parse_path(method: str, path: str, query: Any) -> RequestInfo | None:
    """The resource a /api or /apis path addresses, or None for other paths."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch = query.get("watch") in ("1", "true", "True")
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    verbs = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    verb = verbs.get(method, method.lower())
    if name is None and verb == "get":
        verb = "watch" if watch else "list"
    elif name is None and verb == "delete":
        verb = "deletecollection"
    elif watch and verb == "get":
        verb = "watch"
    return RequestInfo(verb, group, version, rest[0], sub, namespace, name, path)


class ApiServer:
    """Routes HTTP requests onto the registry; owns the open watch streams."""

    def __init__(
        self,
        registry: Registry,
        faults: Faults,
        *,
        token: str | None = None,
        bookmark_interval: float = 1.0,
        request_log_size: int = 10_000,
        logs: ContainerLogs | None = None,
    ) -> None:
        self.registry = registry
        self.logs = logs if logs is not None else ContainerLogs(registry)
        self.faults = faults
        self.authn = Authenticator(registry, token)
        self.bookmark_interval = bookmark_interval
        self.requests: deque[RequestRecord] = deque(maxlen=request_log_size)
        self.address = ""
        self.control: ControlHandler | None = None
        self.authz = Authorizer(registry)
        self.openapi = OpenApi(registry)

    @property
    def token(self) -> str | None:
        """The sandbox's own token (None: open); set it to rotate (tests do)."""
        return self.authn.admin_token

    @token.setter
    def token(self, value: str | None) -> None:
        self.authn.admin_token = value

    def app(self) -> web.Application:
        # Bodies over kube-apiserver's limit are refused unread (413 RequestEntityTooLarge).
        app = web.Application(client_max_size=MAX_REQUEST_BODY)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        info = parse_path(request.method, request.path, request.query)
        body = b""
        status = 500
        try:
            with collecting() as warnings:
                try:
                    body = await request.read()
                except web.HTTPRequestEntityTooLarge:
                    raise request_too_large() from None
                try:
                    response = await self._dispatch(request, info, body)
                except ApiError as err:  # warnings raised before the error are sent with it
                    response = error_response(err)
            if warnings and not response.prepared:
                for value in header_values(warnings):
                    response.headers.add("Warning", value)
            status = response.status
            return response
        except ApiError as err:
            status = err.code
            return error_response(err)
        except Exception as exc:  # an emulator bug must surface as a 500 Status, never a hang
            return error_response(ApiError(500, f"sandbox internal error: {type(exc).__name__}: {exc}"))
        finally:
            self.requests.append(
                RequestRecord(
                    time.time(),
                    request.method,
                    request.path,
                    dict(request.query),
                    request.content_type,
                    body,
                    status,
                    info,
                    request[_IDENTITY].user if _IDENTITY in request else "",
                )
            )

    async def _dispatch(
        self, request: web.Request, info: RequestInfo | None, body: bytes
    ) -> web.StreamResponse:
        request[_IDENTITY] = self.authn.authenticate(request.headers.get("Authorization"))
        path = request.path.rstrip("/") or "/"
        if path.startswith("/_sandbox/") and self.control is not None:
            return await self.control(path.removeprefix("/_sandbox/"), request)
        latency, error = self.faults.take(info or RequestInfo(request.method.lower(), path=path))
        if latency:
            await asyncio.sleep(latency)
        if error is not None:
            raise error
        if info is None:
            return self._non_resource(path, request.headers.get("Accept", ""))
        return await self._resource(request, info, body)

    def _non_resource(self, path: str, accept: str) -> web.Response:
        registry = self.registry
        if path == "/version":
            return json_response(discovery.KUBERNETES_VERSION)
        if path == "/api":
            return json_response(discovery.core_versions(self.address))
        if path == "/apis":
            return json_response(discovery.group_list(registry))
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/openapi/v2":
            if "protobuf" in accept:
                # kubectl asks for the protobuf form only: an empty message is a document without
                # definitions, so it falls back to its compiled-in types (OpenAPI v3 is served).
                return web.Response(body=b"", content_type=PROTOBUF_V2)
            return web.Response(body=self.openapi.v2(), content_type=_JSON)
        if path == "/openapi/v3":
            return json_response(self.openapi.v3_index())
        if path.startswith("/openapi/v3/"):
            document = self.openapi.v3(path.removeprefix("/openapi/v3/"))
            if document is None:
                raise ApiError(404, "the server could not find the requested resource", reason="NotFound")
            return web.Response(body=document, content_type=_JSON)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "api":
            doc = discovery.resource_list(registry, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = discovery.api_group(registry, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(registry, parts[1], parts[2])
        else:
            doc = None
        if doc is None:
            raise ApiError(404, "the server could not find the requested resource", reason="NotFound")
        return json_response(doc)

    async def _resource(self, request: web.Request, info: RequestInfo, body: bytes) -> web.StreamResponse:
        registry = self.registry
        rt = registry.resolve(info.group, info.version, info.resource)
        if rt.namespaced != (info.namespace is not None) and info.verb not in (
            "list",
            "watch",
            "deletecollection",
        ):
            if rt.namespaced:
                raise ApiError(
                    404,
                    f"the server could not find the requested resource ({rt.plural} must be "
                    "addressed in a namespace)",
                )
            raise ApiError(
                404, f"the server could not find the requested resource ({rt.plural} is not namespaced)"
            )
        if not rt.namespaced and info.namespace is not None:
            raise ApiError(
                404, f"the server could not find the requested resource ({rt.plural} is not namespaced)"
            )
        query = request.query
        dry_run = "dryRun" in query
        ns, name, version, sub = info.namespace, info.name, info.version, info.subresource
        if sub is not None and sub not in rt.subresources:
            raise not_found(f"{rt.plural}/{sub}", name or "", rt.group)
        if rt.review or (rt.key == ("", "serviceaccounts") and sub == "token"):
            return self._review(request, rt, info, body)
        if rt.key == PODS and sub in POD_STREAMS and name is not None and ns is not None:
            if info.verb not in (("get",) if sub == "log" else ("get", "create")):
                raise ApiError(
                    405,
                    f"the server does not allow this method on the requested resource (pods/{sub})",
                    reason="MethodNotAllowed",
                )
            return await serve_pod_stream(request, registry, self.logs, ns, name, sub)
        if info.verb == "get":
            assert name is not None
            if sub == "scale":
                return json_response(registry.get_scale(rt, ns, name))
            obj = registry.get(rt, ns, name)
            if _wants_table(request):
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                include = include_object(query)
                return json_response(table(rt, version, [obj], meta, include, registry.converter(rt)))
            return json_response(registry.output(rt, obj, version))
        if info.verb == "list":
            return self._list(request, rt, version, ns)
        if info.verb == "watch":
            return await self._watch(request, rt, version, ns, name)
        if info.verb in ("create", "update", "patch") and sub not in ("binding", "eviction", "scale"):
            return self._write(
                request, info, rt, body, FieldValidation.from_query(query.get("fieldValidation"))
            )
        if info.verb == "create":
            data = _decode(request, body)
            if name is not None and sub == "binding":
                return json_response(self._bind(ns, name, data), 201)
            if name is not None and sub == "eviction":
                registry.delete(rt, ns, name, (data or {}).get("deleteOptions"))
                return json_response(
                    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
                    201,
                )
            raise ApiError(
                405,
                f"the server does not allow this method on the requested resource ({rt.plural}/{name})",
                reason="MethodNotAllowed",
            )
        if info.verb == "update":
            assert name is not None
            return json_response(
                registry.update_scale(rt, version, ns, name, _decode(request, body), dry_run)
            )
        if info.verb == "patch":
            assert name is not None
            return json_response(
                registry.patch_scale(rt, version, ns, name, request.content_type, _patch(body), dry_run)
            )
        if info.verb == "delete":
            assert name is not None
            options = self._delete_options(request, body)
            obj, gone = registry.delete(rt, ns, name, options, version)
            # Like the API server: 202 only when orphanDependents=false did not delete at once.
            accepted = not gone and options.get("orphanDependents") is False and not options.get("dryRun")
            if gone and not rt.return_deleted_object:
                meta = obj["metadata"]
                details = {"name": meta["name"], "group": rt.group, "kind": rt.plural, "uid": meta["uid"]}
                return json_response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": details,
                    }
                )
            return json_response(obj, 202 if accepted else 200)
        if info.verb == "deletecollection":
            options = self._delete_options(request, body)
            labels, fields = self._selectors(request, rt)
            items, _, _, _ = registry.list(rt, ns, labels, fields)
            deleted = []
            for obj in items:
                meta = obj["metadata"]
                with contextlib.suppress(ApiError):
                    deleted.append(
                        registry.delete(rt, meta.get("namespace"), meta["name"], options, version)[0]
                    )
            return json_response(
                {
                    "kind": rt.list_kind,
                    "apiVersion": rt.api_version(version),
                    "metadata": {"resourceVersion": str(registry.store.rv)},
                    "items": deleted,
                }
            )
        raise ApiError(
            405,
            f"the server does not allow this method on the requested resource ({rt.plural})",
            reason="MethodNotAllowed",
        )

    def _review(self, request: web.Request, rt: ResourceType, info: RequestInfo, body: bytes) -> web.Response:
        """A create the server answers and never stores: TokenRequest and the reviews."""
        if info.verb != "create" or (rt.review and info.name is not None):
            raise ApiError(
                405,
                f"the server does not allow this method on the requested resource ({rt.plural})",
                reason="MethodNotAllowed",
            )
        data = _decode(request, body)
        if not rt.review:
            assert info.name is not None
            assert info.namespace is not None
            return json_response(self.authn.token_request(info.namespace, info.name, data), 201)
        if rt.kind == "TokenReview":
            return json_response(self.authn.token_review(data), 201)
        return json_response(self.authz.review(rt.kind, info.namespace, data, request[_IDENTITY]), 201)

    def _write(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, body: bytes, fields: FieldValidation
    ) -> web.Response:
        """create, update and patch of an object or its status, under the request's field validation."""
        registry, query = self.registry, request.query
        ns, name, version, sub = info.namespace, info.name, info.version, info.subresource
        dry_run = "dryRun" in query
        if info.verb == "create":
            if name is not None:
                raise ApiError(
                    405,
                    f"the server does not allow this method on the requested resource ({rt.plural}/{name})",
                    reason="MethodNotAllowed",
                )
            data = _decode(request, body, fields)
            return json_response(registry.create(rt, version, ns, data, dry_run, fields), 201)
        assert name is not None
        if info.verb == "update":
            data = _decode(request, body, fields)
            return json_response(registry.update(rt, version, ns, name, data, sub, dry_run, fields=fields))
        if request.content_type == APPLY_PATCH:
            config = _decode(request, body, fields)
            manager, force = query.get("fieldManager"), query.get("force") == "true"
            return json_response(registry.apply(rt, version, ns, name, config, sub, dry_run, manager, force))
        patch = _patch(body, fields)
        return json_response(
            registry.patch(rt, version, ns, name, request.content_type, patch, sub, dry_run, fields)
        )

    def _bind(self, ns: str | None, name: str, binding: Any) -> dict[str, Any]:
        target = (binding or {}).get("target") or {}
        if not target.get("name"):
            raise bad_request("a Binding needs target.name")
        self.registry.bind(ns or "", name, target["name"])
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    @staticmethod
    def _delete_options(request: web.Request, body: bytes) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if body.strip():
            decoded = _decode(request, body)
            if not isinstance(decoded, dict):
                raise bad_request("DeleteOptions must be a JSON object")
            options.update(decoded)
        query = request.query
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = _int(query["gracePeriodSeconds"], "gracePeriodSeconds")
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = query["orphanDependents"] == "true"
        if "dryRun" in query:
            options["dryRun"] = [query["dryRun"]]
        return options

    def _selectors(self, request: web.Request, rt: ResourceType) -> tuple[Any, Any]:
        query = request.query
        labels = LabelSelector.parse(query["labelSelector"]) if query.get("labelSelector") else None
        fields = (
            self.registry.field_selector(rt, query["fieldSelector"]) if query.get("fieldSelector") else None
        )
        return labels, fields

    def _list(self, request: web.Request, rt: ResourceType, version: str, ns: str | None) -> web.Response:
        labels, fields = self._selectors(request, rt)
        query = request.query
        limit = _int(query.get("limit", "0"), "limit")
        items, rv, token, remaining = self.registry.list(rt, ns, labels, fields, limit, query.get("continue"))
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            if labels is None and fields is None:  # the API server counts only unfiltered lists
                meta["remainingItemCount"] = remaining
        if _wants_table(request):
            include = include_object(query)
            return json_response(table(rt, version, items, meta, include, self.registry.converter(rt)))
        api_version = rt.api_version(version)
        head = orjson.dumps({"kind": rt.list_kind, "apiVersion": api_version, "metadata": meta})
        encoded = b",".join(orjson.dumps(self.registry.output(rt, o, version)) for o in items)
        return web.Response(body=head[:-1] + b',"items":[' + encoded + b"]}", content_type=_JSON)

    async def _watch(
        self, request: web.Request, rt: ResourceType, version: str, ns: str | None, name: str | None
    ) -> web.StreamResponse:
        query = request.query
        labels, fields = self._selectors(request, rt)
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
        if _wants_table(request):
            rows = TableRows(rt, version, include_object(query), self.registry.converter(rt))
        watcher = self.registry.watch(
            rt, version, ns, labels, fields, since, send_initial and bookmarks, rows
        )
        response = web.StreamResponse(headers={"Content-Type": _JSON, "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            deadline = asyncio.get_running_loop().time() + timeout
            await self._stream(request, response, watcher, deadline, bookmarks)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.registry.unwatch(watcher)
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        deadline: float,
        bookmarks: bool,
    ) -> None:
        loop = asyncio.get_running_loop()
        queue = watcher.queue
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = min(remaining, self.bookmark_interval) if bookmarks else remaining
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if bookmarks and loop.time() < deadline and watcher.control != "stall":
                    await response.write(self.registry.bookmark(watcher))
                continue
            chunks: list[bytes] = []
            while True:
                if isinstance(item, str):
                    if chunks:
                        await response.write(b"".join(chunks))
                        chunks = []
                    if not await self._control(request, response, watcher, item, deadline):
                        return
                else:
                    chunks.append(item)
                if queue.empty():
                    break
                item = queue.get_nowait()
            if chunks:
                await response.write(b"".join(chunks))
        await response.write_eof()

    async def _control(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        action: str,
        deadline: float,
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


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{what} must be an integer, got {value!r}") from None


def _decode(request: web.Request, body: bytes, fields: FieldValidation | None = None) -> Any:
    if not body.strip():
        raise bad_request("the request body is empty")
    try:
        if "yaml" in request.content_type:
            return parse_yaml(body, fields)
        return parse_json(body, fields)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None


def _patch(body: bytes, fields: FieldValidation | None = None) -> Any:
    try:
        return parse_json(body, fields)
    except ValueError as exc:
        raise bad_request(f"the patch is not valid JSON: {exc}") from None
