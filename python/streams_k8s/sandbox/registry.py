"""The API server's semantics, independent of HTTP: create, read, update, patch, delete and watch
with resourceVersions, generation, subresources, finalizers, namespaces and CRD registration.

Objects given to the registry become its property; stored objects are never mutated (every write
stores a new dict), so readers and watch events can share them without copying.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from streams_k8s.sandbox import admission, defaults, event_conversion, schema
from streams_k8s.sandbox.admission import FieldValidation
from streams_k8s.sandbox.admission.field_errors import go_map
from streams_k8s.sandbox.admission.services import keep_allocated
from streams_k8s.sandbox.apply import apply as server_side_apply
from streams_k8s.sandbox.errors import (
    ApiError,
    already_exists,
    bad_request,
    cause,
    conflict,
    invalid,
    not_found,
)
from streams_k8s.sandbox.patch import json_patch, merge_patch, strategic_merge_patch
from streams_k8s.sandbox.resources import ResourceType, builtin_types, get_path, set_path, type_from_crd
from streams_k8s.sandbox.selectors import (
    FieldMatcher,
    LabelSelector,
    parse_field_selector,
    selector_to_string,
)
from streams_k8s.sandbox.store import Converter, ObjKey, RowEncoder, Store, Watcher, WatchEvent, view

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
# Resources that are converted views of another's storage: (to storage, from storage).
_VIEWS: dict[tuple[str, str], tuple[Converter, Converter]] = {
    ("events.k8s.io", "events"): (event_conversion.to_core, event_conversion.from_core),
}

# An admission step (Pod Security): sees an object about to be stored (and the stored one on an
# update); raises ApiError to refuse it.
Admission = Callable[[ResourceType, dict[str, Any], dict[str, Any] | None], None]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(obj: Any) -> Any:
    """A deep copy of a JSON value (fast: one orjson round trip)."""
    return orjson.loads(orjson.dumps(obj))


class Registry:
    """Every served resource type and the objects stored for them."""

    def __init__(self, history_size: int = 10_000, object_history: int = 50) -> None:
        self.store = Store(history_size, object_history)
        self.types: dict[tuple[str, str], ResourceType] = {}
        self.types_version = 0  # changes whenever a type is (re)registered or removed: for caches
        self.served: dict[tuple[str, str], dict[str, ResourceType]] = {}
        # The simulated kubelet turns this on: bound pods then terminate gracefully.
        self.graceful_pods = False
        self.watch_opened = asyncio.Event()  # set whenever a watch opens
        self.admission: list[Admission] = []
        self._service_ips = ipaddress.ip_network("10.96.0.0/12").hosts()
        next(self._service_ips)  # 10.96.0.1 is the kubernetes service
        for rt in builtin_types():
            self.register(rt)
        for ns in _SYSTEM_NAMESPACES:
            self.create(self.types[("", "namespaces")], "v1", None, {"metadata": {"name": ns}})

    # -- resource types -------------------------------------------------------------------------

    def register(self, rt: ResourceType) -> None:
        self.types_version += 1
        old = self.types.get(rt.key)
        if old is not None:
            for version in old.versions:
                self.served.get((old.group, version), {}).pop(old.plural, None)
        self.types[rt.key] = rt
        for version in rt.versions:
            self.served.setdefault((rt.group, version), {})[rt.plural] = rt
        coll = self.store.collection(rt)
        if old is not None and old.schemas != rt.schemas and rt.storage_version in rt.schemas:
            self._default_stored(coll.objects, rt.schemas[rt.storage_version])

    @staticmethod
    def _default_stored(objects: dict[ObjKey, dict[str, Any]], spec_schema: dict[str, Any]) -> None:
        """A changed CRD schema's new defaults show on stored objects, as the API server defaults
        what it reads from storage (no new resourceVersion, no watch event)."""
        for key, obj in list(objects.items()):
            defaulted = schema.apply_defaults(clone(obj), spec_schema)
            if defaulted != obj:
                objects[key] = defaulted

    def unregister(self, key: tuple[str, str]) -> None:
        rt = self.types.pop(key, None)
        if rt is None:
            return
        self.types_version += 1
        for version in rt.versions:
            group_version = self.served.get((rt.group, version), {})
            group_version.pop(rt.plural, None)
            if not group_version:
                self.served.pop((rt.group, version), None)
        coll = self.store.collection(rt)
        if rt.storage_of:  # a view: its objects stay, only its watches end
            for watcher in [w for w in coll.watchers if w.rt.key == rt.key]:
                watcher.signal("end")
            return
        for obj_key, obj in list(coll.objects.items()):
            final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.store.next_rv())}}
            self._remove(rt, obj_key, final)
        for watcher in list(coll.watchers):
            watcher.signal("end")
        del self.store.collections[rt.store_key]

    def resolve(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.served.get((group, version), {}).get(plural)
        if rt is None:
            gv = f"{group}/{version}" if group else version
            raise ApiError(404, f"the server could not find the requested resource ({plural} in {gv})")
        return rt

    # -- reads ----------------------------------------------------------------------------------

    def get(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        obj = self.store.get(rt, (ns or "", name))
        if obj is None:
            raise not_found(rt.plural, name, rt.group)
        return obj

    def find(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any] | None:
        return self.store.get(rt, (ns or "", name))

    def items(self, rt: ResourceType, ns: str | None = None) -> Iterator[dict[str, Any]]:
        """Stored objects of a resource (all namespaces when `ns` is None), unordered."""
        for (obj_ns, _), obj in list(self.store.collection(rt).objects.items()):
            if ns is None or obj_ns == ns:
                yield obj

    def list(
        self,
        rt: ResourceType,
        ns: str | None,
        labels: LabelSelector | None = None,
        fields: FieldMatcher | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> tuple[list[dict[str, Any]], int, str | None, int | None]:
        """Matching objects sorted by namespace/name, the list RV, a continue token, remaining count."""
        coll = self.store.collection(rt)
        list_rv = self.store.rv
        start: ObjKey | None = None
        if continue_token:
            list_rv, start = _decode_continue(continue_token)
            if list_rv < coll.compacted_rv:
                raise ApiError(
                    410,
                    "The provided continue parameter is too old to display a consistent "
                    "list result. You can start a new list without the continue parameter.",
                    reason="Expired",
                )
        keys = sorted(k for k in coll.objects if (ns is None or k[0] == ns) and (start is None or k > start))
        out: list[dict[str, Any]] = []
        last: ObjKey | None = None
        remaining = 0
        for key in keys:
            obj = coll.objects[key]
            if labels is not None and not labels.matches(obj["metadata"].get("labels")):
                continue
            if fields is not None and not fields(obj):
                continue
            if limit and len(out) >= limit:
                remaining += 1
                continue
            out.append(obj)
            last = key
        token = _encode_continue(list_rv, last) if remaining and last is not None else None
        return out, list_rv, token, (remaining if token else None)

    def output(self, rt: ResourceType, obj: dict[str, Any], version: str) -> dict[str, Any]:
        """The object as the client's API version shows it (CR versions differ only in apiVersion;
        a view such as events.k8s.io Events is converted from its storage)."""
        return view(obj, rt.api_version(version), self.converter(rt))

    @staticmethod
    def converter(rt: ResourceType) -> Converter | None:
        """How stored objects convert to `rt`'s form (None: they are in it)."""
        return _VIEWS[rt.key][1] if rt.storage_of else None

    def field_selector(self, rt: ResourceType, text: str) -> FieldMatcher:
        """A fieldSelector of `rt`, evaluated on stored objects."""
        paths = event_conversion.FIELD_PATHS if rt.storage_of else None
        return parse_field_selector(text, rt.field_selectors, rt.kind, paths)

    @staticmethod
    def _to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return _VIEWS[rt.key][0](obj) if rt.storage_of else obj

    # -- create ---------------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        body: Any,
        dry_run: bool = False,
        fields: FieldValidation | None = None,
    ) -> dict[str, Any]:
        obj = self._check_body(rt, version, ns, body)
        admission.decode(rt, version, obj, fields)
        meta = obj["metadata"]
        if rt.namespaced:
            self._check_namespace_open(ns or "")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise invalid(
                    rt.kind,
                    "",
                    [
                        cause(
                            "metadata.name",
                            "Required value: name or generateName is required",
                            "FieldValueRequired",
                        )
                    ],
                    rt.group,
                )
            meta["name"] = self._generate_name(rt, ns, prefix)
        key = (ns or "", meta["name"])
        if self.store.get(rt, key) is not None:
            raise already_exists(rt.plural, meta["name"], rt.group)
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if rt.status_subresource and not rt.builtin:
            obj.pop("status", None)
        defaults.on_create(rt.key, obj)
        if rt.key == ("", "services"):
            self._allocate_cluster_ip(obj)
        if rt.key == CRD_KEY:
            self._prepare_crd(obj)
        obj = self._to_storage(rt, obj)
        admission.validate(rt, version, obj, None)
        for admit in self.admission:
            admit(rt, obj, None)
        if dry_run:
            return self.output(rt, obj, version)
        meta["resourceVersion"] = str(self.store.next_rv())
        self.store.put(rt, key, obj, "ADDED")
        if rt.key == CRD_KEY:
            self.register(type_from_crd(obj))
        return self.output(rt, obj, version)

    def _generate_name(self, rt: ResourceType, ns: str | None, prefix: str) -> str:
        for _ in range(16):
            name = prefix + "".join(random.choices(_NAME_CHARS, k=5))
            if self.store.get(rt, (ns or "", name)) is None:
                return name
        raise ApiError(
            409, f"could not generate a unique name from prefix {prefix!r}", reason="AlreadyExists"
        )

    def _check_body(self, rt: ResourceType, version: str, ns: str | None, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request(f"the body of a {rt.kind} must be a JSON object")
        obj: dict[str, Any] = body
        if rt.builtin:  # Go decodes null into an unset field
            obj = {key: _without_nulls(item) for key, item in obj.items() if item is not None}
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

    def _check_namespace_open(self, ns: str) -> None:
        namespace = self.store.get(self.types[("", "namespaces")], ("", ns))
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

    def _allocate_cluster_ip(self, obj: dict[str, Any]) -> None:
        spec = obj["spec"]
        if spec.get("type") == "ExternalName":
            return  # a DNS alias: no cluster IP
        if spec.get("clusterIP") in (None, ""):
            spec["clusterIP"] = str(next(self._service_ips))
        spec["clusterIPs"] = [spec["clusterIP"]]

    # -- update and patch -----------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        name: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
        require_rv: bool = True,
        fields: FieldValidation | None = None,
    ) -> dict[str, Any]:
        old = self.get(rt, ns, name)
        new = self._check_body(rt, version, ns, body)
        admission.decode(rt, version, new, fields)
        if subresource != "status":
            defaults.on_write(rt.key, new)
            if rt.key == ("", "services"):
                keep_allocated(new, old)
        new = self._to_storage(rt, new)
        meta = new["metadata"]
        if meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        old_meta = old["metadata"]
        rv = meta.get("resourceVersion")
        if rv:
            if rv != old_meta["resourceVersion"]:
                raise conflict(rt.plural, name, rt.group)
        elif require_rv and not rt.builtin:
            raise invalid(
                rt.kind,
                name,
                [cause("metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")],
                rt.group,
            )
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise conflict(
                rt.plural,
                name,
                rt.group,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{old_meta['uid']}",
            )
        if subresource == "status":
            new = {**old, "status": new.get("status")} if "status" in new else dict(old)
            if new.get("status") is None:
                new.pop("status", None)
            new["metadata"] = dict(old_meta)
            if "managedFields" in meta:  # a status apply records its ownership
                new["metadata"]["managedFields"] = meta["managedFields"]
        else:
            if rt.status_subresource:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            new["metadata"] = self._merge_meta(rt, name, meta, old_meta)
        return self._write(rt, version, ns, name, new, old, dry_run, subresource)

    def _merge_meta(
        self, rt: ResourceType, name: str, meta: dict[str, Any], old_meta: dict[str, Any]
    ) -> dict[str, Any]:
        merged = dict(meta)
        for field in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "name",
        ):
            if field in old_meta:
                merged[field] = old_meta[field]
            else:
                merged.pop(field, None)
        if old_meta.get("deletionTimestamp"):
            added = set(merged.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise invalid(
                    rt.kind,
                    name,
                    [
                        cause(
                            "metadata.finalizers",
                            "Forbidden: no new finalizers can "
                            "be added if the object is being deleted, found new finalizers "
                            f"{sorted(added)}",
                            "FieldValueForbidden",
                        )
                    ],
                    rt.group,
                )
        return merged

    def _write(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        name: str,
        new: dict[str, Any],
        old: dict[str, Any],
        dry_run: bool,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if rt.key == CRD_KEY:
            self._prepare_crd(new)
        admission.validate(rt, version, new, old, subresource)
        for admit in self.admission:
            admit(rt, new, old)
        if rt.generation and _spec_of(new) != _spec_of(old):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        if new == old:
            return self.output(rt, old, version)  # a no-op write does not bump the resourceVersion
        if dry_run:
            return self.output(rt, new, version)
        meta["resourceVersion"] = str(self.store.next_rv())
        key = (ns or "", name)
        if meta.get("deletionTimestamp") and self._may_remove(rt, new):
            self._remove(rt, key, new)
            return self.output(rt, new, version)
        self.store.put(rt, key, new, "MODIFIED")
        if rt.key == CRD_KEY:
            self.register(type_from_crd(new))
        return self.output(rt, new, version)

    def patch(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None = None,
        dry_run: bool = False,
        fields: FieldValidation | None = None,
    ) -> dict[str, Any]:
        if content_type == APPLY_PATCH:
            return self.apply(rt, version, ns, name, patch, subresource, dry_run)
        old = self.get(rt, ns, name)
        current = self.output(rt, old, version)
        patched = _apply_patch(content_type, current, patch, strategic=rt.builtin)
        if not isinstance(patched, dict):
            raise ApiError(422, "the patch produced something other than an object")
        if fields is not None:
            strategic = content_type == STRATEGIC_PATCH
            fields.patch = go_map(patch) if strategic else orjson.dumps(patched).decode()
        return self.update(
            rt, version, ns, name, patched, subresource, dry_run, require_rv=False, fields=fields
        )

    def apply(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        name: str,
        config: Any,
        subresource: str | None = None,
        dry_run: bool = False,
        manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        """Server-side apply of `config` by `manager`; creates the object when it does not exist."""
        if not manager:
            raise bad_request("PATCH with application/apply-patch+yaml requires the fieldManager parameter")
        if not isinstance(config, dict):
            raise bad_request("an apply configuration must be an object")
        meta = config.get("metadata") or {}
        if meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if config.get("apiVersion") != rt.api_version(version) or config.get("kind") != rt.kind:
            raise bad_request(
                f"an apply configuration needs apiVersion {rt.api_version(version)} and kind {rt.kind}"
            )
        admission.check_apply_config(rt, version, ns, name, config)
        live = self.find(rt, ns, name)
        status = subresource == "status"
        if live is None:
            if status:
                raise not_found(rt.plural, name, rt.group)
            empty = {"apiVersion": config["apiVersion"], "kind": rt.kind, "metadata": {"name": name}}
            body = server_side_apply(empty, config, manager, force, rt.api_version(version), now(), False)
            return self.create(rt, version, ns, body, dry_run)
        current = clone(self.output(rt, live, version))
        body = server_side_apply(current, config, manager, force, rt.api_version(version), now(), status)
        return self.update(rt, version, ns, name, body, subresource, dry_run, require_rv=False)

    def bind(self, ns: str, name: str, node: str) -> dict[str, Any]:
        """pods/binding, the one way `spec.nodeName` changes: the pod's node and its
        PodScheduled=True condition in one write (one watch event), as the API server's binding
        storage does; 409 when it is bound already."""
        from streams_k8s.sandbox.conditions import set_condition  # it reads this module's clock

        rt = self.types[("", "pods")]
        old = self.get(rt, ns, name)
        if old["spec"].get("nodeName"):
            raise ApiError(409, f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"')
        new = clone(old)
        new["spec"]["nodeName"] = node
        set_condition(new.setdefault("status", {}), "PodScheduled", "True")
        return self._write(rt, "v1", ns, name, new, old, False, "binding")

    # -- scale subresource ----------------------------------------------------------------------

    def get_scale(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        if rt.scale is None:
            raise not_found(f"{rt.plural}/scale", name, rt.group)
        obj = self.get(rt, ns, name)
        meta = obj["metadata"]
        status: dict[str, Any] = {"replicas": get_path(obj, rt.scale.status_replicas_path) or 0}
        if rt.scale.label_selector_path:
            selector = get_path(obj, rt.scale.label_selector_path)
            if selector:
                status["selector"] = selector
        elif rt.builtin:
            status["selector"] = selector_to_string(get_path(obj, ".spec.selector"))
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": get_path(obj, rt.scale.spec_replicas_path) or 0},
            "status": status,
        }

    def update_scale(
        self, rt: ResourceType, version: str, ns: str | None, name: str, scale: Any, dry_run: bool = False
    ) -> dict[str, Any]:
        current = self.get_scale(rt, ns, name)
        assert rt.scale is not None
        if not isinstance(scale, dict) or not isinstance((scale.get("spec") or {}).get("replicas"), int):
            raise invalid(
                "Scale", name, [cause("spec.replicas", "Required value: an integer")], "autoscaling"
            )
        if scale["spec"]["replicas"] < 0:
            raise invalid(
                "Scale",
                name,
                [
                    cause(
                        "spec.replicas",
                        f"Invalid value: {scale['spec']['replicas']}: must be greater than or equal to 0",
                    )
                ],
                "autoscaling",
            )
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != current["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, name, rt.group)
        obj = clone(self.get(rt, ns, name))
        set_path(obj, rt.scale.spec_replicas_path, scale["spec"]["replicas"])
        self.update(rt, version, ns, name, obj, dry_run=dry_run)
        return self.get_scale(rt, ns, name)

    def patch_scale(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        name: str,
        content_type: str,
        patch: Any,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        current = self.get_scale(rt, ns, name)
        patched = _apply_patch(content_type, current, patch, strategic=True)
        return self.update_scale(rt, version, ns, name, patched, dry_run)

    # -- delete ---------------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        options: dict[str, Any] | None = None,
        version: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Delete (or start deleting) an object. Returns the object and whether it is gone."""
        options = options or {}
        obj = self.get(rt, ns, name)
        if rt.key == ("", "namespaces") and name in _PROTECTED_NAMESPACES:
            raise ApiError(
                403,
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                reason="Forbidden",
                name=name,
                kind="namespaces",
            )
        meta = obj["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise conflict(
                rt.plural,
                name,
                rt.group,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta['uid']}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise conflict(
                rt.plural,
                name,
                rt.group,
                "Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: {meta['resourceVersion']}",
            )
        version = version or rt.storage_version
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise invalid(
                "DeleteOptions",
                "",
                [
                    cause(
                        "propagationPolicy",
                        f'Unsupported value: "{policy}": '
                        'supported values: "Foreground", "Background", "Orphan"',
                        "FieldValueNotSupported",
                    )
                ],
            )
        finalizers = list(meta.get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        grace = options.get("gracePeriodSeconds")
        graceful = (
            rt.key == ("", "pods")
            and self.graceful_pods
            and obj.get("spec", {}).get("nodeName")
            and obj.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        )
        if graceful:
            grace = obj["spec"].get("terminationGracePeriodSeconds", 30) if grace is None else grace
        else:
            grace = 0
        if options.get("dryRun"):
            return self.output(rt, obj, version), False
        new = dict(obj)
        new_meta = new["metadata"] = dict(meta)
        if finalizers:
            new_meta["finalizers"] = finalizers
        if not meta.get("deletionTimestamp"):
            at = datetime.now(UTC) + timedelta(seconds=grace)
            new_meta["deletionTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
            new_meta["deletionGracePeriodSeconds"] = grace
            if rt.generation:
                new_meta["generation"] = meta.get("generation", 1) + 1
        else:
            new_meta["deletionGracePeriodSeconds"] = min(grace, meta.get("deletionGracePeriodSeconds", grace))
        if rt.key == ("", "namespaces"):
            new["status"] = {**new.get("status", {}), "phase": "Terminating"}
        key = (ns or "", name)
        if self._may_remove(rt, new):
            new_meta["resourceVersion"] = str(self.store.next_rv())
            self._remove(rt, key, new)
            return self.output(rt, new, version), True
        if new != obj:
            new_meta["resourceVersion"] = str(self.store.next_rv())
            self.store.put(rt, key, new, "MODIFIED")
        return self.output(rt, new, version), False

    def _may_remove(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if meta.get("finalizers"):
            return False
        if rt.key == ("", "namespaces") and (obj.get("spec") or {}).get("finalizers"):
            return False
        return not meta.get("deletionGracePeriodSeconds")

    def _remove(self, rt: ResourceType, key: ObjKey, final: dict[str, Any]) -> None:
        """Remove an object; `final` (its last state, with a new resourceVersion) goes to watchers."""
        self.store.remove(rt, key, final)
        if rt.key == CRD_KEY:
            names = final["spec"]["names"]
            self.unregister((final["spec"]["group"], names["plural"]))

    # -- watch ----------------------------------------------------------------------------------

    def watch(
        self,
        rt: ResourceType,
        version: str,
        ns: str | None,
        labels: LabelSelector | None,
        fields: FieldMatcher | None,
        since: str | None,
        initial_events_end: bool = False,
        rows: RowEncoder | None = None,
    ) -> Watcher:
        """Open a watch. `since` None/""/"0" first sends ADDED for every matching object; a
        resourceVersion replays the history after it, or raises 410 Expired when compacted.
        `rows` encodes events other than as objects (Table rows)."""
        coll = self.store.collection(rt)
        watcher = Watcher(rt, rt.api_version(version), ns, labels, fields, self.converter(rt), rows)
        if since in (None, "", "0"):
            for obj in self.list(rt, ns, labels, fields)[0]:
                current = WatchEvent(int(obj["metadata"]["resourceVersion"]), "ADDED", obj, None)
                watcher.queue.put_nowait(watcher.line("ADDED", current))
            if initial_events_end:
                watcher.queue.put_nowait(self.bookmark(watcher, initial_events_end=True))
        else:
            try:
                rv = int(since)
            except ValueError:
                raise bad_request(f"invalid resource version {since!r}") from None
            if rv < coll.compacted_rv:
                raise ApiError(410, f"too old resource version: {rv} ({coll.compacted_rv})", reason="Expired")
            for event in coll.events_since(rv):
                watcher.offer(event)
        coll.watchers.add(watcher)
        self.watch_opened.set()
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        coll = self.store.collections.get(watcher.rt.store_key)
        if coll is not None:
            coll.watchers.discard(watcher)

    def bookmark(self, watcher: Watcher, initial_events_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": watcher.rt.kind, "apiVersion": watcher.api_version, "metadata": meta}
        return b'{"type":"BOOKMARK","object":' + orjson.dumps(obj) + b"}\n"

    def compact(self, rt: ResourceType | None = None) -> None:
        """Forget the watch history (all resources by default): older resourceVersions get 410."""
        for key, coll in self.store.collections.items():
            if rt is None or key == rt.store_key:
                coll.compact(self.store.rv)

    # -- CRDs -----------------------------------------------------------------------------------

    def _prepare_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec")
        name = crd["metadata"].get("name", "")
        errors = []
        if not isinstance(spec, dict):
            raise invalid(
                "CustomResourceDefinition", name, [cause("spec", "Required value")], "apiextensions.k8s.io"
            )
        names = spec.get("names") or {}
        for field in ("plural", "kind"):
            if not names.get(field):
                errors.append(cause(f"spec.names.{field}", "Required value", "FieldValueRequired"))
        if not spec.get("group"):
            errors.append(cause("spec.group", "Required value", "FieldValueRequired"))
        versions = spec.get("versions") or []
        if not versions:
            errors.append(
                cause(
                    "spec.versions",
                    "Required value: must have exactly one version marked as storage version",
                    "FieldValueRequired",
                )
            )
        elif sum(1 for v in versions if v.get("storage")) != 1:
            errors.append(
                cause(
                    "spec.versions", "Invalid value: must have exactly one version marked as storage version"
                )
            )
        if spec.get("scope", "Namespaced") not in ("Namespaced", "Cluster"):
            errors.append(cause("spec.scope", f"Unsupported value: {spec.get('scope')!r}"))
        if not errors and name != f"{names['plural']}.{spec['group']}":
            errors.append(
                cause("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
            )
        if not errors:
            taken = self.types.get((spec["group"], names["plural"]))
            if taken is not None and taken.builtin:
                errors.append(cause("spec.names.plural", "Invalid value: the resource is built in"))
        if errors:
            raise invalid("CustomResourceDefinition", name, errors, "apiextensions.k8s.io")
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", f"{names['kind']}List")
        spec.setdefault("scope", "Namespaced")
        at = now()
        crd["status"] = {
            "acceptedNames": names,
            "storedVersions": [v["name"] for v in versions if v.get("storage")],
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                    "lastTransitionTime": at,
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                    "lastTransitionTime": at,
                },
            ],
        }


def _apply_patch(content_type: str, current: dict[str, Any], patch: Any, strategic: bool) -> Any:
    if content_type == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request("a merge patch must be a JSON object")
        return merge_patch(current, patch)
    if content_type == JSON_PATCH:
        return json_patch(current, patch)
    if content_type == STRATEGIC_PATCH and strategic:
        if not isinstance(patch, dict):
            raise bad_request("a strategic merge patch must be a JSON object")
        return strategic_merge_patch(current, patch)
    allowed = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_PATCH] if strategic else [])
    raise ApiError(
        415,
        f"the body of the request was in an unknown format - accepted media types "
        f"include: {', '.join(allowed)}",
    )


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _encode_continue(rv: int, key: ObjKey) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "ns": key[0], "name": key[1]})).decode()


def _decode_continue(token: str) -> tuple[int, ObjKey]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except (ValueError, KeyError, TypeError):
        raise bad_request(f"invalid continue token {token!r}") from None


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value
