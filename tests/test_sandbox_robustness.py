"""Bad input never crashes the sandbox: arbitrary bodies, patches and delete options get a
Kubernetes error (ApiError, i.e. a 4xx Status over HTTP) or succeed, and the store stays consistent."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams_k8s.sandbox import ApiError, Sandbox
from streams_k8s.sandbox.cluster.nodes import free_pod_cidr, make_nodes
from streams_k8s.sandbox.controllers.gc import GarbageCollector
from streams_k8s.sandbox.controllers.manager import ControllerManager
from streams_k8s.sandbox.patch import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.worker import Worker

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 70000)
    | st.text(max_size=6)
    | st.sampled_from(["1", "100m", "x"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
names = st.sampled_from(["a", "b", "Bad_Name", ""]) | json_values
metadata = st.fixed_dictionaries(
    {"name": names},
    optional={
        "labels": json_values
        | st.dictionaries(st.sampled_from(["app", "x"]), st.sampled_from(["web", "db"])),
        "finalizers": json_values | st.just(["test/hold"]),
        "ownerReferences": json_values,
        "generateName": json_values,
    },
)
bodies = st.fixed_dictionaries(
    {"metadata": metadata | json_values},
    optional={"spec": json_values, "data": json_values, "status": json_values, "kind": json_values},
)
_CONTAINERS = [{"name": "c", "image": "i:1", "resources": {"requests": {"cpu": "100m"}}}]
valid_bodies = st.sampled_from(
    [
        {"metadata": {"name": "a", "labels": {"app": "web"}}, "spec": {"containers": _CONTAINERS}},
        {
            "metadata": {"name": "b", "labels": {"app": "web"}},
            "spec": {"containers": _CONTAINERS, "restartPolicy": "Never"},
        },
        {"metadata": {"name": "a"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
        {
            "metadata": {"name": "a"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": _CONTAINERS}},
            },
        },
        {"metadata": {"name": "b", "finalizers": ["test/hold"]}, "data": {"k": "v"}},
    ]
)
operations = st.lists(
    st.tuples(
        st.sampled_from(["create", "update", "merge", "json", "strategic", "delete"]),
        st.sampled_from([("", "pods"), ("", "configmaps"), ("", "services"), ("apps", "statefulsets")]),
        st.sampled_from(["a", "b"]),
        valid_bodies | bodies | json_values,
    ),
    max_size=16,
)


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def world() -> tuple[Registry, list[Worker[Any]]]:
    registry = Registry()
    gc = GarbageCollector(registry)
    controllers = ControllerManager(registry)
    cidrs: list[str] = []
    for node in make_nodes(2):
        cidrs.append(free_pod_cidr(cidrs))
        registry.create(registry.types[("", "nodes")], "v1", None, node.to_object(cidrs[-1]))
    return registry, [*gc.workers, *controllers.workers]


def step(workers: list[Worker[Any]]) -> None:
    """Let the garbage collector and the embedded controllers react until they are done."""
    for _ in range(20):
        if not sum(w.run_pending() for w in workers):
            return


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_arbitrary_requests_only_ever_fail_with_api_errors(ops: list[tuple[str, Any, str, Any]]) -> None:
    registry, workers = world()
    failures = _Collector()
    logging.getLogger("streams_k8s.sandbox").addHandler(failures)
    unexpected: list[dict[str, Any]] = []
    patch_types = {"merge": MERGE_PATCH, "json": JSON_PATCH, "strategic": STRATEGIC_PATCH}
    for op, key, name, body in ops:
        rt = registry.types[key]
        try:
            if op == "create":
                registry.create(rt, "v1", "default", body)
            elif op == "update":
                registry.update(rt, "v1", "default", name, body)
            elif op in patch_types:
                registry.patch(rt, "v1", "default", name, patch_types[op], body)
            else:
                registry.delete(rt, "default", name, body if isinstance(body, dict) else None)
        except ApiError as err:
            if not 400 <= err.code < 500:
                unexpected.append(err.status())
        step(workers)
    logging.getLogger("streams_k8s.sandbox").removeHandler(failures)
    assert unexpected == []
    assert failures.messages == []  # no simulated controller failed on what was stored
    for coll in registry.store.collections.values():
        for (ns, obj_name), obj in coll.objects.items():
            meta = obj["metadata"]
            assert meta["name"] == obj_name
            assert isinstance(meta["uid"], str)
            assert registry.store.by_uid[meta["uid"]] == (coll.rt.key, (ns, obj_name))


async def test_malformed_http_requests_get_status_errors(sandbox: Sandbox) -> None:
    cms = sandbox.url + "/api/v1/namespaces/default/configmaps"
    cases: list[tuple[str, str, bytes, str]] = [
        ("POST", cms, b"{not json", "application/json"),
        ("POST", cms, b"[1, 2]", "application/json"),
        ("POST", cms, b"", "application/json"),
        ("POST", cms, orjson.dumps({"metadata": {"name": "x", "ownerReferences": [1]}}), "application/json"),
        ("PATCH", cms + "/nope", b"{}", "application/merge-patch+json"),
        ("PATCH", cms + "/nope", b"{}", "text/plain"),
        ("GET", cms + "?limit=ten", b"", "application/json"),
        ("GET", cms + "?watch=true&resourceVersion=abc", b"", "application/json"),
        ("GET", cms + "?labelSelector=a%20in", b"", "application/json"),
        ("DELETE", cms + "/x?gracePeriodSeconds=soon", b"", "application/json"),
        ("PUT", sandbox.url + "/api/v1/namespaces/default/pods/p", b"{}", "application/json"),
        ("GET", sandbox.url + "/api/v1/namespaces/default/configmaps/a/b/c/d", b"", "application/json"),
        (
            "POST",
            sandbox.url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            b"{}",
            "application/json",
        ),
    ]
    async with aiohttp.ClientSession() as session:
        for method, url, body, content_type in cases:
            async with session.request(method, url, data=body, headers={"Content-Type": content_type}) as r:
                assert 400 <= r.status < 500, (method, url, r.status, await r.text())
                status = await r.json()
                assert status["kind"] == "Status"
                assert status["code"] == r.status
        async with session.get(cms) as r:
            assert r.status == 200
