"""OpenAPI 3.1 description of the consistent-region REST API (served at ``.../openapi.json``)."""

from __future__ import annotations

from typing import Any

# The runtime quotes every number (boost write_json); plain JSON numbers are accepted too.
_ID: dict[str, Any] = {
    "oneOf": [
        {"type": "integer", "minimum": 0, "maximum": 2**64 - 1},
        {"type": "string", "pattern": r"^\s*[0-9]+\s*$"},
    ]
}
_FLAG: dict[str, Any] = {
    "oneOf": [
        {"type": "boolean"},
        {"type": "string", "pattern": "^\\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$"},
    ]
}
_NOTIFICATION: dict[str, Any] = {
    "type": "object",
    "required": ["type", "message"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": ["triggerDrain", "triggerReset", "resumeSubmission", "drained", "resetFailed"]},
        "message": {"type": "string", "examples": ["seqId=4;retId=2;pendCkpt=0"]},
    },
}
_ERROR: dict[str, Any] = {
    "type": "object",
    "required": ["status", "reason", "message"],
    "properties": {
        "status": {"type": "integer"},
        "reason": {"type": "string"},
        "message": {"type": "string"},
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "SequenceId": {**_ID, "description": "A sequence id, as a bare JSON number or string."},
    "ResetProgress": {
        "type": "object",
        "required": ["progress"],
        "properties": {
            "progress": {
                "type": "object",
                "required": ["seqId", "resetAttempt"],
                "properties": {"seqId": _ID, "resetAttempt": _ID},
            }
        },
    },
    "DrainRequest": {
        "type": "object",
        "required": ["request"],
        "properties": {
            "request": {
                "type": "object",
                "required": ["seqId", "operator"],
                "properties": {"seqId": _ID, "operator": {"type": "string", "minLength": 1}},
            }
        },
    },
    "ResetRequest": {
        "type": "object",
        "required": ["request"],
        "properties": {
            "request": {
                "type": "object",
                "properties": {"operator": {"type": "string"}, "force": _FLAG},
            }
        },
    },
    "Notification": _NOTIFICATION,
    "Board": {
        "type": "object",
        "description": "The PE's latest notification per region, keyed by region index.",
        "propertyNames": {"pattern": "^[0-9]+$"},
        "additionalProperties": {"$ref": "#/components/schemas/Notification"},
    },
    "Error": _ERROR,
}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Malformed path or body.",
        401: "A write with no bearer token, not from a PE pod of the job (or an invalid token).",
        403: "A write the token's user (or the calling pod) may not make on this job.",
        404: "Unknown region, PE or entry.",
    }
    return {str(c): _json(_ref("Error"), text[c]) for c in codes}


# Writes: from the job's PE pods without credentials, or with a bearer token whose user may
# update the job's Job.
_WRITE_SECURITY: list[dict[str, list[str]]] = [{}, {"bearer": []}]


def _param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }


_REGION = _param("region", "Region index.")
_PE = _param("pe", "PE id.")


def _progress(summary: str, body: str) -> dict[str, Any]:
    return {
        "put": {
            "summary": summary,
            "parameters": [_REGION, _PE],
            "requestBody": {"required": True, **_json(_ref(body), "As the PE runtime sends it.")},
            "security": _WRITE_SECURITY,
            "responses": {
                "204": {"description": "Queued for the region's FSM."},
                **_errors(400, 401, 403, 404),
            },
        }
    }


def _region_value(summary: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": [_REGION],
            "responses": {"200": _json(schema, summary), **_errors(400, 404)},
        }
    }


def _request(summary: str, body: str) -> dict[str, Any]:
    return {
        "put": {
            "summary": summary,
            "parameters": [_REGION],
            "requestBody": {"required": True, **_json(_ref(body), "As the operator sends it.")},
            "security": _WRITE_SECURITY,
            "responses": {
                "204": {"description": "Queued for the region's FSM."},
                **_errors(400, 401, 403, 404),
            },
        }
    }


def _server(url: str) -> dict[str, Any]:
    """A server entry; the variables its URL template uses need defaults (OpenAPI 3)."""
    meanings = {"job": ("job", "The Job's name."), "namespace": ("default", "The Job's namespace.")}
    variables = {
        name: {"default": default, "description": text}
        for name, (default, text) in meanings.items()
        if f"{{{name}}}" in url
    }
    return {"url": url, **({"variables": variables} if variables else {})}


def document(server_url: str) -> dict[str, Any]:
    """The API description; paths are relative to `server_url`, which includes the base path."""
    state_enum = [
        "STARTED",
        "PROCESSING",
        "UNHEALTHY",
        "DRAINING",
        "RESETTING",
        "MAXIMUM_RESET_ATTEMPTS_REACHED",
        "CHECKPOINT_PENDING",
    ]
    seconds = {"type": "number", "description": "Seconds."}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "streams-k8s consistent-region coordinator",
            "version": "1",
            "description": "Checkpoint and reset coordination between PEs and their regions' FSMs.",
        },
        "servers": [_server(server_url)],
        "paths": {
            "/pe/{pe}": {
                "get": {
                    "summary": "The PE's notification board",
                    "parameters": [_PE],
                    "responses": {
                        "200": _json(_ref("Board"), "Latest notification per region."),
                        **_errors(400, 404),
                    },
                }
            },
            "/pe/{pe}/region/{region}": {
                "get": {
                    "summary": "The PE's latest notification for one region",
                    "parameters": [_PE, _REGION],
                    "responses": {"200": _json(_ref("Notification"), "The entry."), **_errors(400, 404)},
                }
            },
            "/region/{region}/state": _region_value("Region state", {"enum": state_enum}),
            "/region/{region}/lastcompletedseqid": _region_value(
                "Sequence id of the last completed checkpoint", {"type": "integer", "minimum": 0}
            ),
            "/region/{region}/trigger": _region_value("Trigger", {"enum": ["periodic", "operator driven"]}),
            "/region/{region}/period": _region_value("Drain period (0 if operator driven)", seconds),
            "/region/{region}/draintimeout": _region_value("Drain timeout", seconds),
            "/region/{region}/resettimeout": _region_value("Reset timeout", seconds),
            "/region/{region}/maxconsecutiveresetattempts": _region_value(
                "Reset attempts before giving up", {"type": "integer", "minimum": 1}
            ),
            "/region/{region}/pe/{pe}/checkpoint": _progress("A PE finished its checkpoint", "SequenceId"),
            "/region/{region}/pe/{pe}/blockingcheckpoint": _progress(
                "A PE finished the blocking part of its checkpoint", "SequenceId"
            ),
            "/region/{region}/pe/{pe}/reset": _progress("A PE finished its reset", "ResetProgress"),
            "/region/{region}/drain": _request("A trigger operator started a drain", "DrainRequest"),
            "/region/{region}/reset": _request(
                "Request a reset (force: beyond the attempt limit)", "ResetRequest"
            ),
        },
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
