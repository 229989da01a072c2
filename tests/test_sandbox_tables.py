"""Server-side Tables (what `kubectl get` asks for) as kube-apiserver serves them, on the sandbox and
on the real control plane (`api_server_fixtures`): paginated like lists, rows carrying what
`includeObject` asks for, Table rows on watch with the column definitions in the first event only,
and CRD columns (Age only when the CRD declares none)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from api_server import ROOT_CA, ApiServer
from sandbox_crds import widget, widgets_path

pytest_plugins = ["api_server_fixtures"]
pytestmark = pytest.mark.sandbox(simulate=False)

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io"
CMS = "/api/v1/namespaces/{namespace}/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def get_table(api: ApiServer, path: str, **query: Any) -> tuple[int, Any]:
    params = {k: str(v) for k, v in query.items()}
    url = api.url + path.format(namespace=api.namespace)
    async with api.session() as http, http.get(url, params=params, headers={"Accept": TABLE}) as response:
        return response.status, orjson.loads(await response.read())


async def create(api: ApiServer, path: str, body: dict[str, Any]) -> None:
    status, answer = await api.call("POST", path.format(namespace=api.namespace), body)
    assert status == 201, answer


async def configmaps(api: ApiServer, count: int) -> None:
    for i in range(count):
        await create(api, CMS, {"metadata": {"name": f"cm-{i:03d}"}, "data": {"k": "v"}})


def ours(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for row in rows if row["cells"][0] != ROOT_CA]


async def test_a_table_is_paginated_like_the_list(api_server: ApiServer) -> None:
    await configmaps(api_server, 7)
    _, listing = await api_server.call("GET", CMS.format(namespace=api_server.namespace))
    total = len(listing["items"])  # with the real server's root CA ConfigMap
    names: list[str] = []
    token = None
    while True:
        status, page = await get_table(api_server, CMS, limit=3, **({"continue": token} if token else {}))
        assert status == 200
        assert page["kind"] == "Table"
        names += [row["cells"][0] for row in page["rows"]]
        token = page["metadata"].get("continue")
        if not token:
            assert "remainingItemCount" not in page["metadata"]
            break
        assert page["metadata"]["remainingItemCount"] == total - len(names)
    assert [n for n in names if n != ROOT_CA] == [f"cm-{i:03d}" for i in range(7)]
    # With a selector the server cannot count what remains, as kube-apiserver.
    _, page = await get_table(api_server, CMS, limit=3, labelSelector="x!=y")
    assert page["metadata"]["continue"]
    assert "remainingItemCount" not in page["metadata"]


async def test_rows_carry_what_include_object_asks_for(api_server: ApiServer) -> None:
    await configmaps(api_server, 1)
    _, table = await get_table(api_server, CMS)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    (row,) = ours(table["rows"])
    assert row["cells"][:2] == ["cm-000", 1]
    assert row["object"]["kind"] == "PartialObjectMetadata"  # the default: metadata only
    assert row["object"]["metadata"]["name"] == "cm-000"
    assert "data" not in row["object"]
    _, table = await get_table(api_server, CMS, includeObject="Object")
    assert ours(table["rows"])[0]["object"]["data"] == {"k": "v"}
    _, table = await get_table(api_server, f"{CMS}/cm-000", includeObject="None")
    assert table["rows"][0]["object"] is None
    assert table["metadata"]["resourceVersion"]
    status, error = await get_table(api_server, CMS, includeObject="Everything")
    assert status == 400
    assert "includeObject" in error["message"]


async def test_a_crd_with_printer_columns_shows_exactly_those(
    api_server: ApiServer, own_widgets: str
) -> None:
    widgets = widgets_path(own_widgets)
    await create(api_server, widgets, widget("gear", group=own_widgets))
    _, table = await get_table(api_server, widgets)
    # Name plus the declared Color and Phase: no Age the CRD did not declare.
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Color", "Phase"]
    assert table["rows"][0]["cells"] == ["gear", "blue", None]  # no phase yet: kubectl shows <none>
    # Without printer columns, kube-apiserver shows Name and Age.
    crd_path = f"{CRDS}/widgets.{own_widgets}"
    _, crd = await api_server.call("GET", crd_path)
    del crd["spec"]["versions"][0]["additionalPrinterColumns"]
    status, _ = await api_server.call("PUT", crd_path, crd)
    assert status == 200
    async with asyncio.timeout(30):  # the real server serves the new columns a moment later
        while True:
            status, table = await get_table(api_server, widgets)
            if status == 200 and len(table["columnDefinitions"]) == 2:
                break
            await asyncio.sleep(0.05)
    columns = [(c["name"], c["type"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", "string"), ("Age", "date")]
    assert table["rows"][0]["cells"][1].endswith("s")


async def test_events_show_kube_apiserver_columns(api_server: ApiServer) -> None:
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": api_server.namespace},
        "type": "Warning",
        "reason": "BackOff",
        "message": "restarting ",
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 3,
    }
    await create(api_server, "/api/v1/namespaces/{namespace}/events", event)
    _, table = await get_table(api_server, "/api/v1/namespaces/{namespace}/events")
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


async def test_a_table_watch_sends_rows_and_the_columns_once(api_server: ApiServer) -> None:
    await configmaps(api_server, 2)
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "5"}
    events: list[dict[str, Any]] = []
    url = api_server.url + CMS.format(namespace=api_server.namespace)
    async with (
        api_server.session() as http,
        http.get(url, params=params, headers={"Accept": TABLE}) as response,
    ):
        assert response.status == 200
        async for line in response.content:
            event = orjson.loads(line)
            if event["object"]["rows"][0]["cells"][0] == ROOT_CA:
                continue
            events.append(event)
            if len(events) == 2:
                status, _ = await api_server.call("DELETE", f"{url.removeprefix(api_server.url)}/cm-000")
                assert status == 200
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
