"""The OpenAPI documents of what the sandbox serves, as kube-apiserver publishes them: `/openapi/v3`
(an index of group-versions, then one document each) and `/openapi/v2` (one document), with the
schemas of built-in kinds (the release's own, from `admission.builtin_schemas`) and of custom
resources (their CRDs' structural schemas), and a path per operation.

kubectl reads them: `kubectl explain` walks the schemas, and a PATCH operation that declares the
`fieldValidation` parameter tells it to leave validation to the server (`--validate=strict`).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

from streams_k8s.sandbox.admission import builtin_schemas
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.release import KUBERNETES_VERSION
from streams_k8s.sandbox.resources import ResourceType

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_OBJECT_META = _META + "ObjectMeta"
_LIST_META = _META + "ListMeta"
_COMMON = (_META + "Status", _META + "DeleteOptions", _META + "Patch", _OBJECT_META, _LIST_META)
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_V3_REFS = "#/components/schemas/"
_V2_REFS = "#/definitions/"
_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "metadata": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}
_LIST_QUERY = (
    ("allowWatchBookmarks", "boolean"),
    ("continue", "string"),
    ("fieldSelector", "string"),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("resourceVersion", "string"),
    ("resourceVersionMatch", "string"),
    ("sendInitialEvents", "boolean"),
    ("timeoutSeconds", "integer"),
    ("watch", "boolean"),
)
_WRITE_QUERY = (("dryRun", "string"), ("fieldManager", "string"), ("fieldValidation", "string"))
_PATCH_QUERY = (*_WRITE_QUERY, ("force", "boolean"))
_DELETE_QUERY = (
    ("dryRun", "string"),
    ("gracePeriodSeconds", "integer"),
    ("orphanDependents", "boolean"),
    ("propagationPolicy", "string"),
)
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
_STRATEGIC = "application/strategic-merge-patch+json"


class OpenApi:
    """Builds the documents from the registry's current types, cached until the types change."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._cache: dict[str, tuple[int, bytes, str]] = {}

    # -- v3 ---------------------------------------------------------------------------------------

    def v3_index(self) -> dict[str, Any]:
        paths = {}
        for group, version in sorted(self.registry.served):
            path = _gv_path(group, version)
            _, digest = self._document(path)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
        return {"paths": paths}

    def v3(self, path: str) -> bytes | None:
        """One group-version's document (`api/v1`, `apis/apps/v1`), or None if not served."""
        if _split_gv_path(path) not in self.registry.served:
            return None
        return self._document(path)[0]

    def _document(self, path: str) -> tuple[bytes, str]:
        cached = self._cache.get(path)
        if cached is not None and cached[0] == self.registry.types_version:
            return cached[1], cached[2]
        group, version = _split_gv_path(path)
        types = list(self.registry.served[(group, version)].values())
        document = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}.0"},
            "paths": _paths(types, version, _V3),
            "components": {
                "schemas": _schemas(types, version, _V3_REFS),
                "securitySchemes": {
                    "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
                },
            },
            "security": [{"BearerToken": []}],
        }
        encoded = orjson.dumps(document)
        digest = hashlib.sha512(encoded).hexdigest().upper()
        self._cache[path] = (self.registry.types_version, encoded, digest)
        return encoded, digest

    # -- v2 ---------------------------------------------------------------------------------------

    def v2(self) -> bytes:
        cached = self._cache.get("v2")
        if cached is not None and cached[0] == self.registry.types_version:
            return cached[1]
        paths: dict[str, Any] = {}
        definitions: dict[str, Any] = {}
        for (_, version), served in sorted(self.registry.served.items()):
            types = list(served.values())
            paths.update(_paths(types, version, _V2))
            definitions.update(_schemas(types, version, _V2_REFS))
        document = {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}.0"},
            "paths": paths,
            "definitions": definitions,
            "securityDefinitions": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
            "security": [{"BearerToken": []}],
        }
        encoded = orjson.dumps(document)
        self._cache["v2"] = (self.registry.types_version, encoded, "")
        return encoded


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _split_gv_path(path: str) -> tuple[str, str]:
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return "", parts[1]
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return "", ""


# -- schemas ----------------------------------------------------------------------------------------


def schema_name(rt: ResourceType, version: str) -> str:
    """The component/definition name of a served kind: the release's name for built-ins, the
    reversed group for custom resources (`com.ibm.streams.v1.StreamsJob`)."""
    if rt.builtin:
        name = builtin_schemas.definition_name(rt.group, version, rt.kind)
        if name is not None:
            return name
    return ".".join(reversed(rt.group.split("."))) + f".{version}.{rt.kind}"


def _schemas(types: Iterable[ResourceType], version: str, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    builtin_roots: list[str] = list(_COMMON)
    for rt in types:
        name = schema_name(rt, version)
        if rt.builtin and builtin_schemas.definition_name(rt.group, version, rt.kind) is not None:
            builtin_roots.append(name)
            list_name = name + "List"
            if list_name in builtin_schemas.definitions():
                builtin_roots.append(list_name)
            continue
        out[name] = _custom_resource_schema(rt, version, prefix)
        out[name + "List"] = _custom_list_schema(rt, version, name, prefix)
    for def_name in _closure(builtin_roots):
        out[def_name] = _convert_definition(def_name, prefix)
    return out


def _closure(roots: Iterable[str]) -> list[str]:
    """The definitions reachable from `roots` through `$ref`s."""
    defs = builtin_schemas.definitions()
    seen: dict[str, None] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen[name] = None
        pending.extend(_refs(defs[name]))
    return sorted(seen)


def _refs(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield builtin_schemas.ref_name(item)
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _convert_definition(name: str, prefix: str) -> dict[str, Any]:
    schema = builtin_schemas.definitions()[name]
    description = schema.get("description")
    if name == _INT_OR_STRING:
        out: dict[str, Any] = {"type": "string", "format": "int-or-string"}
    elif name == _QUANTITY:
        out = {"type": "string"}
    else:
        out = _convert(schema, prefix, kind_root="x-kubernetes-group-version-kind" in schema)
    if description:
        out["description"] = description
    return out


def _convert(schema: dict[str, Any], prefix: str, kind_root: bool = False) -> dict[str, Any]:
    """A kubernetes-validate JSON schema as an OpenAPI schema object (single types, OpenAPI refs)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$schema", "$id") or (key == "additionalProperties" and value is False):
            continue
        if key == "$ref" and isinstance(value, str):
            out["$ref"] = prefix + builtin_schemas.ref_name(value)
        elif key == "type":
            kinds = [value] if isinstance(value, str) else [t for t in value if t != "null"]
            if kinds:
                out["type"] = kinds[0]
        elif key == "properties":
            out[key] = {
                k: _property(v, prefix, drop_enum=kind_root and k in ("apiVersion", "kind"))
                for k, v in value.items()
            }
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _property(value, prefix)
        else:
            out[key] = value
    return out


def _property(schema: dict[str, Any], prefix: str, drop_enum: bool = False) -> dict[str, Any]:
    converted = _convert(schema, prefix)
    if drop_enum:
        converted.pop("enum", None)
    ref = converted.get("$ref")
    if ref is not None and len(converted) > 1 and prefix == _V3_REFS:
        # OpenAPI 3.0 ignores siblings of $ref: kube-apiserver wraps the reference in allOf.
        rest = {k: v for k, v in converted.items() if k != "$ref"}
        return {"allOf": [{"$ref": ref}], **rest}
    return converted


def _custom_resource_schema(rt: ResourceType, version: str, prefix: str) -> dict[str, Any]:
    schema = copy.deepcopy(
        rt.schemas.get(version) or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    if prefix == _V2_REFS:
        schema = _to_v2(schema)
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"description": _DESCRIPTIONS["apiVersion"], "type": "string"}
    properties["kind"] = {"description": _DESCRIPTIONS["kind"], "type": "string"}
    meta_ref = prefix + _OBJECT_META
    properties["metadata"] = (
        {"allOf": [{"$ref": meta_ref}], "description": _DESCRIPTIONS["metadata"]}
        if prefix == _V3_REFS
        else {"$ref": meta_ref, "description": _DESCRIPTIONS["metadata"]}
    )
    schema["type"] = "object"
    schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "kind": rt.kind, "version": version}]
    return schema


def _custom_list_schema(rt: ResourceType, version: str, name: str, prefix: str) -> dict[str, Any]:
    return {
        "description": f"{rt.kind}List is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": _DESCRIPTIONS["apiVersion"], "type": "string"},
            "items": {"type": "array", "items": {"$ref": prefix + name}},
            "kind": {"description": _DESCRIPTIONS["kind"], "type": "string"},
            "metadata": {"$ref": prefix + _LIST_META},
        },
        "x-kubernetes-group-version-kind": [{"group": rt.group, "kind": rt.list_kind, "version": version}],
    }


_V2_UNSUPPORTED = ("nullable", "oneOf", "anyOf", "allOf", "not", "x-kubernetes-validations")


def _to_v2(schema: Any) -> Any:
    """What OpenAPI v2 can say of a structural schema (kube-apiserver drops the rest too)."""
    if isinstance(schema, dict):
        return {k: _to_v2(v) for k, v in schema.items() if k not in _V2_UNSUPPORTED}
    if isinstance(schema, list):
        return [_to_v2(v) for v in schema]
    return schema


# -- paths ------------------------------------------------------------------------------------------

_V3, _V2 = 3, 2


def _paths(types: Iterable[ResourceType], version: str, openapi: int) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for rt in sorted(types, key=lambda r: r.plural):
        paths.update(_resource_paths(rt, version, openapi))
    return paths


def _operation_prefix(group: str) -> str:
    if not group:
        return "Core"
    return "".join(p.capitalize() for p in group.removesuffix(".k8s.io").replace("-", ".").split("."))


def _resource_paths(rt: ResourceType, version: str, openapi: int) -> dict[str, Any]:
    root = f"/apis/{rt.group}/{version}" if rt.group else f"/api/{version}"
    scope = "Namespaced" if rt.namespaced else ""
    collection = f"{root}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{root}/{rt.plural}"
    ops = _Operations(rt, version, openapi)
    path_params = ["namespace"] if rt.namespaced else []
    kind, kinds = f"{scope}{rt.kind}", rt.list_kind
    paths: dict[str, Any] = {
        collection: {
            "get": ops.op("list", "list", kind, _LIST_QUERY, result=kinds),
            "post": ops.op("post", "create", kind, _WRITE_QUERY, body=True),
            "delete": ops.op("deletecollection", "deleteCollection", kind, _DELETE_QUERY + _LIST_QUERY[:-1]),
            "parameters": ops.path_parameters(path_params),
        },
        f"{collection}/{{name}}": {
            "get": ops.op("get", "read", kind, ()),
            "put": ops.op("put", "replace", kind, _WRITE_QUERY, body=True),
            "patch": ops.op("patch", "patch", kind, _PATCH_QUERY),
            "delete": ops.op("delete", "delete", kind, _DELETE_QUERY),
            "parameters": ops.path_parameters(["name", *path_params]),
        },
    }
    if rt.namespaced:
        paths[f"{root}/{rt.plural}"] = {
            "get": ops.op("list", "list", f"{rt.kind}ForAllNamespaces", _LIST_QUERY, result=kinds),
            "parameters": ops.path_parameters([]),
        }
    if rt.status_subresource:
        paths[f"{collection}/{{name}}/status"] = {
            "get": ops.op("get", "read", f"{kind}Status", ()),
            "put": ops.op("put", "replace", f"{kind}Status", _WRITE_QUERY, body=True),
            "patch": ops.op("patch", "patch", f"{kind}Status", _PATCH_QUERY),
            "parameters": ops.path_parameters(["name", *path_params]),
        }
    return paths


class _Operations:
    """Operation objects of one resource, in the OpenAPI version asked for."""

    def __init__(self, rt: ResourceType, version: str, openapi: int) -> None:
        self.rt, self.openapi = rt, openapi
        self.gvk = {"group": rt.group, "kind": rt.kind, "version": version}
        self.group_version = f"{_operation_prefix(rt.group)}{version.capitalize()}"
        self.tag = self.group_version[0].lower() + self.group_version[1:]
        self.refs = _V3_REFS if openapi == _V3 else _V2_REFS
        self.kind_ref = self.refs + schema_name(rt, version)

    def path_parameters(self, names: list[str]) -> list[dict[str, Any]]:
        docs = {
            "name": f"name of the {self.rt.kind}",
            "namespace": "object name and auth scope, such as for teams and projects",
        }
        params = [self._param(name, "path", "string", docs[name], required=True) for name in names]
        params.append(
            self._param("pretty", "query", "string", "If 'true', then the output is pretty printed.")
        )
        return params

    def _param(
        self, name: str, where: str, kind: str, description: str, required: bool = False
    ) -> dict[str, Any]:
        param: dict[str, Any] = {"name": name, "in": where, "description": description}
        if required:
            param["required"] = True
        if self.openapi == _V3:
            param["schema"] = {"type": kind, "uniqueItems": True}
        else:
            param["type"] = kind
            param["uniqueItems"] = True
        return param

    def op(
        self,
        action: str,
        verb: str,
        subject: str,
        query: Iterable[tuple[str, str]],
        result: str | None = None,
        body: bool = False,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "operationId": f"{verb}{self.group_version}{subject}",
            "tags": [self.tag],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": self.gvk,
            "parameters": [self._param(n, "query", t, _QUERY_DOCS.get(n, n)) for n, t in query],
        }
        if action in ("delete", "deletecollection"):
            result_ref = self.refs + _META + "Status"
        elif result is not None:
            result_ref = self.kind_ref + "List"
        else:
            result_ref = self.kind_ref
        codes = {"post": ("200", "201", "202"), "put": ("200", "201"), "patch": ("200", "201")}
        responses: dict[str, Any] = {code: self._response(result_ref) for code in codes.get(action, ("200",))}
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
        if body:
            self._body(out, self.kind_ref, ["application/json", "application/yaml"])
        elif action == "patch":
            types = [*_PATCH_TYPES, *([_STRATEGIC] if self.rt.builtin else [])]
            self._body(out, self.refs + _META + "Patch", types)
        elif action in ("delete", "deletecollection"):
            self._body(out, self.refs + _META + "DeleteOptions", ["application/json"], required=False)
        return out

    def _response(self, ref: str) -> dict[str, Any]:
        if self.openapi == _V3:
            schema = {"schema": {"$ref": ref}}
            return {"description": "OK", "content": {"application/json": schema, "application/yaml": schema}}
        return {"description": "OK", "schema": {"$ref": ref}}

    def _body(self, out: dict[str, Any], ref: str, types: list[str], required: bool = True) -> None:
        if self.openapi == _V3:
            out["requestBody"] = {
                "content": {t: {"schema": {"$ref": ref}} for t in types},
                "required": required,
            }
        else:
            out["parameters"].insert(
                0, {"name": "body", "in": "body", "required": required, "schema": {"$ref": ref}}
            )
            out["consumes"] = types
            out["produces"] = ["application/json", "application/yaml"]


_QUERY_DOCS: dict[str, str] = {
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore "
    "any unknown fields that are silently dropped from the object, and will ignore all but the last "
    "duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning "
    "response header for each unknown field that is dropped from the object, and for each duplicate field "
    "that is encountered. The request will still succeed if there are no other errors, and will only "
    "persist the last of any duplicate fields. This is the default. - Strict: This will fail the request "
    "with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate "
    "fields are present. The error returned from the server will contain all unknown and duplicate fields "
    "encountered.",
    "dryRun": "When present, indicates that modifications should not be persisted.",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is making these "
    "changes.",
    "force": 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields '
    "owned by other people.",
}
