"""OpenAPI v3 (an index, then one document per group-version) and v2, published by the sandbox as
kube-apiserver publishes them (each test runs on both, `api_server_fixtures`): the built-in kinds'
real schemas and the CRDs' schemas, each kind found by its `x-kubernetes-group-version-kind`, and
PATCH operations that declare `fieldValidation` (which tells kubectl to leave validation to the
server)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from openapi_schema_validator import OAS30Validator

from api_server import ApiServer
from sandbox_crds import widget_crd

pytest_plugins = ["api_server_fixtures"]


async def get(api: ApiServer, path: str, accept: str = "application/json") -> tuple[int, Any]:
    async with api.session() as session, session.get(api.url + path, headers={"Accept": accept}) as r:
        raw = await r.read()
        return r.status, orjson.loads(raw) if raw[:1] == b"{" else raw  # the v3 index is text/plain


def kind_schema(document: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    wanted = {"group": group, "version": version, "kind": kind}
    (schema,) = [
        s
        for s in document["components"]["schemas"].values()
        if wanted in s.get("x-kubernetes-group-version-kind", [])
    ]
    return schema


async def test_v3_index_names_every_group_version_with_a_content_hash(api_server: ApiServer) -> None:
    status, index = await get(api_server, "/openapi/v3")
    assert status == 200
    paths = index["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/streams.ibm.com/v1", "apis/rbac.authorization.k8s.io/v1"} <= set(
        paths
    )
    url = paths["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    status, document = await get(api_server, url)
    assert status == 200
    assert document["openapi"] == "3.0.0"
    assert (await get(api_server, "/openapi/v3/apis/nothing/v1"))[0] == 404


async def test_built_in_kinds_have_their_real_schemas_and_field_validation(api_server: ApiServer) -> None:
    _, document = await get(api_server, "/openapi/v3/api/v1")
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


async def test_custom_resources_have_their_crd_schemas(api_server: ApiServer) -> None:
    _, document = await get(api_server, "/openapi/v3/apis/streams.ibm.com/v1")
    job = kind_schema(document, "streams.ibm.com", "v1", "Job")
    assert "fusion" in job["properties"]["spec"]["properties"]
    assert job["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in document["components"]["schemas"]
    patch = document["paths"]["/apis/streams.ibm.com/v1/namespaces/{namespace}/streamsjobs/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]


async def test_a_new_crd_appears_in_the_documents(api_server: ApiServer) -> None:
    group = f"{api_server.namespace}.new.example.com"  # a group no document has yet
    _, before = await get(api_server, "/openapi/v3")
    assert f"apis/{group}/v1" not in before["paths"]
    crd = widget_crd(group=group, short_names=())
    api_server.delete_after(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
    status, _ = await api_server.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201
    async with asyncio.timeout(30):  # the real server publishes it a moment later
        while True:
            _, after = await get(api_server, "/openapi/v3")
            if f"apis/{group}/v1" in after["paths"]:
                break
            await asyncio.sleep(0.1)
    _, document = await get(api_server, after["paths"][f"apis/{group}/v1"]["serverRelativeURL"])
    widget = kind_schema(document, group, "v1", "Widget")
    assert widget["properties"]["spec"]["properties"]["color"]["enum"] == ["red", "blue"]
    _, v2 = await get(api_server, "/openapi/v2")
    assert f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}" in v2["paths"]
    assert v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.core.v1.PodSpec",
        "description": v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["description"],
    }
    status, raw = await get(
        api_server, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    )
    assert status == 200
    if api_server.real:
        assert raw[:2] == b"\n\x03"  # the v2 document, protobuf-encoded: field 1, swagger "2.0"
    else:  # a difference the sandbox README lists: it has no protobuf encoding of its documents
        assert raw == b""
