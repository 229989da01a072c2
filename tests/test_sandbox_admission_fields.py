"""Field validation over HTTP, on the sandbox and on kube-apiserver (`writes_fixture`):
`fieldValidation=Strict` fails a write with unknown or duplicate fields (400 on create and update,
422 on a patch), `Warn` (the default) sends one `Warning` header per field, `Ignore` drops them
silently; for built-in kinds and for custom resources. Wrong types are a 400 worded as Go's JSON
decoder words them."""

from __future__ import annotations

from typing import Any

import pytest

from api_writes import APPLY, STRATEGIC, Writes
from sandbox_crds import WIDGETS, widget, widget_crd

pytest_plugins = ["writes_fixture"]

DEPLOYMENTS = "/apis/apps/v1/namespaces/{namespace}/deployments"
CMS = "/api/v1/namespaces/{namespace}/configmaps"
pytestmark = [pytest.mark.sandbox(simulate=False), pytest.mark.usefixtures("widgets_served")]


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "x:1"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template, **spec},
    }


async def test_strict_lists_every_unknown_field(writes: Writes) -> None:
    body = deployment("d", replica=3)
    body["spec"]["template"]["spec"]["containers"][0]["requests"] = {"cpu": "1"}
    body["metadata"]["label"] = {"a": "b"}
    reply = await writes.create(DEPLOYMENTS, body, fieldValidation="Strict")
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "metadata.label", unknown field "spec.template.spec.containers[0].requests", '
        'unknown field "spec.replica"'
    )  # in the order of the document
    assert (await writes.get(f"{DEPLOYMENTS}/d")).status == 404


async def test_warn_is_the_default_and_drops_the_fields(writes: Writes) -> None:
    reply = await writes.create(DEPLOYMENTS, deployment("d", replica=3))
    assert reply.status == 201
    assert reply.warnings == ['299 - "unknown field \\"spec.replica\\""']
    assert "replica" not in reply.body["spec"]
    reply = await writes.create(DEPLOYMENTS, deployment("e", replica=3), fieldValidation="Ignore")
    assert reply.status == 201
    assert reply.warnings == []
    reply = await writes.create(DEPLOYMENTS, deployment("f"), fieldValidation="Loose")
    assert reply.status == 422
    assert reply.causes == [
        ("fieldValidation", 'Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"')
    ]


async def test_duplicate_fields_are_strict_errors_and_warnings(writes: Writes) -> None:
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","a":"2"}}'
    reply = await writes.create(CMS, raw, fieldValidation="Strict")
    assert reply.status == 400
    assert reply.message.endswith('strict decoding error: duplicate field "data.a"')
    reply = await writes.create(CMS, raw)
    assert reply.status == 201
    assert reply.body["data"] == {"a": "2"}
    assert reply.warnings == ['299 - "duplicate field \\"data.a\\""']


async def test_custom_resources_strict_and_warn(writes: Writes) -> None:
    body = widget("w")
    body["spec"]["fusoin"] = "auto"
    body["spec"]["extra"] = {"kept": True}  # x-kubernetes-preserve-unknown-fields
    reply = await writes.create(WIDGETS, body, fieldValidation="Strict")
    assert reply.status == 400
    assert reply.message == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.fusoin"'
    )
    reply = await writes.create(WIDGETS, body)
    assert reply.status == 201
    assert reply.warnings == ['299 - "unknown field \\"spec.fusoin\\""']
    assert reply.body["spec"]["extra"] == {"kept": True}


async def test_strict_patches_report_the_patch(writes: Writes) -> None:
    assert (await writes.create(WIDGETS, widget("w"))).status == 201
    reply = await writes.patch(f"{WIDGETS}/w", {"spec": {"fusoin": "auto"}}, fieldValidation="Strict")
    assert reply.status == 422
    assert reply.causes[0][0] == "patch"
    assert reply.causes[0][1].endswith('strict decoding error: unknown field "spec.fusoin"')
    assert (await writes.create(DEPLOYMENTS, deployment("d"))).status == 201
    reply = await writes.patch(
        f"{DEPLOYMENTS}/d", {"spec": {"replica": 2}}, STRATEGIC, fieldValidation="Strict"
    )
    assert reply.status == 422
    assert reply.message == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[replica:2]]": strict decoding error: '
        'unknown field "spec.replica"'
    )


async def test_server_side_apply_of_an_undeclared_field_fails_as_on_a_cluster(writes: Writes) -> None:
    body = deployment("d", replica=2)
    reply = await writes.patch(f"{DEPLOYMENTS}/d", body, APPLY, fieldManager="me", fieldValidation="Ignore")
    # kube-apiserver answers this with a 500 (kubernetes#122480), whatever the field validation.
    assert reply.status == 500
    assert reply.message == (
        # the typed object's namespace: none, the configuration names none
        "failed to create typed patch object (/d; apps/v1, Kind=Deployment): "
        ".spec.replica: field not declared in schema"
    )
    assert (await writes.get(f"{DEPLOYMENTS}/d")).status == 404


async def test_wrong_types_are_bad_requests_in_go_words(writes: Writes) -> None:
    reply = await writes.create(DEPLOYMENTS, deployment("d", replicas="3"))
    assert reply.status == 400
    assert reply.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
        "struct field DeploymentSpec.spec.replicas of type int32"
    )
    body = deployment("e")
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": 1}]
    reply = await writes.create(DEPLOYMENTS, body)
    assert reply.message.endswith(
        "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value "
        "of type string"
    )
    reply = await writes.create(CMS, {"metadata": {"name": "c", "labels": {"a": 1}}})
    assert reply.message.endswith(
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
    )


PODS = "/api/v1/namespaces/{namespace}/pods"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def pod_with(**spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "x:1", "ports": [{"containerPort": 80}]}
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


_GO = "json: cannot unmarshal"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        (
            {"priority": 2**40},
            f"{_GO} number 1099511627776 into Go struct field PodSpec.spec.priority of type int32",
        ),
        (
            {"activeDeadlineSeconds": 1.5},
            f"{_GO} number 1.5 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64",
        ),
        (
            {"nodeSelector": []},
            f"{_GO} array into Go struct field PodSpec.spec.nodeSelector of type map[string]string",
        ),
        (
            {"overhead": {"cpu": "lots"}},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            {"containers": [{"name": "m", "image": "x", "livenessProbe": {"httpGet": {"port": True}}}]},
            f"{_GO} bool into Go struct field HTTPGetAction.spec.containers.livenessProbe.ProbeHandler"
            ".httpGet.port of type int32",
        ),
        (
            {"volumes": [{"name": "v", "configMap": {"items": [{"key": "k", "path": "p", "mode": "0644"}]}}]},
            f"{_GO} string into Go struct field KeyToPath.spec.volumes.VolumeSource.configMap.items.mode"
            " of type int32",
        ),
    ],
)
async def test_each_go_type_refuses_what_it_cannot_hold(
    writes: Writes, spec: dict[str, Any], why: str
) -> None:
    reply = await writes.create(PODS, pod_with(**spec))
    assert reply.status == 400
    assert reply.message == f'Pod in version "v1" cannot be handled as a Pod: {why}'


async def test_unknown_fields_are_found_at_any_depth_of_a_recursive_schema(writes: Writes) -> None:
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["propertiez"] = {}
    reply = await writes.create(CRDS, crd, fieldValidation="Strict")
    assert reply.status == 400
    assert reply.message.endswith(
        'strict decoding error: unknown field "spec.versions[0].schema.openAPIV3Schema.properties.spec'
        '.propertiez"'
    )
