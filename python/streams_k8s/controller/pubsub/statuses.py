"""What an Export's or Import's status says of the subscription board: whom it is connected to
(`connections`, `connectionCount`, `connectedTo` for `kubectl get stx,sti`), for an Import what it
asks for (`streams`: its stream names, or its subscription) and, for one by properties, the
`SubscriptionValid` condition. Pure: the broker writes the fields that changed.
"""

from __future__ import annotations

from typing import Any

from streams_k8s.api.import_export import MAX_LISTED_CONNECTIONS
from streams_k8s.controller.pubsub.board import Board, OtherEnd
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.objects import Object, meta

SUBSCRIPTION_VALID = "SubscriptionValid"
_SHOWN_IN_COLUMN = 5  # `connectedTo` names this many other ends, then counts the rest


def _connection_fields(ends: list[OtherEnd]) -> dict[str, Any]:
    listed = ends[:MAX_LISTED_CONNECTIONS]
    shown = ", ".join(end.label for end in ends[:_SHOWN_IN_COLUMN])
    more = len(ends) - _SHOWN_IN_COLUMN
    return {
        "connections": [
            {"name": e.name, "job": e.job, "jobId": e.job_id, "peId": e.pe_id, "portId": e.port_id}
            for e in listed
        ],
        "connectionCount": len(ends),
        "connectedTo": (f"{shown} and {more} more" if more > 0 else shown) or None,
    }


def _streams(spec: dict[str, Any]) -> str | None:
    streams = spec.get("streams") or {}
    names = sorted({str(e.get("streamName")) for e in (streams.get("nameBasedImports") or {}).values()})
    subscription = (streams.get("propertyBasedImport") or {}).get("subscription")
    return (
        "; ".join([*([", ".join(names)] if names else []), *([subscription] if subscription else [])]) or None
    )


def export_status(obj: Object, board: Board) -> dict[str, Any]:
    """The status fields the board gives this Export."""
    return _connection_fields(board.connections.get(str(meta(obj)["name"]), []))


def import_status(obj: Object, board: Board) -> dict[str, Any]:
    """The status fields the board gives this Import (its conditions with `SubscriptionValid` set,
    when it imports by properties)."""
    name, spec = str(meta(obj)["name"]), obj.get("spec") or {}
    fields = {**_connection_fields(board.connections.get(name, [])), "streams": _streams(spec)}
    if (spec.get("streams") or {}).get("propertyBasedImport"):
        problem = board.invalid.get(name)
        # copies: set_condition edits a condition in place, and these are the informer cache's
        conditions = [dict(c) for c in (obj.get("status") or {}).get("conditions") or []]
        set_condition(
            conditions,
            SUBSCRIPTION_VALID,
            "False" if problem else "True",
            "InvalidSubscription" if problem else "Parsed",
            problem or "the subscription expression is valid",
        )
        fields["conditions"] = conditions
    return fields


def changed_fields(obj: Object, wanted: dict[str, Any]) -> dict[str, Any]:
    """The fields of `wanted` the object's status does not hold yet (a merge patch: None removes)."""
    status = obj.get("status") or {}
    return {key: value for key, value in wanted.items() if status.get(key) != value}
