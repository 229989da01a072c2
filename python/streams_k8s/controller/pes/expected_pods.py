"""Pod writes of the PE controller that the pod cache does not show yet (client-go's expectations).

A PE is reconciled again as soon as its own status write comes back from the watch, usually before
the pod it created or deleted in the same reconcile does. Deciding from that cache would post the
new pod a second time (409 AlreadyExists) and delete the old one again. So the controller notes
each pod it creates (by PE: incarnation and launch) and each pod it deletes (by pod uid) before
the write (its event may come before the answer), drops the note when the write fails, and keeps
it until the pod's own event arrives; a note no event confirms within ``ttl`` (a watch that lost
it) is dropped, and the controller decides from the cache alone again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from streams_k8s.controller.pes.lifecycle import pod_launch
from streams_k8s.k8s.backoff import Clock
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# Longer than any watch delay a healthy operator sees, short enough to heal a lost event.
EXPECTATION_TTL = 30.0


@dataclass(frozen=True, slots=True)
class _Created:
    pe_uid: str
    launch: int
    since: float


class ExpectedPods:
    def __init__(self, ttl: float = EXPECTATION_TTL, clock: Clock = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._created: dict[ObjectKey, _Created] = {}  # by PE key
        self._deleted: dict[str, float] = {}  # pod uid -> since

    def creating(self, pe: ObjectKey, pe_uid: str, launch: int) -> None:
        self._created[pe] = _Created(pe_uid, launch, self._clock())

    def deleting(self, pod: Object) -> None:
        self._deleted[str(meta(pod).get("uid"))] = self._clock()

    def delete_failed(self, pod: Object) -> None:
        self._deleted.pop(str(meta(pod).get("uid")), None)

    def creation_pending(self, pe: ObjectKey, pe_uid: str, launch: int) -> float:
        """Seconds the pod of this launch (created here) may still take to reach the cache; 0 if none."""
        note = self._created.get(pe)
        if note is None or note.pe_uid != pe_uid or note.launch != launch:
            return 0.0
        left = note.since + self.ttl - self._clock()
        if left <= 0:
            del self._created[pe]
        return max(left, 0.0)

    def without_deleted(self, pods: Sequence[Object]) -> list[Object]:
        """``pods`` less those deleted here whose deletion the cache does not show yet."""
        if not self._deleted:
            return list(pods)
        now = self._clock()
        kept = []
        for pod in pods:
            uid = str(meta(pod).get("uid"))
            since = self._deleted.get(uid)
            if since is None:
                kept.append(pod)
            elif now - since >= self.ttl:
                del self._deleted[uid]
                kept.append(pod)
        return kept

    def forget(self, pe: ObjectKey) -> None:
        """The create failed, or the PE is gone (its pods go with it)."""
        self._created.pop(pe, None)

    def observe(self, kind: str, old: Object | None, new: Object | None) -> None:
        """A pod event (informer handler): the cache now shows what it confirms."""
        pod = new if new is not None else old
        if pod is None:
            return
        m = meta(pod)
        if kind == "delete" or m.get("deletionTimestamp"):
            self._deleted.pop(str(m.get("uid")), None)
        for ref in m.get("ownerReferences") or ():
            if ref.get("controller"):
                key = ObjectKey(str(m.get("namespace") or ""), str(ref.get("name")))
                note = self._created.get(key)
                if note is not None and note.pe_uid == ref.get("uid") and pod_launch(pod) >= note.launch:
                    del self._created[key]

    def retained(self) -> dict[str, int]:
        return {"expected-creates": len(self._created), "expected-deletes": len(self._deleted)}
