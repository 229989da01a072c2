"""Which children of a job changed since its last check, so a reconcile checks only those.

A job's reconcile checks its planned children: one missing to recreate, an orphan to adopt, a PE
Service to heal. While a 10,000-PE job starts every pod event reconciles the job again, and
checking its 30,000 children each time made the operator's CPU per PE grow with the job. A child
can only need one of those checks after an event on it (created, deleted, its metadata or spec
changed; a status-only write cannot), so after one full check of a plan's children a reconcile
checks the children with an event since. A check that fails keeps them for the next one.

A new plan of the job (a change's target, re-fused or re-planned from what runs) renders anew only
what the change touches: the rest are the same `Desired` the last check saw (`desired_objects`
reuses them). Its check takes those rendered anew, those with an event since and the PEs the cache
lacks (a deleted PE that is not restartable, which the last check left and a change makes again),
not all of them: a width change of a 1,000-PE job checked its 3,000 children before it created the
12 new ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.kinds import PES
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.informer import EventType, Handler, Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

ChildKey = tuple[str, ObjectKey]  # (resource plural, namespace/name)


def status_only(old: Object, new: Object) -> bool:
    """``new`` differs from ``old`` in its status (and resourceVersion) alone."""
    old_meta, new_meta = meta(old), meta(new)
    return all(
        old.get(k) == new.get(k) for k in old.keys() | new.keys() if k not in ("status", "metadata")
    ) and all(
        old_meta.get(k) == new_meta.get(k)
        for k in old_meta.keys() | new_meta.keys()
        if k != "resourceVersion"
    )


class ChildChanges:
    def __init__(self, jobs: Informer, caches: Mapping[Resource, Informer]) -> None:
        self._jobs = jobs  # changes are noted for the Jobs it holds (their children outlive them)
        self._changed: dict[ObjectKey, set[ChildKey]] = {}  # by Job key: children with an event since
        # by Job key: the children list checked in full last, and its index by child key
        self._checked: dict[ObjectKey, tuple[list[Desired], dict[ChildKey, Desired]]] = {}
        self._caches = caches
        for resource, informer in caches.items():
            informer.add_handler(self._noter(resource.plural))

    def __len__(self) -> int:
        return len(self._changed) + len(self._checked)

    @contextmanager
    def to_check(self, job: ObjectKey, children: list[Desired]) -> Iterator[list[Desired]]:
        """The children to check: all of them the first time, those of a new plan the last check
        did not see as they are (see the module docs), then those with an event since the last
        check; kept for the next check if this one raises."""
        changed = self._changed.pop(job, set())
        checked = self._checked.get(job)
        if checked is None:
            index = {(c.resource.plural, c.key): c for c in children}
            pending = children
        elif checked[0] is not children:
            index, pending = self._new_plan(children, checked[1], changed)
        else:
            index = checked[1]
            pending = [index[k] for k in changed if k in index]
        try:
            yield pending
        except BaseException:
            self._changed.setdefault(job, set()).update(changed)
            raise
        self._checked[job] = (children, index)

    def _new_plan(
        self, children: list[Desired], seen: dict[ChildKey, Desired], changed: set[ChildKey]
    ) -> tuple[dict[ChildKey, Desired], list[Desired]]:
        """The index of a new plan's ``children`` and those to check (see the module docs): a
        child the last check saw is there unless an event since says otherwise, but a PE that is
        not restartable is left deleted (`jobs.keeping`)."""
        pes = self._caches.get(PES)
        index: dict[ChildKey, Desired] = {}
        pending: list[Desired] = []
        for child in children:
            key = (child.resource.plural, child.key)
            index[key] = child
            if (
                seen.get(key) is not child
                or key in changed
                or (child.resource == PES and (pes is None or pes.store.get(child.key) is None))
            ):
                pending.append(child)
        return index, pending

    def forget(self, job: ObjectKey) -> None:
        self._changed.pop(job, None)
        self._checked.pop(job, None)

    def _noter(self, plural: str) -> Handler:
        def note(kind: EventType, old: Object | None, new: Object | None) -> None:
            obj = new if new is not None else old
            if obj is None or (old is not None and new is not None and status_only(old, new)):
                return
            m = meta(obj)
            job = (m.get("labels") or {}).get(JOB_LABEL)
            if job and (key := ObjectKey(m.get("namespace") or "", str(job))) in self._jobs.store:
                self._changed.setdefault(key, set()).add((plural, object_key(obj)))

        return note
