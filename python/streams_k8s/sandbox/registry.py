"""The API server's semantics, independent of HTTP: create, read, update, patch, delete and watch
with resourceVersions, generation, subresources, finalizers, namespaces and CRD registration.

Objects given to the registry become its property; stored objects are never mutated (every write
stores a new dict), so readers and watch events can share them without copying.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson

from streams_k8s.sandbox import deletion, object_meta, pagination, storage_views
from streams_k8s.sandbox.admission import FieldValidation
from streams_k8s.sandbox.admission.field_errors import go_map
from streams_k8s.sandbox.apply import apply as server_side_apply
from streams_k8s.sandbox.builtin_types import builtin_types
from streams_k8s.sandbox.clock import now
from streams_k8s.sandbox.conditions import set_condition
from streams_k8s.sandbox.crds import CRD_KEY, default_stored, type_from_crd
from streams_k8s.sandbox.errors import ApiError, already_exists, bad_request, not_found
from streams_k8s.sandbox.patch import APPLY_PATCH, STRATEGIC_PATCH, apply_patch
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.selectors import FieldMatcher, LabelSelector, parse_field_selector
from streams_k8s.sandbox.store import ObjKey, RowEncoder, Store, Watcher, WatchEvent, clone, view
from streams_k8s.sandbox.write_pipeline import WritePipeline

_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


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
        self.pipeline = WritePipeline(self.types, self.store)  # between a write's body and storage
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
            default_stored(coll.objects, rt.schemas[rt.storage_version])

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
        list_rv, start = self.store.rv, None
        if continue_token:
            list_rv, start = pagination.decode_continue(continue_token, coll.compacted_rv)
        out, last, remaining = pagination.page(coll.objects, ns, labels, fields, limit, start)
        token = pagination.encode_continue(list_rv, last) if remaining and last is not None else None
        return out, list_rv, token, (remaining if token else None)

    def output(self, rt: ResourceType, obj: dict[str, Any], version: str) -> dict[str, Any]:
        """The object as the client's API version shows it (CR versions differ only in apiVersion;
        a view such as events.k8s.io Events is converted from its storage)."""
        return view(obj, rt.api_version(version), self.converter(rt))

    converter = staticmethod(storage_views.converter)

    def field_selector(self, rt: ResourceType, text: str) -> FieldMatcher:
        """A fieldSelector of `rt`, evaluated on stored objects."""
        return parse_field_selector(text, rt.field_selectors, rt.kind, storage_views.field_paths(rt))

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
        obj = self.pipeline.decode(rt, version, ns, body, fields)
        meta = obj["metadata"]
        if rt.namespaced:
            self.pipeline.check_namespace_open(ns or "")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        object_meta.generate_name(rt, meta, lambda name: self.store.get(rt, (ns or "", name)) is not None)
        key = (ns or "", meta["name"])
        if self.store.get(rt, key) is not None:
            raise already_exists(rt.plural, meta["name"], rt.group)
        object_meta.on_create(rt, obj)
        obj = self.pipeline.mutate_create(rt, obj)
        self.pipeline.admit(rt, version, obj, None)
        if dry_run:
            return self.output(rt, obj, version)
        meta["resourceVersion"] = str(self.store.next_rv())
        self.store.put(rt, key, obj, "ADDED")
        if rt.key == CRD_KEY:
            self.register(type_from_crd(obj))
        return self.output(rt, obj, version)

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
        new = self.pipeline.decode(rt, version, ns, body, fields)
        new = self.pipeline.mutate_update(rt, new, old, subresource)
        meta, old_meta = new["metadata"], old["metadata"]
        object_meta.check_update(rt, name, meta, old_meta, require_rv)
        new = object_meta.scope_update(rt, name, new, old, subresource)
        return self._write(rt, version, ns, name, new, old, dry_run, subresource)

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
        self.pipeline.admit(rt, version, new, old, subresource)
        if rt.generation and _spec_of(new) != _spec_of(old):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        if new == old:
            return self.output(rt, old, version)  # a no-op write does not bump the resourceVersion
        if dry_run:
            return self.output(rt, new, version)
        meta["resourceVersion"] = str(self.store.next_rv())
        key = (ns or "", name)
        if meta.get("deletionTimestamp") and deletion.may_remove(rt, new):
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
        patched = apply_patch(content_type, current, patch, strategic=rt.builtin)
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
        manager = self.pipeline.decode_apply(rt, version, ns, name, config, manager)
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
        rt = self.types[("", "pods")]
        old = self.get(rt, ns, name)
        if old["spec"].get("nodeName"):
            raise ApiError(409, f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"')
        new = clone(old)
        new["spec"]["nodeName"] = node
        set_condition(new.setdefault("status", {}), "PodScheduled", "True")
        return self._write(rt, "v1", ns, name, new, old, False, "binding")

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
        deletion.check_allowed(rt, obj, options)
        version = version or rt.storage_version
        finalizers = deletion.finalizers(obj, options)
        grace = deletion.grace_period(rt, obj, options, self.graceful_pods)
        if options.get("dryRun"):
            return self.output(rt, obj, version), False
        new = deletion.marked(rt, obj, finalizers, grace)
        key = (ns or "", name)
        if deletion.may_remove(rt, new):
            new["metadata"]["resourceVersion"] = str(self.store.next_rv())
            self._remove(rt, key, new)
            return self.output(rt, new, version), True
        if new != obj:
            new["metadata"]["resourceVersion"] = str(self.store.next_rv())
            self.store.put(rt, key, new, "MODIFIED")
        return self.output(rt, new, version), False

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
                watcher.sent_rv = max(watcher.sent_rv, current.rv)
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


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}
