"""The sandbox publishes OpenAPI v3 (an index, then one document per group-version) and v2 as
kube-apiserver does: the built-in kinds' real schemas and the CRDs' schemas, each kind found by its
`x-kubernetes-group-version-kind`, and PATCH operations that declare `fieldValidation` (which tells
kubectl to leave validation to the server)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
from openapi_schema_validator import OAS30Validator

from sandbox_crds import GROUP, widget_crd
from streams_k8s.sandbox import Sandbox


async def get(sandbox: Sandbox, path: str, accept: str = "application/json") -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(sandbox.url + path, headers={"Accept": accept}) as r,
    ):
        raw = await r.read()
        return r.status, orjson.loads(raw) if raw and "json" in r.content_type else raw


def kind_schema(document: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    wanted = {"group": group, "version": version, "kind": kind}
    (schema,) = [
        s
        for s in document["components"]["schemas"].values()
        if wanted in s.get("x-kubernetes-group-version-kind", [])
    ]
    return schema


async def test_v3_index_names_every_group_version_with_a_content_hash(sandbox: Sandbox) -> None:
    status, index = await get(sandbox, "/openapi/v3")
    assert status == 200
    paths = index["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/streams.ibm.com/v1", "apis/rbac.authorization.k8s.io/v1"} <= set(
        paths
    )
    url = paths["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    status, document = await get(sandbox, url)
    assert status == 200
    assert document["openapi"] == "3.0.0"
    assert (await get(sandbox, "/openapi/v3/apis/nothing/v1"))[0] == 404


async def test_built_in_kinds_have_their_real_schemas_and_field_validation(sandbox: Sandbox) -> None:
    _, document = await get(sandbox, "/openapi/v3/api/v1")
    pod = kind_schema(document, "", "v1", "Pod")
    assert pod["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    port = document["components"]["schemas"]["io.k8s.api.core.v1.ContainerPort"]
    assert port["required"] == ["containerPort"]
    assert "IANA_SVC_NAME" in port["properties"]["name"]["description"]
    patch = document["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert "fieldValidation" in {p["name"] for p in patch["parameters"] if p["in"] == "query"}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    # Every schema is an OpenAPI 3.0 schema object (one type each, no JSON-schema-only keywords).
    for name, schema in document["components"]["schemas"].items():
        OAS30Validator.check_schema(schema)
        assert "$schema" not in schema, name
        assert not isinstance(schema.get("type"), list), name


async def test_custom_resources_have_their_crd_schemas(sandbox: Sandbox) -> None:
    _, document = await get(sandbox, "/openapi/v3/apis/streams.ibm.com/v1")
    job = kind_schema(document, "streams.ibm.com", "v1", "Job")
    assert "fusion" in job["properties"]["spec"]["properties"]
    assert job["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in document["components"]["schemas"]
    patch = document["paths"]["/apis/streams.ibm.com/v1/namespaces/{namespace}/streamsjobs/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]


async def test_a_new_crd_appears_in_the_documents(sandbox: Sandbox) -> None:
    _, before = await get(sandbox, "/openapi/v3")
    assert f"apis/{GROUP}/v1" not in before["paths"]
    sandbox.install_crd(widget_crd())
    _, after = await get(sandbox, "/openapi/v3")
    _, document = await get(sandbox, after["paths"][f"apis/{GROUP}/v1"]["serverRelativeURL"])
    widget = kind_schema(document, GROUP, "v1", "Widget")
    assert widget["properties"]["spec"]["properties"]["color"]["enum"] == ["red", "blue"]
    _, v2 = await get(sandbox, "/openapi/v2")
    assert f"/apis/{GROUP}/v1/namespaces/{{namespace}}/widgets/{{name}}" in v2["paths"]
    assert v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.core.v1.PodSpec",
        "description": v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["description"],
    }
    status, raw = await get(
        sandbox, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    )
    assert status == 200  # kubectl's protobuf request: an empty document (see the sandbox README)
    assert raw == b""
