"""Which host-pool locations the PEs of each job use, kept from the PE events.

The node-placement controller needs, of a job's PEs, only the pool locations they use (a pool
index, an in-pool index), to choose each pool's nodes. Read from every PE on each of its
reconciles (one per burst of PEs added), that was a pass over the job's PEs each time: at 3,000
PEs, 500 passes. Each PE's location is parsed when its spec changes and counted per job, so a
reconcile reads one PE per distinct location.
"""

from __future__ import annotations

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.processing_element import ProcessingElementSpec
from streams_k8s.controller.placement.constraints import PlacedPe
from streams_k8s.k8s.informer import EventType, Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

# (the owning Job's uid, pool index, in-pool index)
Use = tuple[str, int, int | None]


class PoolUses:
    def __init__(self, pes: Informer) -> None:
        self._uses: dict[ObjectKey, dict[Use, tuple[int, PlacedPe]]] = {}  # by Job: use -> (PEs, one of them)
        self._by_pe: dict[ObjectKey, tuple[ObjectKey, Use]] = {}  # PE -> (its Job, its use)
        pes.add_handler(self._on_pe)
        for pe in pes.store.select():  # a cache filled already
            self._add(object_key(pe), pe)

    def __len__(self) -> int:
        return len(self._by_pe)

    def of(self, job: ObjectKey, uid: str) -> list[PlacedPe]:
        """One PE of the job's incarnation ``uid`` per distinct pool location."""
        return [pe for use, (_, pe) in self._uses.get(job, {}).items() if use[0] == uid]

    def _on_pe(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        if old is not None and new is not None and old.get("spec") == new.get("spec"):
            return  # a status write: the location is the same
        key = object_key(new if new is not None else old or {})
        self._drop(key)
        if new is not None:
            self._add(key, new)

    def _add(self, key: ObjectKey, pe: Object) -> None:
        m = meta(pe)
        job = (m.get("labels") or {}).get(JOB_LABEL)
        owner = next((r.get("uid") for r in m.get("ownerReferences") or () if r.get("controller")), None)
        if not job or owner is None:
            return
        spec = ProcessingElementSpec.model_validate(pe["spec"])
        location = spec.placement.host_pool_location
        if location is None:
            return
        job_key = ObjectKey(key.namespace, str(job))
        use: Use = (str(owner), location.pool_index, location.inpool_index)
        uses = self._uses.setdefault(job_key, {})
        count, placed = uses.get(use, (0, PlacedPe(spec.id, spec.placement)))
        uses[use] = (count + 1, placed)
        self._by_pe[key] = (job_key, use)

    def _drop(self, key: ObjectKey) -> None:
        counted = self._by_pe.pop(key, None)
        if counted is None:
            return
        job, use = counted
        uses = self._uses[job]
        count, placed = uses[use]
        if count > 1:
            uses[use] = (count - 1, placed)
            return
        del uses[use]
        if not uses:
            del self._uses[job]
