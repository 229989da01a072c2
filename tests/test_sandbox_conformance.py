"""The schema guard: every built-in object a sandbox stores is checked with kubernetes-validate
--strict; a violation is recorded with the object's kind and name and the schema's complaint, and
under pytest it fails the test that wrote it. What it rejects, the API server refuses (checked on
the sandbox and on the real control plane); the rest is about the sandbox's own guard."""

from __future__ import annotations

import textwrap

import pytest

from api_server import ApiServer
from streams_k8s.sandbox.conformance import check

pytest_plugins = ["pytester", "api_server_fixtures"]


def pod_with(**extra: object) -> dict[str, object]:
    spec = {"containers": [{"name": "main", "image": "busybox:1"}], **extra}
    meta = {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "99"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_check_names_the_object_and_the_schemas_complaint() -> None:
    assert check(pod_with()) is None
    assert check(pod_with(fusoin=1)) == (
        "Pod default/p: spec: Additional properties are not allowed ('fusoin' was unexpected) "
        "(kubernetes-validate --strict, Kubernetes 1.37)"
    )
    assert check({"apiVersion": "example.com/v1", "kind": "Gizmo"}) is None  # no schema: the CRD's job


@pytest.mark.sandbox(simulate=False)
async def test_what_the_guard_rejects_the_api_server_refuses(api_server: ApiServer) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    written = [
        (pod_with(), "/pods"),
        (pod_with(fusoin=1), "/pods"),
        ({**config_map, "data": {"a": "1"}}, "/configmaps"),
        ({**config_map, "data": {"a": 1}}, "/configmaps"),
    ]
    for obj, collection in written:
        meta = {"name": obj["metadata"]["name"], "namespace": api_server.namespace}
        body = {**obj, "metadata": meta}
        path = f"/api/v1/namespaces/{api_server.namespace}{collection}"
        status, answer = await api_server.call("POST", path, body, dryRun="All", fieldValidation="Strict")
        assert (check(body) is None) == (status == 201), (body, answer)


def test_a_violation_fails_the_test_that_caused_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            from streams_k8s.sandbox import Sandbox

            async def test_writes_behind_the_api() -> None:
                async with Sandbox(simulate=False) as sandbox:
                    rt = sandbox.registry.types[("", "configmaps")]
                    meta = {"name": "c", "namespace": "default", "uid": "u1", "resourceVersion": "99"}
                    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": 1}}
                    sandbox.registry.store.put(rt, ("default", "c"), bad, "ADDED")

            async def test_clean() -> None:
                async with Sandbox(simulate=False):
                    pass
            """
        )
    )
    plugin = "streams_k8s.sandbox.pytest_plugin"
    result = pytester.runpytest_subprocess("-p", "asyncio", "-p", plugin, "-o", "asyncio_mode=auto")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*a real API server's schema rejects what the sandbox accepted:*",
            "*ConfigMap default/c: data.a: 1 is not of type 'string', 'null'*",
        ]
    )
