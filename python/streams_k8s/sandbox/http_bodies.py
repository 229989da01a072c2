"""Bodies over HTTP: request bodies and query parameters as the API server reads them (objects in
JSON or YAML under the request's field validation, patches, DeleteOptions, selectors, integer
parameters; a malformed one is a 400 Bad Request), and JSON responses, Status errors included."""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from streams_k8s.sandbox.admission import FieldValidation, parse_json, parse_yaml
from streams_k8s.sandbox.errors import ApiError, PageNotFound, bad_request
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import FieldMatcher, LabelSelector

JSON = "application/json"


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON, headers=headers)


def error_response(err: ApiError) -> web.Response:
    if isinstance(err, PageNotFound):
        return web.Response(status=404, text="404 page not found\n")
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return json_response(err.status(), err.code, headers)


def wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def query_int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{what} must be an integer, got {value!r}") from None


def decode_object(request: web.Request, body: bytes, fields: FieldValidation | None = None) -> Any:
    if not body.strip():
        raise bad_request("the request body is empty")
    try:
        if "yaml" in request.content_type:
            return parse_yaml(body, fields)
        return parse_json(body, fields)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None


def decode_patch(body: bytes, fields: FieldValidation | None = None) -> Any:
    try:
        return parse_json(body, fields)
    except ValueError as exc:
        raise bad_request(f"the patch is not valid JSON: {exc}") from None


def delete_options(request: web.Request, body: bytes) -> dict[str, Any]:
    """DeleteOptions from the body, overridden by the query's parameters."""
    options: dict[str, Any] = {}
    if body.strip():
        decoded = decode_object(request, body)
        if not isinstance(decoded, dict):
            raise bad_request("DeleteOptions must be a JSON object")
        options.update(decoded)
    query = request.query
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = query_int(query["gracePeriodSeconds"], "gracePeriodSeconds")
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = query["orphanDependents"] == "true"
    if "dryRun" in query:
        options["dryRun"] = [query["dryRun"]]
    return options


def selectors(
    request: web.Request, registry: Registry, rt: ResourceType
) -> tuple[LabelSelector | None, FieldMatcher | None]:
    """The request's label and field selectors (None: not given)."""
    query = request.query
    labels = LabelSelector.parse(query["labelSelector"]) if query.get("labelSelector") else None
    fields = registry.field_selector(rt, query["fieldSelector"]) if query.get("fieldSelector") else None
    return labels, fields
