"""What the API server does with a written object between the request body and storage, as one
pipeline the registry calls in order:

1. `decode` (`decode_apply` for an apply configuration): the body's shape (an object of the
   resource's apiVersion and kind, in the request's namespace), then admission decoding (field
   types, unknown and duplicate fields); on a create, `check_namespace_open`;
2. `mutate_create` / `mutate_update`: defaults, a Service's cluster IP, conversion to the storage
   form of a view;
3. `admit`: CRD preparation, the kind's validation rules, then the admission plugins (Pod Security).

The registry keeps what is its own between the steps: names, resourceVersions, system metadata.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from streams_k8s.sandbox import admission, defaults, object_meta, storage_views
from streams_k8s.sandbox.admission import FieldValidation
from streams_k8s.sandbox.admission.services import keep_allocated
from streams_k8s.sandbox.crds import CRD_KEY, prepare_crd
from streams_k8s.sandbox.errors import ApiError, bad_request, cause, invalid, not_found
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import Store

# An admission plugin (Pod Security): sees an object about to be stored (and the stored one on an
# update); raises ApiError to refuse it.
Admission = Callable[[ResourceType, dict[str, Any], dict[str, Any] | None], None]

_SERVICES = ("", "services")
_NAMESPACES = ("", "namespaces")


class WritePipeline:
    """The steps of a write, with the state they keep: the Service IP range, the plugins."""

    def __init__(self, types: Mapping[tuple[str, str], ResourceType], store: Store) -> None:
        self.types = types  # served types: a CRD may not take a built-in's name
        self._store = store  # where namespaces are looked up for their lifecycle
        self.plugins: list[Admission] = []
        self._service_ips = ipaddress.ip_network("10.96.0.0/12").hosts()
        next(self._service_ips)  # 10.96.0.1 is the kubernetes service

    def decode(
        self, rt: ResourceType, version: str, ns: str | None, body: Any, fields: FieldValidation | None
    ) -> dict[str, Any]:
        """The body as an object of `rt` in its storage apiVersion; 400 when its shape is wrong."""
        obj = _check_body(rt, version, ns, body)
        admission.decode(rt, version, obj, fields)
        return obj

    def decode_apply(
        self, rt: ResourceType, version: str, ns: str | None, name: str, config: Any, manager: str | None
    ) -> str:
        """Check an apply configuration (an object of `rt` named as the URL, a field manager); the
        manager."""
        if not manager:
            required = cause(
                "fieldManager", "Required value: is required for apply patch", "FieldValueRequired"
            )
            raise invalid("PatchOptions", "", [required], "meta.k8s.io")
        if not isinstance(config, dict):
            raise bad_request("an apply configuration must be an object")
        object_meta.check_name(name, config.get("metadata") or {})
        if config.get("apiVersion") != rt.api_version(version) or config.get("kind") != rt.kind:
            raise bad_request(
                f"an apply configuration needs apiVersion {rt.api_version(version)} and kind {rt.kind}"
            )
        admission.check_apply_config(rt, version, name, config)
        return manager

    def check_namespace_open(self, ns: str) -> None:
        """The namespace lifecycle: nothing is created in a missing or terminating namespace."""
        namespace = self._store.get(self.types[_NAMESPACES], ("", ns))
        if namespace is None:
            raise not_found("namespaces", ns)
        if namespace["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                f"unable to create new content in namespace {ns} because it is being terminated",
                reason="Forbidden",
                name=ns,
                kind="namespaces",
            )

    def mutate_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        defaults.on_create(rt.key, obj)
        if rt.key == _SERVICES:
            self._allocate_cluster_ip(obj)
        return storage_views.to_storage(rt, obj)

    def mutate_update(
        self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any], subresource: str | None
    ) -> dict[str, Any]:
        if subresource != "status":
            defaults.on_write(rt.key, new)
            if rt.key == _SERVICES:
                keep_allocated(new, old)
        return storage_views.to_storage(rt, new)

    def admit(
        self,
        rt: ResourceType,
        version: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        subresource: str | None = None,
    ) -> None:
        """Refuse (ApiError) what may not be stored; a CRD is prepared first."""
        if rt.key == CRD_KEY:
            prepare_crd(obj, self.types)
        admission.validate(rt, version, obj, old, subresource)
        for plugin in self.plugins:
            plugin(rt, obj, old)

    def _allocate_cluster_ip(self, obj: dict[str, Any]) -> None:
        spec = obj["spec"]
        if spec.get("type") == "ExternalName":
            return  # a DNS alias: no cluster IP
        if spec.get("clusterIP") in (None, ""):
            spec["clusterIP"] = str(next(self._service_ips))
        spec["clusterIPs"] = [spec["clusterIP"]]


def _check_body(rt: ResourceType, version: str, ns: str | None, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request(f"the body of a {rt.kind} must be a JSON object")
    obj: dict[str, Any] = _without_nulls(body) if rt.builtin else body
    api_version = obj.get("apiVersion")
    if api_version not in (None, rt.api_version(version)):
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({rt.api_version(version)})"
        )
    if obj.get("kind") not in (None, rt.kind):
        raise bad_request(
            f"the kind in the data ({obj.get('kind')}) does not match the expected kind ({rt.kind})"
        )
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if rt.namespaced and meta.get("namespace") not in (None, "", ns):
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    obj["apiVersion"] = rt.api_version(rt.storage_version)
    obj["kind"] = rt.kind
    return obj


def _without_nulls(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a built-in kind's body as Go decodes it: a null is an unset field. Most bodies
    have none: one orjson round trip copies them, where rebuilding every map cost more than
    decoding the kind."""
    try:
        encoded = orjson.dumps(body, option=orjson.OPT_PASSTHROUGH_DATETIME)
    except orjson.JSONEncodeError:  # not plain JSON (YAML's dates, binary): copied value by value
        encoded = b"null"
    if b"null" not in encoded:
        copy: dict[str, Any] = orjson.loads(encoded)
        return copy
    return {key: _value_without_nulls(item) for key, item in body.items() if item is not None}


def _value_without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _value_without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_value_without_nulls(item) for item in value]
    return value
