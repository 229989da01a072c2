"""Pods over HTTP, on the sandbox and on kube-apiserver (`writes_fixture`), validated as
kube-apiserver validates them: container and port names, ports and protocols, env, volumes and
their mounts, resources, probes, scheduling fields, and what an update may change. Each refusal is
a 422 with the real server's causes."""

from __future__ import annotations

from typing import Any

import pytest

from api_server import ApiServer
from api_writes import STRATEGIC, Writes, container, pod

pytest_plugins = ["writes_fixture"]

PODS = "/api/v1/namespaces/{namespace}/pods"


async def refused(writes: Writes, body: dict[str, Any]) -> list[tuple[str, str]]:
    reply = await writes.create(PODS, body)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    assert reply.body["details"]["kind"] == "Pod"
    return reply.causes


async def test_container_port_names_are_iana_service_names(writes: Writes) -> None:
    body = pod("p", containers=[container(ports=[{"containerPort": 10000, "name": "sys-notifications"}])])
    reply = await writes.create(PODS, body)
    assert reply.status == 422
    assert reply.message == (
        'Pod "p" is invalid: spec.containers[0].ports[0].name: Invalid value: "sys-notifications": '
        "must be no more than 15 characters"
    )
    bad = [{"containerPort": 1, "name": "Web--"}, {"containerPort": 2, "name": "123"}]
    causes = await refused(writes, pod("q", containers=[container(ports=bad)]))
    assert causes == [
        (
            "spec.containers[0].ports[0].name",
            'Invalid value: "Web--": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
        ),
        ("spec.containers[0].ports[0].name", 'Invalid value: "Web--": must not contain consecutive hyphens'),
        ("spec.containers[0].ports[0].name", 'Invalid value: "Web--": must not begin or end with a hyphen'),
        ("spec.containers[0].ports[1].name", 'Invalid value: "123": must contain at least one letter (a-z)'),
    ]
    ok = [{"containerPort": 10000, "name": "sys-notify", "protocol": "UDP"}, {"containerPort": 9696}]
    assert (await writes.create(PODS, pod("r", containers=[container(ports=ok)]))).status == 201


async def test_port_numbers_protocols_and_duplicate_names(writes: Writes) -> None:
    ports = [
        {"containerPort": 70000, "name": "a"},
        {"containerPort": 80, "name": "a", "protocol": "tcp"},
        {"containerPort": 81, "hostPort": 0},
    ]
    causes = await refused(writes, pod("p", containers=[container(ports=ports)]))
    assert causes == [
        (
            "spec.containers[0].ports[0].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        ("spec.containers[0].ports[1].name", 'Duplicate value: "a"'),
        (
            "spec.containers[0].ports[1].protocol",
            'Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"',
        ),
    ]


async def test_container_names_images_and_duplicates(writes: Writes) -> None:
    containers = [
        {"name": "Main", "image": "busybox:1"},
        {"name": "side"},
        {"name": "side", "image": " busybox:1"},
    ]
    causes = await refused(writes, pod("p", containers=containers))
    assert (
        "spec.containers[0].name",
        'Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric '
        "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ) in causes
    assert ("spec.containers[1].image", "Required value") in causes
    assert ("spec.containers[2].name", 'Duplicate value: "side"') in causes
    assert (
        "spec.containers[2].image",
        'Invalid value: " busybox:1": must not have leading or trailing whitespace',
    ) in causes
    assert await refused(writes, pod("q", containers=[])) == [("spec.containers", "Required value")]


async def test_volume_mounts_name_declared_volumes(writes: Writes) -> None:
    mounts = [
        {"name": "data", "mountPath": "/data"},
        {"name": "config", "mountPath": "/data"},
        {"name": "missing", "mountPath": "/other"},
    ]
    volumes = [
        {"name": "data", "emptyDir": {}},
        {"name": "config", "configMap": {"name": "c", "items": [{"key": "k", "path": "../escape"}]}},
        {"name": "data", "emptyDir": {}},
        {"name": "none"},
        {"name": "Two_Sources", "emptyDir": {}, "hostPath": {"path": "/tmp"}},
    ]
    causes = await refused(writes, pod("p", containers=[container(volumeMounts=mounts)], volumes=volumes))
    assert causes == [
        ("spec.volumes[1].configMap.items[0].path", "Invalid value: \"../escape\": must not contain '..'"),
        ("spec.volumes[2].name", 'Duplicate value: "data"'),  # volumes[3], without a source: an emptyDir
        ("spec.volumes[4].hostPath", "Forbidden: may not specify more than 1 volume type"),
        (
            "spec.volumes[4].name",
            'Invalid value: "Two_Sources": a lowercase RFC 1123 label must consist of lower case '
            "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
            "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        ("spec.containers[0].volumeMounts[1].name", 'Not found: "config"'),
        ("spec.containers[0].volumeMounts[1].mountPath", 'Invalid value: "/data": must be unique'),
        ("spec.containers[0].volumeMounts[2].name", 'Not found: "missing"'),
    ]


async def test_env_names_and_value_sources(writes: Writes) -> None:
    env = [
        {"name": "A=B", "value": "x"},
        {
            "name": "FROM_TWO",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.name"},
                "secretKeyRef": {"name": "s", "key": "k"},
            },
        },
        {"name": "BOTH", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "PATH_BAD", "valueFrom": {"fieldRef": {"fieldPath": "spec.containers"}}},
        {"name": "KEY_BAD", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "a/b"}}},
        {"name": "DOTS.and-dashes ok", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    ]
    causes = await refused(writes, pod("p", containers=[container(env=env)]))
    assert causes[0] == (
        "spec.containers[0].env[0].name",
        'Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII '
        "characters other than '='",
    )
    fields = [field for field, _ in causes]
    assert fields == [
        "spec.containers[0].env[0].name",
        "spec.containers[0].env[1].valueFrom",
        "spec.containers[0].env[2].valueFrom",
        "spec.containers[0].env[3].valueFrom.fieldRef.fieldPath",
        "spec.containers[0].env[4].valueFrom.configMapKeyRef.key",
    ]
    assert causes[1][1] == 'Invalid value: "": may not have more than one field specified at a time'
    assert causes[2][1] == 'Invalid value: "": may not be specified when `value` is not empty'
    assert causes[3][1] == (
        'Invalid value: "spec.containers": error converting fieldPath: '
        "field label not supported: spec.containers"
    )


async def test_resources_requests_within_limits(writes: Writes) -> None:
    resources = {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1", "nvidia.com/gpu": "1"}}
    causes = await refused(writes, pod("p", containers=[container(resources=resources)]))
    assert causes == [
        (
            "spec.containers[0].resources.requests",
            'Invalid value: "2": must be less than or equal to cpu limit of 1',
        )
    ]
    reply = await writes.create(PODS, pod("q", containers=[container(resources={"requests": {"cpu": "x"}})]))
    assert reply.status == 400
    assert "quantities must match the regular expression" in reply.message


async def test_probes_and_scheduling_fields(writes: Writes) -> None:
    probe = {"exec": {"command": ["cat", "/tmp/live"]}, "httpGet": {"port": 80}, "successThreshold": 2}
    body = pod(
        "p",
        containers=[container(livenessProbe=probe)],
        restartPolicy="Sometimes",
        nodeSelector={"bad key!": "v"},
        tolerations=[{"key": "k", "operator": "Exists", "value": "v"}],
        hostname="Host.Name",
    )
    causes = await refused(writes, body)
    fields = [field for field, _ in causes]
    assert "spec.containers[0].livenessProbe.httpGet" in fields  # a second handler
    assert ("spec.containers[0].livenessProbe.successThreshold", "Invalid value: 2: must be 1") in causes
    assert (
        "spec.restartPolicy",
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ) in causes
    assert "spec.nodeSelector" in fields
    assert "spec.tolerations[0].operator" in fields
    assert "spec.hostname" in fields


FORBIDDEN_POD_UPDATE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
    "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
    "was previously negative)"
)


async def test_pod_updates_change_only_mutable_fields(writes: Writes, api_server: ApiServer) -> None:
    created = await writes.create(PODS, pod("p", containers=[container(command=["sleep", "1"])]))
    assert created.status == 201
    image = [{"name": "main", "image": "busybox:2"}]
    reply = await writes.patch(f"{PODS}/p", {"spec": {"containers": image}}, STRATEGIC)
    assert reply.status == 200
    assert reply.body["spec"]["containers"][0]["image"] == "busybox:2"
    command = [{"name": "main", "command": ["sleep", "2"]}]
    reply = await writes.patch(f"{PODS}/p", {"spec": {"containers": command}}, STRATEGIC)
    assert reply.status == 422
    [(field, message)] = reply.causes
    assert field == "spec"
    if api_server.real:  # a unified diff of the internal pod specs follows
        assert message.startswith(FORBIDDEN_POD_UPDATE + "\n@@ ")
        assert '-    "1"\n+    "2"\n' in message
    else:  # a difference the sandbox README lists: no diff
        assert message == FORBIDDEN_POD_UPDATE
    added = [{"name": "side", "image": "busybox:1"}]
    reply = await writes.patch(f"{PODS}/p", {"spec": {"containers": added}}, STRATEGIC)
    assert reply.causes == [("spec.containers", "Forbidden: pod updates may not add or remove containers")]
    tolerations = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    assert (await writes.patch(f"{PODS}/p", {"spec": {"tolerations": tolerations}})).status == 200


@pytest.mark.sandbox(simulate=False)  # unscheduled: a bound pod's PUT would also need its nodeName
async def test_a_defaulted_field_left_out_of_an_update_keeps_its_default(writes: Writes) -> None:
    created = await writes.create(PODS, pod("p"))
    assert created.body["spec"]["restartPolicy"] == "Always"
    body = created.body  # what admission added stays (a cluster's token volume, tolerations)
    del body["metadata"]["resourceVersion"]  # the scheduler may have written the status since
    for defaulted in ("restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds"):
        del body["spec"][defaulted]  # defaulted again, so nothing changes
    del body["spec"]["containers"][0]["imagePullPolicy"]
    body["metadata"]["labels"] = {"a": "b"}
    reply = await writes.replace(f"{PODS}/p", body)
    assert reply.status == 200, reply.body
    assert reply.body["metadata"]["labels"] == {"a": "b"}
    assert reply.body["spec"]["restartPolicy"] == "Always"
