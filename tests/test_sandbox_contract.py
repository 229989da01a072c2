"""Contract suite: the Kubernetes REST semantics the sandbox shares with kube-apiserver, driven
through raw HTTP (aiohttp) and through kubernetes_asyncio's ApiClient. Every test runs once per
client, on the sandbox and on the real control plane (`api_server_fixtures`); the few that need what only
the sandbox has (fault injection, its bookmark period) run on the sandbox alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from api_clients import CLIENT_KINDS, JSONPATCH, MERGE, STRATEGIC, Client, KubeAsyncio, RawHttp, until
from api_server import ApiServer, ours
from sandbox_crds import GROUP, WIDGETS, widget, widgets_path
from streams_k8s.k8s.client import load_configuration
from streams_k8s.sandbox import Sandbox

pytest_plugins = ["api_server_fixtures"]
# The API server alone: no simulated scheduler or kubelet moving pods around.
pytestmark = pytest.mark.sandbox(simulate=False)

CMS = "/api/v1/namespaces/{namespace}/configmaps"
PODS = "/api/v1/namespaces/{namespace}/pods"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@asynccontextmanager
async def connected(kind: str, api: ApiServer) -> AsyncIterator[Client]:
    if kind == "http":
        async with api.session() as session:
            yield RawHttp(api, session)
    else:
        async with ApiClient(await load_configuration(str(api.kubeconfig))) as client:
            yield KubeAsyncio(client, api.namespace)


@pytest.fixture
async def client(client_kind: str, api_server: ApiServer) -> AsyncIterator[Client]:
    async with connected(client_kind, api_server) as c:
        yield c


@pytest.fixture(params=CLIENT_KINDS)
async def sandbox_client(request: pytest.FixtureRequest, sandbox_server: ApiServer) -> AsyncIterator[Client]:
    async with connected(request.param, sandbox_server) as c:
        yield c


@pytest.fixture
def widgets(client: Client, widgets_served: ApiServer) -> Client:
    return client


async def gone(client: Client, path: str) -> None:
    """Until `path` is 404: the garbage collector or the namespace controller at work."""
    await until(client, path, lambda status, _: status == 404)


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **({"labels": labels} if labels is not None else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"}], **spec},
    }


async def collect(client: Client, path: str, query: dict[str, Any], count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async for event in client.watch(path, query):
        events.append(event)
        if len(events) >= count:
            break
    return events


# -- discovery -----------------------------------------------------------------------------------


async def test_discovery_lists_groups_resources_and_subresources(client: Client) -> None:
    status, version = await client.call("GET", "/version")
    assert status == 200
    assert (version["major"], version["minor"], version["emulationMinor"]) == ("1", "37", "37")
    assert version["gitVersion"].startswith("v1.37.2")  # the sandbox's: v1.37.2+streams-sandbox
    _, core = await client.call("GET", "/api")
    assert core["versions"] == ["v1"]
    _, groups = await client.call("GET", "/apis")
    names = {g["name"] for g in groups["groups"]}
    assert {"apps", "coordination.k8s.io", "events.k8s.io", "apiextensions.k8s.io"} <= names
    _, v1 = await client.call("GET", "/api/v1")
    by_name = {r["name"]: r for r in v1["resources"]}
    assert by_name["pods"]["shortNames"] == ["po"]
    assert by_name["pods"]["namespaced"]
    assert "watch" in by_name["pods"]["verbs"]
    assert "pods/status" in by_name
    _, apps = await client.call("GET", "/apis/apps/v1")
    scale = {r["name"]: r for r in apps["resources"]}["statefulsets/scale"]
    assert scale["kind"] == "Scale"
    assert scale["group"] == "autoscaling"
    # A group-version nobody serves: the API server's plain-text 404, not a Status
    assert await client.call("GET", "/apis/nope.example.com/v1") == (404, "404 page not found\n")


async def test_crd_registration_serves_the_resource_and_its_discovery(widgets: Client) -> None:
    _, group_doc = await widgets.call("GET", f"/apis/{GROUP}")
    assert group_doc["preferredVersion"]["version"] == "v1"
    _, resources = await widgets.call("GET", f"/apis/{GROUP}/v1")
    names = {r["name"]: r for r in resources["resources"]}
    assert names["widgets"]["shortNames"] == ["wd"]
    assert {"widgets/status", "widgets/scale"} <= set(names)
    _, crd = await widgets.call(
        "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}"
    )
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established["Established"] == "True"


# -- identity, create, errors --------------------------------------------------------------------


async def test_create_sets_identity_and_rejects_duplicates(client: Client) -> None:
    status, created = await client.call("POST", CMS, cm("one", a="1"))
    assert status == 201
    meta = created["metadata"]
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    status, err = await client.call("POST", CMS, cm("one"))
    assert status == 409
    assert err["kind"] == "Status"
    assert err["reason"] == "AlreadyExists"
    assert err["details"]["name"] == "one"
    status, generated = await client.call("POST", CMS, {"metadata": {"generateName": "gen-"}})
    assert status == 201
    assert generated["metadata"]["name"].startswith("gen-")
    assert len(generated["metadata"]["name"]) == len("gen-") + 5


async def test_invalid_names_unknown_namespaces_and_resources_are_rejected(client: Client) -> None:
    status, err = await client.call("POST", CMS, cm("Bad_Name"))
    assert status == 422
    assert err["reason"] == "Invalid"
    assert err["details"]["causes"][0]["field"] == "metadata.name"
    status, err = await client.call("POST", "/api/v1/namespaces/missing/configmaps", cm("x"))
    assert status == 404
    assert err["reason"] == "NotFound"
    assert err["details"]["kind"] == "namespaces"
    status, err = await client.call("GET", f"{CMS}/absent")
    assert status == 404
    assert err["message"] == 'configmaps "absent" not found'
    status, _ = await client.call("GET", "/api/v1/namespaces/{namespace}/gizmos")
    assert status == 404


async def test_resource_version_is_global_and_list_reports_it(client: Client) -> None:
    _, a = await client.call("POST", CMS, cm("a"))
    _, b = await client.call("POST", PODS, pod("p"))
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    _, listing = await client.call("GET", CMS)
    assert int(listing["metadata"]["resourceVersion"]) >= int(b["metadata"]["resourceVersion"])
    assert listing["kind"] == "ConfigMapList"


# -- optimistic concurrency and generation -------------------------------------------------------


async def test_stale_update_gets_409_and_noop_update_keeps_resource_version(client: Client) -> None:
    _, created = await client.call("POST", CMS, cm("c", a="1"))
    first = dict(created, data={"a": "2"})
    status, updated = await client.call("PUT", f"{CMS}/c", first)
    assert status == 200
    assert updated["data"] == {"a": "2"}
    stale = dict(created, data={"a": "3"})
    status, err = await client.call("PUT", f"{CMS}/c", stale)
    assert status == 409
    assert err["reason"] == "Conflict"
    status, same = await client.call("PUT", f"{CMS}/c", updated)
    assert status == 200
    assert same["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    unconditional = cm("c", a="4")  # built-in kinds accept an update without resourceVersion
    status, _ = await client.call("PUT", f"{CMS}/c", unconditional)
    assert status == 200


async def test_custom_resource_update_needs_resource_version(widgets: Client) -> None:
    await widgets.call("POST", WIDGETS, widget("w"))
    status, err = await widgets.call("PUT", f"{WIDGETS}/w", widget("w", size=2))
    assert status == 422
    assert err["details"]["causes"][0]["field"] == "metadata.resourceVersion"


async def test_generation_follows_spec_changes_only(widgets: Client) -> None:
    _, w = await widgets.call("POST", WIDGETS, widget("g"))
    assert w["metadata"]["generation"] == 1
    _, w = await widgets.call("PATCH", f"{WIDGETS}/g", {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert w["metadata"]["generation"] == 1
    _, w = await widgets.call("PATCH", f"{WIDGETS}/g/status", {"status": {"phase": "Ready"}}, MERGE)
    assert w["metadata"]["generation"] == 1
    assert w["status"]["phase"] == "Ready"
    _, w = await widgets.call("PATCH", f"{WIDGETS}/g", {"spec": {"size": 3}}, MERGE)
    assert w["metadata"]["generation"] == 2


async def test_status_subresource_isolation(widgets: Client) -> None:
    body = widget("s")
    body["status"] = {"phase": "Injected"}
    _, w = await widgets.call("POST", WIDGETS, body)
    assert "status" not in w  # status on create is dropped
    _, w = await widgets.call(
        "PUT", f"{WIDGETS}/s/status", {**w, "status": {"phase": "Ready"}, "spec": {"color": "red"}}
    )
    assert w["status"] == {"phase": "Ready"}
    assert w["spec"]["color"] == "blue"
    _, w = await widgets.call(
        "PUT", f"{WIDGETS}/s", {**w, "status": {"phase": "Hacked"}, "spec": {"color": "red"}}
    )
    assert w["status"] == {"phase": "Ready"}
    assert w["spec"]["color"] == "red"
    status, got = await widgets.call("GET", f"{WIDGETS}/s/status")
    assert status == 200
    assert got["status"]["phase"] == "Ready"


# -- patches ---------------------------------------------------------------------------------------


async def test_merge_patch_deletes_with_null_and_replaces_lists(client: Client) -> None:
    await client.call("POST", CMS, cm("m", a="1", b="2"))
    status, patched = await client.call("PATCH", f"{CMS}/m", {"data": {"a": None, "c": "3"}}, MERGE)
    assert status == 200
    assert patched["data"] == {"b": "2", "c": "3"}
    _, patched = await client.call("PATCH", f"{CMS}/m", {"metadata": {"finalizers": ["x/y"]}}, MERGE)
    _, patched = await client.call("PATCH", f"{CMS}/m", {"metadata": {"finalizers": ["x/z"]}}, MERGE)
    assert patched["metadata"]["finalizers"] == ["x/z"]
    await client.call("PATCH", f"{CMS}/m", {"metadata": {"finalizers": None}}, MERGE)


async def test_json_patch_with_test_operation(client: Client) -> None:
    _, created = await client.call("POST", CMS, cm("j", a="1"))
    rv = created["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "remove", "path": "/data/a"},
    ]
    status, patched = await client.call("PATCH", f"{CMS}/j", ops, JSONPATCH)
    assert status == 200
    assert patched["data"] == {"b": "2"}
    status, err = await client.call("PATCH", f"{CMS}/j", ops, JSONPATCH)  # rv changed: test fails
    assert status == 422
    assert err["kind"] == "Status"
    status, _ = await client.call("PATCH", f"{CMS}/j", [{"op": "remove", "path": "/data/zz"}], JSONPATCH)
    assert status == 422


async def test_strategic_merge_patch_merges_containers_by_name_and_is_refused_for_crs(
    widgets: Client,
) -> None:
    body = pod("sm")
    body["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
    await widgets.call("POST", PODS, body)
    patch = {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}}
    status, patched = await widgets.call("PATCH", f"{PODS}/sm", patch, STRATEGIC)
    assert status == 200
    images = {c["name"]: c["image"] for c in patched["spec"]["containers"]}
    assert images == {"main": "busybox:1", "side": "busybox:2"}
    await widgets.call("POST", WIDGETS, widget("sp"))
    status, err = await widgets.call("PATCH", f"{WIDGETS}/sp", {"spec": {"size": 2}}, STRATEGIC)
    assert status == 415
    assert err["reason"] == "UnsupportedMediaType"


# -- selectors and pagination --------------------------------------------------------------------


async def test_label_selectors_support_every_operator(client: Client) -> None:
    for name, labels in [
        ("a", {"tier": "web", "env": "prod"}),
        ("b", {"tier": "db", "env": "dev"}),
        ("c", {"tier": "cache"}),
        ("d", {}),
    ]:
        await client.call("POST", CMS, cm(name, labels))

    async def names(selector: str) -> list[str]:
        status, listing = await client.call("GET", CMS, query={"labelSelector": selector})
        assert status == 200, listing
        return [i["metadata"]["name"] for i in ours(listing["items"])]

    assert await names("tier=web") == ["a"]
    assert await names("tier==db") == ["b"]
    assert await names("tier!=web") == ["b", "c", "d"]
    assert await names("tier in (web,cache)") == ["a", "c"]
    assert await names("tier notin (web,cache)") == ["b", "d"]
    assert await names("env") == ["a", "b"]
    assert await names("!env") == ["c", "d"]
    assert await names("tier,env notin (prod)") == ["b", "c"]
    status, err = await client.call("GET", CMS, query={"labelSelector": "tier in web"})
    assert status == 400
    assert err["reason"] == "BadRequest"
    assert err["message"] == "unable to parse requirement: found 'web' expected: '('"


async def test_field_selectors(client: Client) -> None:
    await client.call("POST", PODS, pod("on-node", nodeName="node-a"))
    await client.call("POST", PODS, pod("pending"))
    _, listing = await client.call("GET", PODS, query={"fieldSelector": "spec.nodeName=node-a"})
    assert [i["metadata"]["name"] for i in listing["items"]] == ["on-node"]
    _, listing = await client.call(
        "GET", PODS, query={"fieldSelector": "status.phase=Pending,metadata.name!=on-node"}
    )
    assert [i["metadata"]["name"] for i in listing["items"]] == ["pending"]
    _, listing = await client.call(
        "GET", "/api/v1/pods", query={"fieldSelector": f"metadata.namespace={client.namespace}"}
    )
    assert len(listing["items"]) == 2
    status, err = await client.call("GET", CMS, query={"fieldSelector": "data.a=1"})
    assert status == 400
    assert (
        err["message"] == '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    status, err = await client.call("GET", PODS, query={"fieldSelector": "data.a=1"})
    assert (status, err["message"]) == (400, "field label not supported: data.a")  # a kind with its own


async def test_list_pagination_with_limit_and_continue(client: Client) -> None:
    for i in range(7):
        await client.call("POST", CMS, cm(f"page-{i}"))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        query: dict[str, Any] = {"limit": 3}
        if token:
            query["continue"] = token
        _, listing = await client.call("GET", CMS, query=query)
        seen += [i["metadata"]["name"] for i in ours(listing["items"])]
        pages += 1
        token = listing["metadata"].get("continue")
        if not token:
            break
        assert listing["metadata"]["remainingItemCount"] > 0
    assert seen == [f"page-{i}" for i in range(7)]
    assert pages == 3


# -- watch -----------------------------------------------------------------------------------------


async def test_watch_resumes_from_a_resource_version(client: Client) -> None:
    _, listing = await client.call("GET", CMS)
    rv = listing["metadata"]["resourceVersion"]
    await client.call("POST", CMS, cm("w1"))
    await client.call("PATCH", f"{CMS}/w1", {"data": {"k": "v"}}, MERGE)
    await client.call("DELETE", f"{CMS}/w1")
    events = await collect(client, CMS, {"resourceVersion": rv, "timeoutSeconds": 5}, 3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)
    assert rvs[0] > int(rv)


async def test_watch_without_resource_version_sends_current_state_then_changes(client: Client) -> None:
    await client.call("POST", CMS, cm("existing"))
    events: list[dict[str, Any]] = []
    async for event in client.watch(CMS, {"timeoutSeconds": 5}):
        events += ours([event])
        if events[-1]["object"]["metadata"]["name"] == "existing":  # the watch is open: change something
            await client.call("POST", CMS, cm("new"))
        elif events[-1]["object"]["metadata"]["name"] == "new":
            break
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "existing"),
        ("ADDED", "new"),
    ]


async def test_watch_from_compacted_resource_version_is_410(sandbox_client: Client, sandbox: Sandbox) -> None:
    """Sandbox only: compacting the history on demand is its fault injection."""
    client = sandbox_client
    _, created = await client.call("POST", CMS, cm("old"))
    await client.call("PATCH", f"{CMS}/old", {"data": {"a": "b"}}, MERGE)
    sandbox.faults.compact()
    events = await collect(client, CMS, {"resourceVersion": created["metadata"]["resourceVersion"]}, 1)
    assert events[0]["type"] == "HTTP"
    assert events[0]["status"] == 410
    assert events[0]["object"]["reason"] == "Expired"


@pytest.mark.sandbox(bookmark_interval=0.1)
async def test_watch_bookmarks_and_timeout(sandbox_client: Client) -> None:
    """Sandbox only: its bookmark period is an option (kube-apiserver's is about a minute)."""
    events = [
        e
        async for e in sandbox_client.watch(
            CMS, {"allowWatchBookmarks": "true", "timeoutSeconds": 1, "resourceVersion": "1"}
        )
    ]
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 3  # the stream ended by itself after timeoutSeconds
    assert bookmarks[0]["object"]["kind"] == "ConfigMap"
    assert bookmarks[0]["object"]["metadata"]["resourceVersion"]


async def test_send_initial_events_ends_with_annotated_bookmark(client: Client) -> None:
    await client.call("POST", CMS, cm("i1"))
    query = {
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
        "timeoutSeconds": 5,
    }
    events = []
    async for event in client.watch(CMS, query):
        events += ours([event])
        if event["type"] == "BOOKMARK":
            break
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watch_reports_label_selector_transitions(client: Client) -> None:
    _, listing = await client.call("GET", CMS)
    rv = listing["metadata"]["resourceVersion"]
    await client.call("POST", CMS, cm("t", {"role": "other"}))
    await client.call("PATCH", f"{CMS}/t", {"metadata": {"labels": {"role": "mine"}}}, MERGE)
    await client.call("PATCH", f"{CMS}/t", {"data": {"x": "1"}}, MERGE)
    await client.call("PATCH", f"{CMS}/t", {"metadata": {"labels": {"role": "other"}}}, MERGE)
    events = await collect(client, CMS, {"resourceVersion": rv, "labelSelector": "role=mine"}, 3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]


# -- delete, finalizers, garbage collection ------------------------------------------------------


async def test_delete_preconditions(client: Client) -> None:
    _, created = await client.call("POST", CMS, cm("pre"))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}}
    status, err = await client.call("DELETE", f"{CMS}/pre", body)
    assert status == 409
    assert err["reason"] == "Conflict"
    body = {"preconditions": {"resourceVersion": "1"}}
    status, _ = await client.call("DELETE", f"{CMS}/pre", body)
    assert status == 409
    body = {"preconditions": {"uid": created["metadata"]["uid"]}}
    status, gone = await client.call("DELETE", f"{CMS}/pre", body)
    assert status == 200
    assert gone["kind"] == "Status"
    assert gone["details"]["name"] == "pre"
    status, _ = await client.call("GET", f"{CMS}/pre")
    assert status == 404


async def test_finalizers_hold_deletion_until_removed(client: Client) -> None:
    _, created = await client.call(
        "POST", CMS, {**cm("fin"), "metadata": {"name": "fin", "finalizers": ["a/b"]}}
    )
    rv = created["metadata"]["resourceVersion"]
    status, deleting = await client.call("DELETE", f"{CMS}/fin")
    assert status == 200
    assert deleting["metadata"]["deletionTimestamp"]
    status, err = await client.call(
        "PATCH", f"{CMS}/fin", {"metadata": {"finalizers": ["a/b", "c/d"]}}, MERGE
    )
    assert status == 422
    assert err["details"]["causes"][0]["field"] == "metadata.finalizers"
    status, _ = await client.call("PATCH", f"{CMS}/fin", {"metadata": {"finalizers": None}}, MERGE)
    assert status == 200
    status, _ = await client.call("GET", f"{CMS}/fin")
    assert status == 404
    events = await collect(client, CMS, {"resourceVersion": rv}, 2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]


def owned(name: str, owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }
    return {"metadata": {"name": name, "ownerReferences": [ref]}}


async def test_background_deletion_collects_dependents(client: Client) -> None:
    _, owner = await client.call("POST", CMS, cm("owner"))
    await client.call("POST", CMS, owned("dep-1", owner))
    await client.call("POST", CMS, owned("dep-2", owner))
    status, _ = await client.call("DELETE", f"{CMS}/owner", {"propagationPolicy": "Background"})
    assert status == 200
    for name in ("owner", "dep-1", "dep-2"):
        await gone(client, f"{CMS}/{name}")
    _, listing = await client.call("GET", CMS)
    assert ours(listing["items"]) == []


async def test_foreground_deletion_waits_for_blocking_dependents(client: Client) -> None:
    _, owner = await client.call("POST", CMS, cm("fg"))
    blocker = owned("blocker", owner, block=True)
    blocker["metadata"]["finalizers"] = ["test/hold"]
    await client.call("POST", CMS, blocker)
    await client.call("POST", CMS, owned("plain", owner))
    status, deleting = await client.call("DELETE", f"{CMS}/fg", query={"propagationPolicy": "Foreground"})
    assert status == 200
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    await gone(client, f"{CMS}/plain")
    await until(client, f"{CMS}/blocker", lambda _, held: "deletionTimestamp" in held["metadata"])
    _, still = await client.call("GET", f"{CMS}/fg")
    assert still["metadata"]["deletionTimestamp"]  # held by its blocking dependent
    await client.call("PATCH", f"{CMS}/blocker", {"metadata": {"finalizers": None}}, MERGE)
    await gone(client, f"{CMS}/fg")


async def test_orphan_deletion_keeps_dependents_without_the_owner_reference(client: Client) -> None:
    _, owner = await client.call("POST", CMS, cm("orph"))
    await client.call("POST", CMS, owned("kept", owner))
    status, _ = await client.call("DELETE", f"{CMS}/orph", {"propagationPolicy": "Orphan"})
    assert status == 200
    await gone(client, f"{CMS}/orph")  # after the garbage collector orphaned its dependents
    status, kept = await client.call("GET", f"{CMS}/kept")
    assert status == 200
    assert "ownerReferences" not in kept["metadata"]


async def test_dependent_of_a_missing_owner_is_collected(client: Client) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}
    status, _ = await client.call("POST", CMS, owned("orphaned", ghost))
    assert status == 201
    await gone(client, f"{CMS}/orphaned")


async def test_namespace_deletion_cascades_and_blocks_creation(client: Client) -> None:
    doomed = f"doomed-{client.namespace}"  # the real server outlives the test: a name of its own
    contents = f"/api/v1/namespaces/{doomed}/configmaps"
    ns_body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": doomed}}
    status, ns = await client.call("POST", "/api/v1/namespaces", ns_body)
    assert status == 201
    assert ns["status"]["phase"] == "Active"
    held = cm("held")
    held["metadata"]["finalizers"] = ["test/hold"]
    await client.call("POST", contents, held)
    await client.call("POST", contents, cm("plain"))
    status, deleting = await client.call("DELETE", f"/api/v1/namespaces/{doomed}")
    assert status == 200
    assert deleting["status"]["phase"] == "Terminating"
    status, err = await client.call("POST", contents, cm("late"))
    assert status == 403
    assert err["reason"] == "Forbidden"
    await gone(client, f"{contents}/plain")
    _, listing = await client.call("GET", contents)
    assert [i["metadata"]["name"] for i in ours(listing["items"])] == ["held"]
    await client.call("PATCH", f"{contents}/held", {"metadata": {"finalizers": None}}, MERGE)
    await gone(client, f"/api/v1/namespaces/{doomed}")


# -- CRD schemas, scale ----------------------------------------------------------------------------


async def test_crd_schema_validation_reports_field_causes(widgets: Client) -> None:
    bad = widget("bad", size=11, label="UPPER", tags=["a", "b", "c", "d"], port=1.5, limits={"cpu": "x"})
    bad["spec"]["color"] = "green"
    status, err = await widgets.call("POST", WIDGETS, bad)
    assert status == 422
    assert err["reason"] == "Invalid"
    fields = {c["field"] for c in err["details"]["causes"]}
    assert fields >= {"spec.size", "spec.label", "spec.tags", "spec.color", "spec.port", "spec.limits.cpu"}
    missing = widget("missing")
    del missing["spec"]["color"]
    status, err = await widgets.call("POST", WIDGETS, missing)
    assert status == 422
    assert err["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.color",
    }
    status, _ = await widgets.call("POST", WIDGETS, widget("ok", port="http", note=None))
    assert status == 201


async def test_crd_defaulting_and_pruning(widgets: Client) -> None:
    body = widget("d", extra={"anything": {"goes": 1}})
    body["spec"]["unknown"] = "dropped"
    body["topLevel"] = "dropped"
    status, w = await widgets.call("POST", WIDGETS, body)
    assert status == 201
    assert w["spec"]["size"] == 1
    assert w["spec"]["mode"] == "fast"
    assert w["spec"]["replicas"] == 1
    assert "unknown" not in w["spec"]
    assert "topLevel" not in w
    assert w["spec"]["extra"] == {"anything": {"goes": 1}}
    # A null is kept where the schema allows it, defaulted where it has a default, dropped elsewhere
    # (what a JSON patch's add of null does to a field without `nullable`).
    ops = [{"op": "add", "path": f"/spec/{k}", "value": None} for k in ("note", "mode", "label")]
    status, w = await widgets.call("PATCH", f"{WIDGETS}/d", ops, JSONPATCH)
    assert status == 200
    assert (w["spec"]["note"], w["spec"]["mode"], "label" in w["spec"]) == (None, "fast", False)


async def test_crd_cel_rule_is_enforced(widgets: Client) -> None:
    status, err = await widgets.call("POST", WIDGETS, widget("big", size=7))
    assert status == 422
    assert "only red widgets are bigger than 5" in err["message"]
    status, _ = await widgets.call("POST", WIDGETS, widget("bigred", size=7, color="red"))
    assert status == 201


async def test_crd_cel_rules_ratchet_values_an_update_leaves_unchanged(
    client: Client, own_widgets: str
) -> None:
    """A widget stored before its CRD gained a rule it breaks: as on Kubernetes 1.30+, writes that
    leave the value the rule is on unchanged (status, labels) are accepted, one that changes it
    is checked."""
    crd_path, widgets = f"{CRDS}/widgets.{own_widgets}", widgets_path(own_widgets)

    def spec_schema(crd: dict[str, Any]) -> dict[str, Any]:
        return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]  # type: ignore[no-any-return]

    async def served(rules: bool) -> None:  # the real server applies a CRD change a moment later
        big = widget("probe", group=own_widgets, size=7)
        async with asyncio.timeout(30):
            while True:
                status, _ = await client.call("POST", widgets, big, query={"dryRun": "All"})
                if (status == 422) == rules:
                    return
                await asyncio.sleep(0.05)

    _, crd = await client.call("GET", crd_path)
    rules = spec_schema(crd).pop("x-kubernetes-validations")
    status, crd = await client.call("PUT", crd_path, crd)
    assert status == 200
    await served(rules=False)
    status, _ = await client.call("POST", widgets, widget("older", group=own_widgets, size=7))
    assert status == 201
    spec_schema(crd)["x-kubernetes-validations"] = rules
    status, _ = await client.call("PUT", crd_path, crd)
    assert status == 200
    await served(rules=True)

    status, _ = await client.call("PATCH", f"{widgets}/older/status", {"status": {"phase": "Up"}}, MERGE)
    assert status == 200
    status, _ = await client.call("PATCH", f"{widgets}/older", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert status == 200
    status, err = await client.call("PATCH", f"{widgets}/older", {"spec": {"size": 8}}, MERGE)
    assert status == 422
    assert "only red widgets are bigger than 5" in err["message"]


async def test_scale_subresource_of_custom_resources_and_statefulsets(widgets: Client) -> None:
    await widgets.call("POST", WIDGETS, widget("sc", replicas=2))
    await widgets.call(
        "PATCH", f"{WIDGETS}/sc/status", {"status": {"replicas": 2, "selector": "app=sc"}}, MERGE
    )
    status, scale = await widgets.call("GET", f"{WIDGETS}/sc/scale")
    assert status == 200
    assert scale["kind"] == "Scale"
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 2
    assert scale["status"] == {"replicas": 2, "selector": "app=sc"}
    status, scale = await widgets.call("PATCH", f"{WIDGETS}/sc/scale", {"spec": {"replicas": 4}}, MERGE)
    assert status == 200
    assert scale["spec"]["replicas"] == 4
    _, w = await widgets.call("GET", f"{WIDGETS}/sc")
    assert w["spec"]["replicas"] == 4
    assert w["metadata"]["generation"] == 2
    scale["spec"]["replicas"] = 5
    scale["metadata"]["resourceVersion"] = "1"
    status, _ = await widgets.call("PUT", f"{WIDGETS}/sc/scale", scale)
    assert status == 409
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "db:1"}]},
            },
        },
    }
    await widgets.call("POST", "/apis/apps/v1/namespaces/{namespace}/statefulsets", sts)
    status, scale = await widgets.call(
        "PUT",
        "/apis/apps/v1/namespaces/{namespace}/statefulsets/db/scale",
        {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "db"},
            "spec": {"replicas": 3},
        },
    )
    assert status == 200
    assert scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == "app=db"


async def test_crd_deletion_removes_the_resource(client: Client, own_widgets: str) -> None:
    widgets = widgets_path(own_widgets)
    await client.call("POST", widgets, widget("gone", group=own_widgets))
    status, _ = await client.call("DELETE", f"{CRDS}/widgets.{own_widgets}")
    assert status == 200
    await gone(client, widgets)


async def test_leases_and_events_have_full_optimistic_concurrency(client: Client) -> None:
    leases = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
    }
    _, created = await client.call("POST", leases, lease)
    taken = {**created, "spec": {**created["spec"], "holderIdentity": "b"}}
    assert (await client.call("PUT", f"{leases}/leader", taken))[0] == 200
    assert (await client.call("PUT", f"{leases}/leader", {**created, "spec": {"holderIdentity": "c"}}))[
        0
    ] == 409
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/tests",
        "reportingInstance": "tests-1",
        "action": "Starting",
        "reason": "Started",
        "regarding": {"kind": "Pod", "name": "p", "namespace": client.namespace},
        "note": "hi",
        "type": "Normal",
    }
    status, _ = await client.call("POST", "/apis/events.k8s.io/v1/namespaces/{namespace}/events", event)
    assert status == 201
    _, listing = await client.call(
        "GET",
        "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        query={"fieldSelector": "reason=Started"},
    )
    assert len(listing["items"]) == 1


# -- server-side apply -----------------------------------------------------------------------------

APPLY = "application/apply-patch+yaml"


async def test_server_side_apply_creates_updates_and_tracks_ownership(client: Client) -> None:
    manager = {"fieldManager": "controller"}
    status, created = await client.call("PATCH", f"{CMS}/ssa", cm("ssa", a="1", b="2"), APPLY, manager)
    assert status == 201  # an apply that creates
    assert created["data"] == {"a": "1", "b": "2"}
    entry = created["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"]) == ("controller", "Apply")
    assert entry["fieldsV1"]["f:data"] == {"f:a": {}, "f:b": {}}
    # Applying without b removes it: the manager owned it and no longer sets it.
    _, updated = await client.call("PATCH", f"{CMS}/ssa", cm("ssa", a="3"), APPLY, manager)
    assert updated["data"] == {"a": "3"}
    status, err = await client.call("PATCH", f"{CMS}/ssa", cm("ssa", a="1"), APPLY)
    assert status == 422
    assert err["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


async def test_server_side_apply_conflicts_between_managers(client: Client) -> None:
    await client.call("PATCH", f"{CMS}/shared", cm("shared", a="1"), APPLY, {"fieldManager": "one"})
    status, err = await client.call(
        "PATCH", f"{CMS}/shared", cm("shared", a="2"), APPLY, {"fieldManager": "two"}
    )
    assert status == 409
    assert err["reason"] == "Conflict"
    assert err["details"]["causes"][0] == {
        "reason": "FieldManagerConflict",
        "message": 'conflict with "one"',
        "field": ".data.a",
    }
    same = {"fieldManager": "two"}
    status, _ = await client.call("PATCH", f"{CMS}/shared", cm("shared", a="1", b="x"), APPLY, same)
    assert status == 200  # the same value is shared ownership, not a conflict
    forced = {"fieldManager": "two", "force": "true"}
    status, taken = await client.call("PATCH", f"{CMS}/shared", cm("shared", a="2", b="x"), APPLY, forced)
    assert status == 200
    assert taken["data"] == {"a": "2", "b": "x"}
    assert [e["manager"] for e in taken["metadata"]["managedFields"]] == ["two"]


async def test_server_side_apply_of_an_empty_map_it_drops(client: Client, api_server: ApiServer) -> None:
    """`labels: {}` is not stored; a cluster still records its applier as the owner of the labels,
    and the next manager to apply `{}` conflicts with it. The sandbox records no such ownership (a
    difference its README lists)."""
    empty = {**cm("e", a="1"), "metadata": {"name": "e", "labels": {}}}
    await client.call("PATCH", f"{CMS}/e", empty, APPLY, {"fieldManager": "one"})
    status, answer = await client.call("PATCH", f"{CMS}/e", empty, APPLY, {"fieldManager": "two"})
    if api_server.real:
        assert status == 409
        assert answer["message"] == 'Apply failed with 1 conflict: conflict with "one": .metadata.labels'
    else:
        assert status == 200


async def test_server_side_apply_merges_containers_by_name(client: Client) -> None:
    # A pod's containers cannot change once created: merge them in a Deployment's pod template.
    deployments = "/apis/apps/v1/namespaces/{namespace}/deployments"

    def deployment(*containers: dict[str, str]) -> dict[str, Any]:
        template = {"metadata": {"labels": {"app": "ssa"}}, "spec": {"containers": list(containers)}}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "ssa-deploy"},
            "spec": {"selector": {"matchLabels": {"app": "ssa"}}, "template": template},
        }

    main = deployment({"name": "main", "image": "busybox:1"})
    await client.call("PATCH", f"{deployments}/ssa-deploy", main, APPLY, {"fieldManager": "a"})
    side = deployment({"name": "side", "image": "side:1"})
    status, merged = await client.call(
        "PATCH", f"{deployments}/ssa-deploy", side, APPLY, {"fieldManager": "b"}
    )
    assert status == 200
    assert [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]] == ["main", "side"]


async def test_events_k8s_io_is_a_view_of_core_events(client: Client) -> None:
    new_api = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    core_api = "/api/v1/namespaces/{namespace}/events"
    _, listing = await client.call("GET", new_api)
    since = listing["metadata"]["resourceVersion"]
    recorded = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "regarding": {"kind": "Pod", "name": "pe-1", "namespace": client.namespace},
        "note": "started",
        "reason": "Started",
        "type": "Normal",
        "reportingController": "streams",
        "reportingInstance": "r1",
        "action": "Start",
        "eventTime": "2026-01-01T00:00:00.000000Z",
    }
    status, created = await client.call("POST", new_api, recorded)
    assert status == 201
    assert created["regarding"]["name"] == "pe-1"
    assert created["note"] == "started"
    _, core = await client.call("GET", f"{core_api}/e1")
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"]["name"] == "pe-1"
    assert core["message"] == "started"
    assert core["reportingComponent"] == "streams"
    legacy = {
        "metadata": {"name": "e2"},
        "involvedObject": {"kind": "Pod", "name": "pe-2", "namespace": client.namespace},
        "reason": "Killing",
        "message": "stopping",
        "type": "Warning",
        "count": 3,
        "source": {"component": "kubelet"},
    }
    assert (await client.call("POST", core_api, legacy))[0] == 201
    _, viewed = await client.call("GET", new_api, query={"fieldSelector": "regarding.name=pe-2"})
    assert [(e["note"], e["deprecatedCount"], e["deprecatedSource"]) for e in viewed["items"]] == [
        ("stopping", 3, {"component": "kubelet"})
    ]
    events = await collect(client, new_api, {"resourceVersion": since}, 2)
    assert [e["object"]["apiVersion"] for e in events] == ["events.k8s.io/v1", "events.k8s.io/v1"]
    assert events[1]["object"]["regarding"]["name"] == "pe-2"


async def test_subresources_are_served_only_where_declared(client: Client) -> None:
    await client.call("POST", CMS, cm("plain"))
    status, err = await client.call("GET", f"{CMS}/plain/status")
    assert status == 404
    assert err["reason"] == "NotFound"
    status, _ = await client.call("GET", f"{CMS}/plain/scale")
    assert status == 404


async def test_system_namespaces_cannot_be_deleted(client: Client) -> None:
    status, err = await client.call("DELETE", "/api/v1/namespaces/default")
    assert status == 403
    assert err["reason"] == "Forbidden"


async def test_defaults_added_to_a_crd_show_on_stored_objects(client: Client, own_widgets: str) -> None:
    widgets = widgets_path(own_widgets)
    _, before = await client.call("POST", widgets, widget("old", group=own_widgets))
    assert "shape" not in before["spec"]
    crd_path = f"{CRDS}/widgets.{own_widgets}"
    _, crd = await client.call("GET", crd_path)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["shape"] = {"type": "string", "default": "round"}
    status, _ = await client.call("PUT", crd_path, crd)
    assert status == 200
    # the real server serves the new schema once it has rebuilt its handler
    after = await until(client, f"{widgets}/old", lambda _, w: "shape" in w["spec"])
    assert after["spec"]["shape"] == "round"
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
