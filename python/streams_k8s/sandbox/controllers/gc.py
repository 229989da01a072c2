"""Owner-reference garbage collection (Background, Foreground, Orphan) and namespace cleanup.

It reacts to store events: a removed owner queues its dependents, an owner deleted in the
foreground or orphan mode is processed until its GC finalizer can be removed, and a terminating
namespace is emptied before it goes away.
"""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent, clone
from streams_k8s.sandbox.worker import Worker

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
NAMESPACES = ("", "namespaces")


class GarbageCollector:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.objects: Worker[str] = Worker("garbage-collector", self._process)
        self.namespaces: Worker[str] = Worker("namespace-controller", self._finalize_namespace)
        registry.store.listeners.append(self._on_event)

    @property
    def workers(self) -> tuple[Worker[str], Worker[str]]:
        return (self.objects, self.namespaces)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        uid = meta["uid"]
        refs = meta.get("ownerReferences") or []
        if event.type == "DELETED":
            for dependent in self.registry.store.dependents.get(uid, ()):
                self.objects.add(dependent)
            for ref in refs:
                self.objects.add(ref["uid"])
            if meta.get("namespace"):
                self._maybe_namespace(meta["namespace"])
            return
        finalizers = meta.get("finalizers") or ()
        if meta.get("deletionTimestamp") and (FOREGROUND in finalizers or ORPHAN in finalizers):
            self.objects.add(uid)
        if rt.key == NAMESPACES and meta.get("deletionTimestamp"):
            self.namespaces.add(meta["name"])
        if refs and event.type == "ADDED":
            self.objects.add(uid)  # an owner reference to a missing uid means: delete

    def _maybe_namespace(self, ns: str) -> None:
        namespace = self.registry.find(self.registry.types[NAMESPACES], None, ns)
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            self.namespaces.add(ns)

    def _locate(self, uid: str) -> tuple[ResourceType, dict[str, Any]] | None:
        where = self.registry.store.by_uid.get(uid)
        obj = self.registry.store.lookup_uid(uid)
        if where is None or obj is None or where[0] not in self.registry.types:
            return None
        return self.registry.types[where[0]], obj

    def _process(self, uid: str) -> None:
        found = self._locate(uid)
        if found is None:
            return
        rt, obj = found
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            if ORPHAN in finalizers:
                self._orphan_dependents(uid)
                self._drop_finalizer(rt, obj, ORPHAN)
            elif FOREGROUND in finalizers:
                self._delete_dependents_first(rt, obj)
            return
        self._check_owners(rt, obj)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dep_uid in list(self.registry.store.dependents.get(owner_uid, ())):
            found = self._locate(dep_uid)
            if found is None:
                continue
            rt, dep = found
            refs = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            self._set_owner_refs(rt, dep, refs)

    def _delete_dependents_first(self, rt: ResourceType, owner: dict[str, Any]) -> None:
        owner_uid = owner["metadata"]["uid"]
        blocking = 0
        for dep_uid in list(self.registry.store.dependents.get(owner_uid, ())):
            found = self._locate(dep_uid)
            if found is None:
                continue
            dep_rt, dep = found
            ref = next(r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") == owner_uid)
            if ref.get("blockOwnerDeletion"):
                blocking += 1
            if not dep["metadata"].get("deletionTimestamp"):
                self._delete(
                    dep_rt, dep, "Foreground" if dep_uid in self.registry.store.dependents else "Background"
                )
        if not blocking:
            self._drop_finalizer(rt, owner, FOREGROUND)

    def _check_owners(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs:
            return
        solid, waiting, dangling = [], [], []
        for ref in refs:
            owner = self.registry.store.lookup_uid(ref.get("uid", ""))
            if owner is None:
                dangling.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and FOREGROUND in (
                owner["metadata"].get("finalizers") or []
            ):
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid:
            if dangling or waiting:
                self._set_owner_refs(rt, obj, solid)
        elif waiting:
            has_dependents = obj["metadata"]["uid"] in self.registry.store.dependents
            self._delete(rt, obj, "Foreground" if has_dependents else "Background")
        else:
            self._delete(rt, obj, "Background")

    def _delete(self, rt: ResourceType, obj: dict[str, Any], policy: str) -> None:
        meta = obj["metadata"]
        try:
            self.registry.delete(
                rt,
                meta.get("namespace"),
                meta["name"],
                {"propagationPolicy": policy, "preconditions": {"uid": meta["uid"]}},
            )
        except ApiError as err:
            if err.code not in (404, 409):
                raise

    def _set_owner_refs(self, rt: ResourceType, obj: dict[str, Any], refs: list[dict[str, Any]]) -> None:
        new = clone(obj)
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        self._update(rt, new)

    def _drop_finalizer(self, rt: ResourceType, obj: dict[str, Any], finalizer: str) -> None:
        new = clone(obj)
        new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
        self._update(rt, new)

    def _update(self, rt: ResourceType, new: dict[str, Any]) -> None:
        meta = new["metadata"]
        version = new["apiVersion"].rpartition("/")[2]
        self.registry.update(rt, version, meta.get("namespace"), meta["name"], new)

    def _finalize_namespace(self, ns: str) -> None:
        ns_rt = self.registry.types[NAMESPACES]
        namespace = self.registry.find(ns_rt, None, ns)
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for rt in list(self.registry.types.values()):
            if not rt.namespaced or rt.storage_of:  # a view's objects are deleted through their owner
                continue
            for obj in list(self.registry.items(rt, ns)):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self._delete(rt, obj, "Background")
        if remaining == 0 and (namespace.get("spec") or {}).get("finalizers"):
            new = clone(namespace)
            new["spec"]["finalizers"] = []
            self.registry.update(ns_rt, "v1", None, ns, new, subresource="finalize")
