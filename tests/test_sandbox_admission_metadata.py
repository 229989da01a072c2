"""Object metadata and the smaller kinds over HTTP, on the sandbox and on kube-apiserver
(`writes_fixture`), validated as kube-apiserver does: each kind's name format, label keys and
values, annotation keys and their 256 KiB total, owner references, finalizers; Namespaces, Nodes,
Leases, Events, RBAC objects and NetworkPolicies."""

from __future__ import annotations

from typing import Any

import pytest

from api_writes import Writes

pytest_plugins = ["writes_fixture"]

CMS = "/api/v1/namespaces/{namespace}/configmaps"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
pytestmark = pytest.mark.sandbox(simulate=False)


def config_map(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta}}


async def test_names_follow_each_kinds_rule(writes: Writes) -> None:
    reply = await writes.create(CMS, config_map(name="Bad_Name"))
    assert reply.causes == [
        (
            "metadata.name",
            'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        )
    ]
    long_name = "c" * 254
    reply = await writes.create(CMS, config_map(name=long_name))
    assert reply.causes == [
        ("metadata.name", f'Invalid value: "{long_name}": must be no more than 253 characters')
    ]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}
    reply = await writes.create("/api/v1/namespaces", namespace)
    assert reply.causes == [("metadata.name", 'Invalid value: "team.a": must not contain dots')]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "a%b"}}
    reply = await writes.create(f"{RBAC}/namespaces/{{namespace}}/roles", role)
    assert reply.causes == [("metadata.name", "Invalid value: \"a%b\": may not contain '%'")]
    role["metadata"]["name"] = "system:streams.Operator"  # RBAC names are path segments only
    assert (await writes.create(f"{RBAC}/namespaces/{{namespace}}/roles", role)).status == 201
    generated = await writes.create(CMS, {"metadata": {"generateName": "gen-"}})
    assert generated.status == 201


async def test_label_keys_values_and_annotations(writes: Writes) -> None:
    labels = {"example.com/ok": "v", "Bad Key": "v", "a/b/c": "v", "k": "not valid!"}
    reply = await writes.create(CMS, config_map(labels=labels))
    assert [field for field, _ in reply.causes] == ["metadata.labels"] * 3
    messages = sorted(message for _, message in reply.causes)  # kube-apiserver: in Go's map order
    assert messages[0].startswith(
        'Invalid value: "Bad Key": name part must consist of alphanumeric characters'
    )
    assert messages[1].startswith('Invalid value: "a/b/c": a valid label key must consist of')
    assert messages[2].startswith('Invalid value: "not valid!": a valid label must be an empty string or')
    reply = await writes.create(CMS, config_map(labels={"k": "v" * 64}))
    assert reply.causes == [
        ("metadata.labels", f'Invalid value: "{"v" * 64}": must be no more than 63 bytes')
    ]
    reply = await writes.create(CMS, config_map(annotations={"Example.COM/Key": "x", "bad key": "y"}))
    assert [field for field, _ in reply.causes] == ["metadata.annotations"]  # keys are case-insensitive
    huge = {"a": "x" * (256 * 1024)}
    reply = await writes.create(CMS, config_map(annotations=huge))
    assert reply.causes == [("metadata.annotations", "Too long: may not be more than 262144 bytes")]


async def test_owner_references_and_finalizers(writes: Writes) -> None:
    refs = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1", "controller": True},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": "", "controller": True},
    ]
    reply = await writes.create(CMS, config_map(ownerReferences=refs, finalizers=["bad finalizer"]))
    fields = [field for field, _ in reply.causes]
    assert fields == [
        "metadata.ownerReferences[1].uid",
        "metadata.ownerReferences",
        "metadata.finalizers",
        "metadata.finalizers[0]",
    ]
    assert reply.causes[0][1] == "Required value: must not be empty"
    assert reply.causes[1][1] == (
        'Invalid value: [{"apiVersion":"v1","kind":"Pod","name":"p","uid":"1","controller":true},'
        '{"apiVersion":"apps/v1","kind":"StatefulSet","name":"s","uid":"","controller":true}]: '
        'Only one reference can have Controller set to true. Found "true" in references for Pod/p and '
        "StatefulSet/s"
    )
    # A built-in kind refuses a finalizer without a domain (a custom resource only warns of it).
    reply = await writes.create(CMS, config_map(finalizers=["cleanup"]))
    assert reply.causes == [
        (
            "metadata.finalizers[0]",
            'Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified',
        )
    ]
    assert (
        await writes.create(CMS, config_map(finalizers=["kubernetes", "example.com/cleanup"]))
    ).status == 201


async def test_namespaces_nodes_and_leases(writes: Writes) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "spec": {
            "podCIDR": "10.244.9.0/33",
            "taints": [
                {"key": "k", "effect": "NoSchedule"},
                {"key": "k", "effect": "NoSchedule"},
                {"key": "x", "effect": "Sometimes"},
            ],
        },
    }
    reply = await writes.create("/api/v1/nodes", node)
    # metadata.taints: kube-apiserver's own path for a node's taints
    assert [field for field, _ in reply.causes] == [
        "metadata.taints[1]",
        "metadata.taints[2].effect",
        "spec.podCIDRs[0]",
    ]
    assert reply.causes[0][1] == (
        'Duplicate value: {"Key":"k","Value":"","Effect":"NoSchedule","TimeAdded":null}: '
        "taints must be unique by key and effect pair"
    )
    leases = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}
    reply = await writes.create(leases, {**lease, "spec": {"leaseDurationSeconds": 0}})
    assert reply.causes == [("spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0")]
    reply = await writes.create(leases, {**lease, "spec": {"acquireTime": "yesterday"}})
    assert reply.status == 400
    assert 'cannot parse "yesterday"' in reply.message


async def test_events_written_through_events_k8s_io_need_their_reporting_fields(writes: Writes) -> None:
    events = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "regarding": {"kind": "Pod", "name": "p", "namespace": writes.namespace},
        "reason": "Started",
        "type": "Normal",
        "note": "x" * 1025,
    }
    reply = await writes.create(events, event)
    assert reply.status == 422
    assert [field for field, _ in reply.causes] == ["eventTime"]
    event.update(eventTime="2026-01-01T00:00:00.000000Z", type="Info")
    reply = await writes.create(events, event)
    assert [field for field, _ in reply.causes] == [
        "reportingController",
        "reportingController",
        "reportingController",
        "reportingInstance",
        "action",
        "message",  # the field as stored: events.k8s.io Events are core Events
        "type",
    ]
    event.update(
        reportingController="streams.ibm.com/operator",
        reportingInstance="op-1",
        action="Run",
        type="Normal",
        note="ok",
    )
    created = await writes.create(events, event)
    assert created.status == 201
    reply = await writes.patch(f"{events}/e", {"note": "changed"})
    assert reply.causes == [("message", 'Invalid value: "changed": field is immutable')]
    core = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "legacy"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"},
    }
    reply = await writes.create("/api/v1/namespaces/{namespace}/events", core)
    assert reply.causes == [
        ("involvedObject.namespace", 'Invalid value: "other": does not match event.namespace')
    ]


async def test_rbac_rules_references_and_subjects(writes: Writes) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
        ],
    }
    reply = await writes.create(f"{RBAC}/namespaces/{{namespace}}/roles", role)
    assert reply.causes == [  # the declarative rules (a required field) come last
        (
            "rules[1].nonResourceURLs",
            'Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs',
        ),
        ("rules[0].verbs", "Required value"),
    ]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator"}, {"kind": "User", "name": "alice"}],
    }
    created = await writes.create(f"{RBAC}/namespaces/{{namespace}}/rolebindings", binding)
    assert created.status == 201, created.body
    assert [subject.get("apiGroup") for subject in created.body["subjects"]] == [
        None,
        "rbac.authorization.k8s.io",
    ]
    reply = await writes.patch(
        f"{RBAC}/namespaces/{{namespace}}/rolebindings/b", {"roleRef": {"name": "other"}}
    )
    assert reply.causes == [
        (
            "roleRef",
            'Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: '
            "field is immutable",
        )
    ]
    cluster_binding = {
        **binding,
        "kind": "ClusterRoleBinding",
        "roleRef": {**binding["roleRef"], "kind": "Role"},
    }
    reply = await writes.create(f"{RBAC}/clusterrolebindings", cluster_binding)
    assert reply.causes == [
        ("roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"'),
        ("subjects[0].namespace", "Required value"),
    ]


async def test_network_policy_peers_and_ports(writes: Writes) -> None:
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "np"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "streams"}},
            "ingress": [
                {
                    "from": [
                        {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
                        {},
                        {"ipBlock": {"cidr": "10.0.0.0/33"}},
                    ],
                    "ports": [{"port": "much-too-long-name"}, {"port": 80, "endPort": 79}],
                }
            ],
        },
    }
    reply = await writes.create("/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies", policy)
    assert [field for field, _ in reply.causes] == [
        "spec.ingress[0].ports[0].port",
        "spec.ingress[0].ports[1].endPort",
        "spec.ingress[0].from[0]",
        "spec.ingress[0].from[1]",
        "spec.ingress[0].from[2].ipBlock.cidr",
    ]
    policy["spec"]["ingress"] = [{"ports": [{"port": 10000}]}]
    created = await writes.create("/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies", policy)
    assert created.status == 201
    assert created.body["spec"]["policyTypes"] == ["Ingress"]
    assert created.body["spec"]["ingress"][0]["ports"][0]["protocol"] == "TCP"
