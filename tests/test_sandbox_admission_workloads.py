"""Deployments and StatefulSets through the sandbox's HTTP API, validated as by kube-apiserver:
selectors that match the template's labels, restart policy, strategies, and the fields an update
may not change."""

from __future__ import annotations

from typing import Any

from sandbox_writes import Writes
from streams_k8s.sandbox import Sandbox

pytest_plugins = ["writes_fixture"]

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"


def workload(
    kind: str, name: str, selector: dict[str, str], labels: dict[str, str], **spec: Any
) -> dict[str, Any]:
    pod_spec = spec.pop("pod", {"containers": [{"name": "main", "image": "busybox:1"}]})
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            **spec,
        },
    }


async def test_deployment_selector_must_match_the_template(writes: Writes) -> None:
    reply = await writes.create(DEPLOYMENTS, workload("Deployment", "d", {"app": "d"}, {"app": "other"}))
    assert reply.status == 422
    assert reply.causes == [
        (
            "spec.template.metadata.labels",
            'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`',
        )
    ]
    empty = workload("Deployment", "e", {}, {"app": "e"})
    reply = await writes.create(DEPLOYMENTS, empty)
    assert [f for f, _ in reply.causes] == ["spec.selector"]
    assert reply.causes[0][1].endswith("empty selector is invalid for deployment")


async def test_deployment_template_is_a_valid_pod_that_restarts_always(writes: Writes) -> None:
    pod = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "busybox:1",
                "ports": [{"containerPort": 1, "name": "much-too-long-name"}],
            }
        ],
    }
    reply = await writes.create(DEPLOYMENTS, workload("Deployment", "d", {"app": "d"}, {"app": "d"}, pod=pod))
    assert reply.causes == [
        (
            "spec.template.spec.containers[0].ports[0].name",
            'Invalid value: "much-too-long-name": must be no more than 15 characters',
        ),
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"'),
    ]
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}
    reply = await writes.create(
        DEPLOYMENTS, workload("Deployment", "s", {"app": "s"}, {"app": "s"}, strategy=strategy, replicas=-1)
    )
    assert reply.causes == [
        ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        (
            "spec.strategy.rollingUpdate.maxUnavailable",
            'Invalid value: "0%": may not be 0 when `maxSurge` is 0',
        ),
    ]


async def test_deployment_selector_is_immutable(writes: Writes) -> None:
    created = await writes.create(
        DEPLOYMENTS, workload("Deployment", "d", {"app": "d"}, {"app": "d", "v": "1"})
    )
    assert created.status == 201
    assert created.body["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}
    reply = await writes.patch(
        f"{DEPLOYMENTS}/d", {"spec": {"selector": {"matchLabels": {"app": "d", "v": "1"}}}}
    )
    assert reply.status == 422
    assert reply.causes[-1][0] == "spec.selector"
    assert reply.causes[-1][1].endswith("field is immutable")
    scaled = await writes.patch(f"{DEPLOYMENTS}/d", {"spec": {"replicas": 3}})
    assert scaled.status == 200


async def test_statefulset_names_are_dns_labels(writes: Writes) -> None:
    reply = await writes.create(
        STATEFULSETS, workload("StatefulSet", "pool.coordinators", {"a": "b"}, {"a": "b"})
    )
    assert reply.status == 422
    assert reply.causes == [("metadata.name", 'Invalid value: "pool.coordinators": must not contain dots')]


async def test_statefulset_spec_is_immutable_but_replicas_template_and_strategy(writes: Writes) -> None:
    body = workload("StatefulSet", "pool", {"app": "pool"}, {"app": "pool"}, serviceName="pool")
    created = await writes.create(STATEFULSETS, body)
    assert created.status == 201, created.body
    changed = await writes.patch(f"{STATEFULSETS}/pool", {"spec": {"serviceName": "other"}})
    assert changed.status == 422
    assert changed.causes == [
        (
            "spec",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
            "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
            "are forbidden",
        )
    ]
    image = {
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}},
        }
    }
    assert (await writes.patch(f"{STATEFULSETS}/pool", image)).status == 200


async def test_a_statefulset_template_is_checked_when_its_pods_are_made(
    writes: Writes, sandbox: Sandbox
) -> None:
    # kube-apiserver checks a StatefulSet template's labels only: invalid pods fail at creation.
    pod = {
        "containers": [
            {
                "name": "main",
                "image": "busybox:1",
                "ports": [{"containerPort": 1, "name": "much-too-long-name"}],
            }
        ]
    }
    body = workload("StatefulSet", "pool", {"app": "pool"}, {"app": "pool"}, pod=pod)
    assert (await writes.create(STATEFULSETS, body)).status == 201
    await sandbox.settle()
    pods = await writes.get("/api/v1/namespaces/default/pods?labelSelector=app%3Dpool")
    assert pods.body["items"] == []
