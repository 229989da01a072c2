"""Server-side Tables (what `kubectl get` asks for) as kube-apiserver serves them: paginated like
lists, rows carrying what `includeObject` asks for, Table rows on watch with the column
definitions in the first event only, and CRD columns (Age only when the CRD declares none)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from sandbox_crds import GROUP, widget, widget_crd
from streams_k8s.sandbox import Sandbox

pytestmark = pytest.mark.sandbox(simulate=False)

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io"
CMS = "/api/v1/namespaces/default/configmaps"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/default/widgets"


async def get_table(sandbox: Sandbox, path: str, **query: Any) -> tuple[int, Any]:
    params = {k: str(v) for k, v in query.items()}
    async with (
        aiohttp.ClientSession(sandbox.url) as http,
        http.get(path, params=params, headers={"Accept": TABLE}) as response,
    ):
        return response.status, orjson.loads(await response.read())


def configmaps(sandbox: Sandbox, count: int) -> None:
    rt = sandbox.registry.types[("", "configmaps")]
    for i in range(count):
        sandbox.registry.create(
            rt, "v1", "default", {"metadata": {"name": f"cm-{i:03d}"}, "data": {"k": "v"}}
        )


async def test_a_table_is_paginated_like_the_list(sandbox: Sandbox) -> None:
    configmaps(sandbox, 7)
    names: list[str] = []
    token = None
    while True:
        status, page = await get_table(sandbox, CMS, limit=3, **({"continue": token} if token else {}))
        assert status == 200
        assert page["kind"] == "Table"
        names += [row["cells"][0] for row in page["rows"]]
        token = page["metadata"].get("continue")
        if not token:
            assert "remainingItemCount" not in page["metadata"]
            break
        assert page["metadata"]["remainingItemCount"] == 7 - len(names)
    assert names == [f"cm-{i:03d}" for i in range(7)]
    # With a selector the server cannot count what remains, as kube-apiserver.
    _, page = await get_table(sandbox, CMS, limit=3, labelSelector="x!=y")
    assert page["metadata"]["continue"]
    assert "remainingItemCount" not in page["metadata"]


async def test_rows_carry_what_include_object_asks_for(sandbox: Sandbox) -> None:
    configmaps(sandbox, 1)
    _, table = await get_table(sandbox, CMS)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    row = table["rows"][0]
    assert row["cells"][:2] == ["cm-000", 1]
    assert row["object"]["kind"] == "PartialObjectMetadata"  # the default: metadata only
    assert row["object"]["metadata"]["name"] == "cm-000"
    assert "data" not in row["object"]
    _, table = await get_table(sandbox, CMS, includeObject="Object")
    assert table["rows"][0]["object"]["data"] == {"k": "v"}
    _, table = await get_table(sandbox, f"{CMS}/cm-000", includeObject="None")
    assert "object" not in table["rows"][0]
    assert table["metadata"]["resourceVersion"]
    status, error = await get_table(sandbox, CMS, includeObject="Everything")
    assert status == 400
    assert "includeObject" in error["message"]


async def test_a_crd_with_printer_columns_shows_exactly_those(
    sandbox: Sandbox,
) -> None:
    crd = widget_crd()
    sandbox.install_crd(crd)
    rt = sandbox.registry.types[(GROUP, "widgets")]
    sandbox.registry.create(rt, "v1", "default", widget("gear"))
    _, table = await get_table(sandbox, WIDGETS)
    # Name plus the declared Color and Phase: no Age the CRD did not declare.
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Color", "Phase"]
    assert table["rows"][0]["cells"] == ["gear", "blue", None]  # no phase yet: kubectl shows <none>
    # Without printer columns, kube-apiserver shows Name and Age.
    del crd["spec"]["versions"][0]["additionalPrinterColumns"]
    sandbox.install_crd(crd)
    _, table = await get_table(sandbox, WIDGETS)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert table["rows"][0]["cells"][1].endswith("s")


async def test_events_show_kube_apiserver_columns(sandbox: Sandbox) -> None:
    rt = sandbox.registry.types[("", "events")]
    sandbox.registry.create(
        rt,
        "v1",
        "default",
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "type": "Warning",
            "reason": "BackOff",
            "message": "restarting ",
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 3,
        },
    )
    _, table = await get_table(sandbox, "/api/v1/namespaces/default/events")
    columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert [name for name, priority in columns if priority == 0] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    cells = dict(zip([name for name, _ in columns], table["rows"][0]["cells"], strict=True))
    assert (cells["Type"], cells["Reason"], cells["Object"], cells["Message"]) == (
        "Warning",
        "BackOff",
        "pod/p",
        "restarting",
    )
    assert (cells["Count"], cells["Name"]) == (3, "e1")
    assert cells["Last Seen"].endswith("d")  # days ago


async def test_a_table_watch_sends_rows_and_the_columns_once(
    sandbox: Sandbox,
) -> None:
    configmaps(sandbox, 2)
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "5"}
    events: list[dict[str, Any]] = []
    async with (
        aiohttp.ClientSession(sandbox.url) as http,
        http.get(CMS, params=params, headers={"Accept": TABLE}) as response,
    ):
        assert response.status == 200
        async for line in response.content:
            events.append(orjson.loads(line))
            if len(events) == 2:
                rt = sandbox.registry.types[("", "configmaps")]
                sandbox.registry.delete(rt, "default", "cm-000")
            if len(events) == 3:
                break
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "DELETED"]
    first, *rest = (e["object"] for e in events)
    assert [c["name"] for c in first["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert all(table["columnDefinitions"] is None for table in rest)  # kubectl keeps the first ones
    assert [t["rows"][0]["cells"][:2] for t in (first, *rest)] == [
        ["cm-000", 1],
        ["cm-001", 1],
        ["cm-000", 1],
    ]
    assert all(t["kind"] == "Table" and len(t["rows"]) == 1 for t in (first, *rest))
    assert rest[-1]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
