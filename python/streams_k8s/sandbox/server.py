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
from aiohttp import web

from streams_k8s.sandbox import disruption, routing, scale
from streams_k8s.sandbox.admission import FieldValidation
from streams_k8s.sandbox.admission.limits import MAX_REQUEST_BODY, request_too_large
from streams_k8s.sandbox.authn import IDENTITY, Authenticator
from streams_k8s.sandbox.errors import ApiError, bad_request, method_not_allowed, not_found
from streams_k8s.sandbox.faults import Faults
from streams_k8s.sandbox.http_bodies import (
    JSON,
    BodyKind,
    check_acceptable,
    decode_object,
    decode_patch,
    delete_options,
    error_response,
    json_response,
    query_int,
    selectors,
    wants_table,
)
from streams_k8s.sandbox.non_resource import serve_non_resource
from streams_k8s.sandbox.openapi import OpenApi
from streams_k8s.sandbox.patch import APPLY_PATCH
from streams_k8s.sandbox.pod_streams import REFUSED, ContainerLogs, serve_pod_stream
from streams_k8s.sandbox.rbac import Authorizer
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.request_info import RequestInfo, parse_path
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.table import include_object, table
from streams_k8s.sandbox.warnings import collecting, header_values
from streams_k8s.sandbox.watch_stream import serve_watch

PODS = ("", "pods")
POD_STREAMS = ("log", *REFUSED)
# Subresources written by an action of their own rather than as the object (a Binding, an Eviction, a Scale).
_ACTION_SUBRESOURCES = ("binding", "eviction", "scale")
_SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

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
                    request[IDENTITY].user if IDENTITY in request else "",
                )
            )

    async def _dispatch(
        self, request: web.Request, info: RequestInfo | None, body: bytes
    ) -> web.StreamResponse:
        request[IDENTITY] = self.authn.authenticate(request.headers.get("Authorization"))
        path = request.path.rstrip("/") or "/"
        if path.startswith("/_sandbox/") and self.control is not None:
            return await self.control(path.removeprefix("/_sandbox/"), request)
        what, user = info or RequestInfo(request.method.lower(), path=path), request[IDENTITY].user
        latency, error, lost = self.faults.take(what, user)
        if latency:
            await asyncio.sleep(latency)
        if error is not None:
            raise error
        if info is None:
            return serve_non_resource(
                path, request.headers.get("Accept", ""), self.registry, self.openapi, self.address
            )
        return await self.faults.answer(lost, self._resource(request, info, body))

    async def _resource(self, request: web.Request, info: RequestInfo, body: bytes) -> web.StreamResponse:
        rt = routing.resolve(self.registry, info)
        check_acceptable(request)
        ns, name, sub = info.namespace, info.name, info.subresource
        if sub is not None and sub not in rt.subresources:  # a custom resource's: its object is looked for
            raise not_found(rt.plural, name or "", rt.group)
        if rt.review or (rt.key == ("", "serviceaccounts") and sub == "token"):
            return self._review(_Call(request, info, rt, body))
        if rt.key == PODS and sub in POD_STREAMS and name is not None and ns is not None:
            if info.verb not in (("get",) if sub == "log" else ("get", "create")):
                raise method_not_allowed()
            return await serve_pod_stream(request, self.registry, self.logs, ns, name, sub)
        verb = _VERBS.get(info.verb)
        if verb is None:
            raise method_not_allowed()
        return await verb(self, _Call(request, info, rt, body))

    async def _get(self, call: _Call) -> web.StreamResponse:
        registry, rt, name = self.registry, call.rt, call.object_name
        if call.info.subresource == "scale":
            return json_response(scale.get_scale(registry, rt, call.ns, name))
        obj = registry.get(rt, call.ns, name)
        if wants_table(call.request):
            meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            include = include_object(call.request.query)
            return json_response(table(rt, call.version, [obj], meta, include, registry.converter(rt)))
        return json_response(registry.output(rt, obj, call.version))

    async def _list(self, call: _Call) -> web.StreamResponse:
        request, rt, version = call.request, call.rt, call.version
        labels, fields = selectors(request, self.registry, rt)
        query = request.query
        limit = query_int(query.get("limit", "0"), "limit")
        items, rv, token, remaining = self.registry.list(
            rt, call.ns, labels, fields, limit, query.get("continue")
        )
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            if labels is None and fields is None:  # the API server counts only unfiltered lists
                meta["remainingItemCount"] = remaining
        if wants_table(request):
            include = include_object(query)
            return json_response(table(rt, version, items, meta, include, self.registry.converter(rt)))
        head = orjson.dumps({"kind": rt.list_kind, "apiVersion": rt.api_version(version), "metadata": meta})
        encoded = b",".join(orjson.dumps(self.registry.output(rt, o, version)) for o in items)
        return web.Response(body=head[:-1] + b',"items":[' + encoded + b"]}", content_type=JSON)

    async def _watch(self, call: _Call) -> web.StreamResponse:
        return await serve_watch(
            call.request,
            self.registry,
            call.rt,
            call.version,
            call.ns,
            call.info.name,
            self.bookmark_interval,
        )

    async def _create(self, call: _Call) -> web.StreamResponse:
        request, rt, name, sub = call.request, call.rt, call.info.name, call.info.subresource
        if sub in _ACTION_SUBRESOURCES:
            data = decode_object(request, call.body, call.body_kind)
            if name is not None and sub == "binding":
                return json_response(self._bind(call.ns, name, data), 201)
            if name is not None and sub == "eviction":
                disruption.evict(self.registry, rt, call.ns, name, (data or {}).get("deleteOptions"))
                return json_response({**_SUCCESS, "code": 201}, 201)
            raise method_not_allowed()
        fields = FieldValidation.from_query(request.query.get("fieldValidation"))
        data = decode_object(request, call.body, call.body_kind, fields)
        return json_response(self.registry.create(rt, call.version, call.ns, data, call.dry_run, fields), 201)

    async def _update(self, call: _Call) -> web.StreamResponse:
        request, rt, name, version = call.request, call.rt, call.object_name, call.version
        if call.info.subresource in _ACTION_SUBRESOURCES:
            wanted = decode_object(request, call.body, call.body_kind)
            return json_response(
                scale.update_scale(self.registry, rt, version, call.ns, name, wanted, call.dry_run)
            )
        fields = FieldValidation.from_query(request.query.get("fieldValidation"))
        data = decode_object(request, call.body, call.body_kind, fields)
        sub = call.info.subresource
        return json_response(
            self.registry.update(rt, version, call.ns, name, data, sub, call.dry_run, fields=fields)
        )

    async def _patch(self, call: _Call) -> web.StreamResponse:
        request, rt, name, version, ns = call.request, call.rt, call.object_name, call.version, call.ns
        registry, sub, content_type = self.registry, call.info.subresource, request.content_type
        if sub in _ACTION_SUBRESOURCES:
            patch = decode_patch(call.body)
            return json_response(
                scale.patch_scale(registry, rt, version, ns, name, content_type, patch, call.dry_run)
            )
        fields = FieldValidation.from_query(request.query.get("fieldValidation"))
        if content_type == APPLY_PATCH:
            config = decode_object(request, call.body, call.body_kind, fields)
            manager, force = request.query.get("fieldManager"), request.query.get("force") == "true"
            creates = sub is None and registry.find(rt, ns, name) is None
            applied = registry.apply(rt, version, ns, name, config, sub, call.dry_run, manager, force)
            return json_response(applied, 201 if creates else 200)
        patch = decode_patch(call.body, fields)
        return json_response(
            registry.patch(rt, version, ns, name, content_type, patch, sub, call.dry_run, fields)
        )

    async def _delete(self, call: _Call) -> web.StreamResponse:
        rt = call.rt
        options = delete_options(call.request, call.body)
        obj, gone = self.registry.delete(rt, call.ns, call.object_name, options, call.version)
        # Like the API server: 202 only when orphanDependents=false did not delete at once.
        accepted = not gone and options.get("orphanDependents") is False and not options.get("dryRun")
        if gone and not rt.return_deleted_object:
            meta = obj["metadata"]
            details = {"name": meta["name"], "group": rt.group, "kind": rt.plural, "uid": meta["uid"]}
            return json_response({**_SUCCESS, "details": details})
        return json_response(obj, 202 if accepted else 200)

    async def _delete_collection(self, call: _Call) -> web.StreamResponse:
        registry, rt, version = self.registry, call.rt, call.version
        options = delete_options(call.request, call.body)
        labels, fields = selectors(call.request, registry, rt)
        items, _, _, _ = registry.list(rt, call.ns, labels, fields)
        deleted = []
        for obj in items:
            meta = obj["metadata"]
            with contextlib.suppress(ApiError):
                deleted.append(registry.delete(rt, meta.get("namespace"), meta["name"], options, version)[0])
        return json_response(
            {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version(version),
                "metadata": {"resourceVersion": str(registry.store.rv)},
                "items": deleted,
            }
        )

    def _review(self, call: _Call) -> web.Response:
        """A create the server answers and never stores: TokenRequest and the reviews."""
        request, rt, info = call.request, call.rt, call.info
        if info.verb != "create":
            raise method_not_allowed()
        data = decode_object(request, call.body, call.body_kind)
        if not rt.review:
            assert info.name is not None
            assert info.namespace is not None
            return json_response(self.authn.token_request(info.namespace, info.name, data), 201)
        if rt.kind == "TokenReview":
            return json_response(self.authn.token_review(data), 201)
        return json_response(self.authz.review(rt.kind, info.namespace, data, request[IDENTITY]), 201)

    def _bind(self, ns: str | None, name: str, binding: Any) -> dict[str, Any]:
        target = (binding or {}).get("target") or {}
        if not target.get("name"):
            raise bad_request("a Binding needs target.name")
        self.registry.bind(ns or "", name, target["name"])
        return {**_SUCCESS, "code": 201}


@dataclass(frozen=True, slots=True)
class _Call:
    """One request on a resource, resolved to its type: what a verb's handler works on."""

    request: web.Request
    info: RequestInfo
    rt: ResourceType
    body: bytes

    @property
    def ns(self) -> str | None:
        return self.info.namespace

    @property
    def version(self) -> str:
        return self.info.version

    @property
    def object_name(self) -> str:
        """The addressed object's name (verbs on one object only: their paths always name it)."""
        assert self.info.name is not None
        return self.info.name

    @property
    def dry_run(self) -> bool:
        return "dryRun" in self.request.query

    @property
    def body_kind(self) -> BodyKind:
        """What the request's body holds: a subresource's own kind (a Scale, an Eviction...) or
        the resource's object."""
        rt, sub = self.rt, self.info.subresource
        if sub == "scale":
            return BodyKind("autoscaling/v1", "Scale")
        for extra in rt.extra_subresources:
            if extra.name == sub:
                group = rt.group if extra.group is None else extra.group
                version = extra.version or self.version
                return BodyKind(f"{group}/{version}" if group else version, extra.kind)
        return BodyKind(rt.api_version(self.version), rt.kind, custom_resource=not rt.builtin)


_VERBS: dict[str, Callable[[ApiServer, _Call], Awaitable[web.StreamResponse]]] = {
    "get": ApiServer._get,
    "list": ApiServer._list,
    "watch": ApiServer._watch,
    "create": ApiServer._create,
    "update": ApiServer._update,
    "patch": ApiServer._patch,
    "delete": ApiServer._delete,
    "deletecollection": ApiServer._delete_collection,
}
