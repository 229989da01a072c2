"""The OpenAPI document of the consistent-region API: served, complete, and describing the
runtime's exact bodies."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator

from streams_k8s.consistent.fsm import Health, RegionMachine
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.openapi import document
from streams_k8s.consistent.rest import SERVER_URL, consistent_region_api
from test_consistent_rest import serving, spec

DOC = document(SERVER_URL)


def validator(name: str) -> OAS31Validator:
    # Rooted at the whole document so that $refs to other components resolve.
    return OAS31Validator({"$ref": f"#/components/schemas/{name}", "components": DOC["components"]})


@pytest.mark.parametrize(
    ("schema", "body", "valid"),
    [
        ("SequenceId", 5, True),
        ("SequenceId", "5", True),
        ("SequenceId", -1, False),
        ("SequenceId", "five", False),
        ("ResetProgress", {"progress": {"seqId": "5", "resetAttempt": "0"}}, True),
        ("ResetProgress", {"progress": {"seqId": "5"}}, False),
        ("DrainRequest", {"request": {"seqId": "5", "operator": "Beacon"}}, True),
        ("DrainRequest", {"request": {"seqId": "5"}}, False),
        ("ResetRequest", {"request": {"operator": "Beacon", "force": "false"}}, True),
        ("ResetRequest", {"request": {"force": True}}, True),
        ("ResetRequest", {"request": {"force": "maybe"}}, False),
        ("Board", {"0": {"type": "triggerDrain", "message": "seqId=1"}}, True),
        ("Board", {"x": {"type": "triggerDrain", "message": "seqId=1"}}, False),
        ("Board", {"0": {"type": "explode", "message": "seqId=1"}}, False),
    ],
)
def test_schemas_describe_the_runtimes_bodies(schema: str, body: Any, valid: bool) -> None:
    assert validator(schema).is_valid(body) is valid


async def test_document_is_served_and_every_path_is_routed() -> None:
    coordinator = LocalCoordinator([RegionMachine(spec(0, period=60.0))])
    coordinator.submit(0, Health(True, True))
    bodies = {
        "SequenceId": b"1",
        "ResetProgress": b'{"progress":{"seqId":"0","resetAttempt":"0"}}',
        "DrainRequest": b'{"request":{"seqId":"1","operator":"Beacon"}}',
        "ResetRequest": b'{"request":{"force":"false"}}',
    }
    async with serving(coordinator) as api:
        status, served = await api.get("/openapi.json")
        assert status == 200
        assert served == DOC
        assert served["openapi"] == "3.1.0"
        for path, methods in DOC["paths"].items():
            url = path.replace("{region}", "0").replace("{pe}", "3")
            for method, op in methods.items():
                body = b""
                if "requestBody" in op:
                    ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                    body = bodies[ref.rsplit("/", 1)[1]]
                async with api.session.request(method.upper(), api.base + url, data=body) as r:
                    assert str(r.status) in op["responses"], (method, path, r.status)
                    if r.status == 404:
                        # A documented "nothing there yet", not a missing route.
                        assert (await r.json())["message"] != "Not Found", (method, path)


def test_every_route_is_documented() -> None:
    app = consistent_region_api(LocalCoordinator([]))
    documented = {(m.upper(), p) for p, ops in DOC["paths"].items() for m in ops}
    for route in app.router.routes():
        path = route.resource.canonical if route.resource else ""
        if route.method == "HEAD" or path == "/openapi.json":
            continue
        if path == "/region/{region}/{field}":
            assert any(m == "GET" and p.startswith("/region/{region}/") for m, p in documented)
            continue
        assert (route.method, path) in documented
