"""The paths of the OpenAPI documents: an operation per verb a resource serves (list, create,
deletecollection, read, replace, patch, delete, their status and all-namespaces forms), with the
query parameters kube-apiserver declares (a PATCH's `fieldValidation` tells kubectl to leave
validation to the server)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streams_k8s.sandbox.admission.builtin_schemas import META
from streams_k8s.sandbox.openapi_schemas import V2_REFS, V3_REFS, schema_name
from streams_k8s.sandbox.patch import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH
from streams_k8s.sandbox.resources import ResourceType

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
_PATCH_TYPES = (APPLY_PATCH, JSON_PATCH, MERGE_PATCH)
V3, V2 = 3, 2


def paths(types: Iterable[ResourceType], version: str, openapi: int) -> dict[str, Any]:
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
        self.refs = V3_REFS if openapi == V3 else V2_REFS
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
        if self.openapi == V3:
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
            result_ref = self.refs + META + "Status"
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
            types = [*_PATCH_TYPES, *([STRATEGIC_PATCH] if self.rt.builtin else [])]
            self._body(out, self.refs + META + "Patch", types)
        elif action in ("delete", "deletecollection"):
            self._body(out, self.refs + META + "DeleteOptions", ["application/json"], required=False)
        return out

    def _response(self, ref: str) -> dict[str, Any]:
        if self.openapi == V3:
            schema = {"schema": {"$ref": ref}}
            return {"description": "OK", "content": {"application/json": schema, "application/yaml": schema}}
        return {"description": "OK", "schema": {"$ref": ref}}

    def _body(self, out: dict[str, Any], ref: str, types: list[str], required: bool = True) -> None:
        if self.openapi == V3:
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
