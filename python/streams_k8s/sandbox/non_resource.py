"""The API server's paths outside /api and /apis' resources: the version, discovery documents,
health checks and the OpenAPI documents."""

from __future__ import annotations

import orjson
from aiohttp import web

from streams_k8s.sandbox import discovery
from streams_k8s.sandbox.errors import PageNotFound, not_served
from streams_k8s.sandbox.http_bodies import JSON, json_response
from streams_k8s.sandbox.openapi import PROTOBUF_V2, OpenApi
from streams_k8s.sandbox.registry import Registry


def serve_non_resource(
    path: str, accept: str, registry: Registry, openapi: OpenApi, address: str
) -> web.Response:
    """Version, discovery, health checks and the OpenAPI documents; 404 for other paths."""
    if path == "/version":
        return json_response(discovery.KUBERNETES_VERSION)
    if path == "/api":
        return json_response(discovery.core_versions(address))
    if path == "/apis":
        return json_response(discovery.group_list(registry))
    if path in ("/healthz", "/readyz", "/livez"):
        return web.Response(text="ok")
    if path == "/openapi/v2":
        if "protobuf" in accept:
            # kubectl asks for the protobuf form only: an empty message is a document without
            # definitions, so it falls back to its compiled-in types (OpenAPI v3 is served).
            return web.Response(body=b"", content_type=PROTOBUF_V2)
        return web.Response(body=openapi.v2(), content_type=JSON)
    if path == "/openapi/v3":
        # kube-apiserver's index says text/plain, whatever was asked
        return web.Response(body=orjson.dumps(openapi.v3_index()), content_type="text/plain", charset="utf-8")
    if path.startswith("/openapi/v3/"):
        document = openapi.v3(path.removeprefix("/openapi/v3/"))
        if document is None:
            return web.Response(status=404)  # an empty 404, as kube-apiserver's
        return web.Response(body=document, content_type=JSON)
    parts = [p for p in path.split("/") if p]
    doc = None
    if len(parts) == 2 and parts[0] == "api":
        doc = discovery.resource_list(registry, "", parts[1])
    elif len(parts) == 2 and parts[0] == "apis":
        doc = discovery.api_group(registry, parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        doc = discovery.resource_list(registry, parts[1], parts[2])
    if doc is not None:
        return json_response(doc)
    builtin = parts[:1] == ["api"] or (parts[:1] == ["apis"] and discovery.builtin_group(registry, parts[1]))
    if builtin and len(parts) > 1:
        raise not_served()
    raise PageNotFound()
