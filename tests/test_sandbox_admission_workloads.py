"""Deployments and StatefulSets over HTTP, on the sandbox and on kube-apiserver (`writes_fixture`):
selectors that match the template's labels, restart policy, strategies, and the fields an update
may not change."""

from __future__ import annotations

from typing import Any

from api_writes import Writes

pytest_plugins = ["writes_fixture"]

DEPLOYMENTS = "/apis/apps/v1/namespaces/{namespace}/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/{namespace}/statefulsets"


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
            'Invalid value: {"app":"other"}: `selector` does not match template `labels`',
        )
    ]
    empty = workload("Deployment", "e", {}, {"app": "e"})
    reply = await writes.create(DEPLOYMENTS, empty)
    assert reply.causes == [("spec.selector", "Invalid value: {}: empty selector is invalid for deployment")]


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


async def test_a_statefulset_keeps_its_selector_service_claims_and_pod_management(writes: Writes) -> None:
    body = workload("StatefulSet", "pool", {"app": "pool"}, {"app": "pool"}, serviceName="pool")
    created = await writes.create(STATEFULSETS, body)
    assert created.status == 201, created.body
    changed = await writes.patch(
        f"{STATEFULSETS}/pool", {"spec": {"serviceName": "other", "podManagementPolicy": "Parallel"}}
    )
    assert changed.status == 422
    assert changed.causes == [
        ("spec.serviceName", 'Invalid value: "other": field is immutable'),
        ("spec.podManagementPolicy", 'Invalid value: "Parallel": field is immutable'),
    ]
    image = {
        "spec": {
            "replicas": 2,
            "revisionHistoryLimit": 3,  # the rest of the spec may change (1.37)
            "template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}},
        }
    }
    assert (await writes.patch(f"{STATEFULSETS}/pool", image)).status == 200


async def test_a_statefulset_template_is_a_valid_pod(writes: Writes) -> None:
    # kube-apiserver 1.37 checks the whole pod template, as a Deployment's.
    pod = {
        "hostname": "Set_By_The_Controller",  # as subdomain: not checked, each pod gets its own
        "containers": [
            {
                "name": "main",
                "image": "busybox:1",
                "ports": [{"containerPort": 1, "name": "much-too-long-name"}],
            }
        ],
    }
    body = workload("StatefulSet", "pool", {"app": "pool"}, {"app": "pool"}, pod=pod)
    reply = await writes.create(STATEFULSETS, body)
    assert reply.status == 422
    assert reply.causes == [
        (
            "spec.template.spec.containers[0].ports[0].name",
            'Invalid value: "much-too-long-name": must be no more than 15 characters',
        )
    ]
