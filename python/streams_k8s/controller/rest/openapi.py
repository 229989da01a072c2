"""The instance REST API's OpenAPI 3.1 document (served at /api/openapi.json), and the input
rules it states, which the server checks (`rest.api`)."""

from __future__ import annotations

import re
from typing import Any

from streams_k8s.api.processing_element import Connectivity
from streams_k8s.api.spec_values import MAX_WIDTH

NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")  # a job, or an endpoint
ID = re.compile(r"^[0-9]{1,19}$")  # a job or PE id
PROTOCOLS = ("TCP", "UDP", "SCTP")
MAX_HOST_NAME = 253

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
        "canonicalName": {"type": "string", "maxLength": MAX_HOST_NAME},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "protocol": {"enum": list(PROTOCOLS)},
    },
}
_CONNECTIVITY = {"enum": [c.value for c in Connectivity]}
_XML = {"application/xml": {"schema": {"type": "string"}}}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}


_ERROR_TEXTS = (
    (400, "malformed input"),
    (401, "a write with no bearer token, not from a PE pod of the job (or an invalid token)"),
    (403, "a write the token's user (or the calling pod) may not make on this job"),
    (404, "unknown job, PE or endpoint"),
    (409, "conflict"),
    (422, "a value the Kubernetes API refused"),
)
# Writes: from the job's PE pods without credentials, or with a bearer token.
_WRITE_SECURITY: list[dict[str, list[str]]] = [{}, {"bearer": []}]


def _errors_for(*codes: int) -> dict[str, Any]:
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {str(code): {"description": text, **ref} for code, text in _ERROR_TEXTS if code in codes}


def _guarded(operation: dict[str, Any]) -> dict[str, Any]:
    """A write operation: its security and the answers of the write guard and the API server."""
    responses = {**operation["responses"], **_errors_for(401, 403, 422)}
    return {**operation, "security": _WRITE_SECURITY, "responses": responses}


def _param(name: str, pattern: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "pattern": pattern}}


_JOB, _PE, _EP = _param("job", NAME.pattern), _param("pe", ID.pattern), _param("ep", NAME.pattern)
_PORT = _param("port", "^[0-9]{1,9}$")


def _read(summary: str, content: dict[str, Any]) -> dict[str, Any]:
    return {
        "summary": summary,
        "responses": {"200": {"description": summary, "content": content}, **_errors_for(400, 404)},
    }


def _write(summary: str, content: dict[str, Any], *codes: int) -> dict[str, Any]:
    return _guarded(
        {
            "summary": summary,
            "requestBody": {"required": True, "content": content},
            "responses": {
                "204": {"description": "the Export or Import was patched"},
                **_errors_for(400, 404, *codes),
            },
        }
    )


_SUBSCRIPTIONS = "/api/subscriptions/job/{job}/pe/{pe}"
_JSON_OBJECT = {"application/json": {"schema": {"type": "object"}}}
OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "streams-k8s instance API", "version": "1"},
    "paths": {
        "/api/state/job/by-id/{id}/name": {
            "get": {
                "summary": "Name of the job with this numeric id",
                "parameters": [_param("id", ID.pattern)],
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
            "put": _guarded(
                {
                    "summary": "Report the PE's connectivity",
                    "description": "A pod of a launch since replaced gets 409 (reason Superseded).",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _CONNECTIVITY}},
                    },
                    "responses": {
                        "204": {"description": "recorded in the PE status"},
                        **_errors_for(400, 404, 409),
                    },
                }
            ),
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
            "put": _guarded(
                {
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
                }
            ),
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
            "put": _guarded(
                {
                    "summary": "Add or replace the user endpoint (Service port usr-<ep>)",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": _ENDPOINT}}},
                    "responses": {"204": {"description": "port added"}, **_errors_for(400, 404, 409)},
                }
            ),
            "delete": _guarded(
                {
                    "summary": "Remove the user endpoint",
                    "responses": {"204": {"description": "port removed"}, **_errors_for(400, 404)},
                }
            ),
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
            "post": _guarded(
                {
                    "summary": "The named properties (body streamPropertyNames XML)",
                    "requestBody": {"required": True, "content": _XML},
                    "responses": {
                        "200": {"description": "streamProperties", "content": _XML},
                        **_errors_for(400, 404),
                    },
                }
            ),
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
            "delete": _guarded(
                {
                    "summary": "Remove one property",
                    "responses": {"204": {"description": "removed"}, **_errors_for(400, 404, 409)},
                }
            ),
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
        "/api/bundles/{namespace}/{name}": {
            "parameters": [
                _param("namespace", NAME.pattern),
                _param("name", r"^[A-Za-z0-9][A-Za-z0-9._-]*$"),
            ],
            "put": {
                "summary": "Upload a bundle for the namespace's Jobs (`bundle.upload.sha256`); as a user "
                "who may create Jobs there, whose token may come as X-Streams-Authorization",
                "security": [{"bearer": []}],
                "parameters": [
                    {
                        "name": "sha256",
                        "in": "query",
                        "required": True,
                        "schema": {"pattern": "^[0-9a-f]{64}$"},
                    },
                ],
                "requestBody": {"required": True, "content": {"application/octet-stream": {}}},
                "responses": {
                    "201": {
                        "description": "kept: {namespace, name, sha256, size, uploadedBy}",
                        "content": _JSON_OBJECT,
                    },
                    "413": {"description": "larger than the upload limit", **_errors_for(400)["400"]},
                    **_errors_for(400, 401, 403, 404),
                },
            },
        },
    },
    "components": {
        "schemas": {"Error": _ERROR_SCHEMA},
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    },
}
