"""Launch counts a deleted PE passes on to the PE recreated under its name.

A PE deleted while its Job lives is recreated by the job controller, and its launches continue
the count. What the deleted PE launched is taken when its deletion is seen: its recorded launch
count, the launches of its pods, and a launch seen running whose record still waited for the
PE's connectivity report (`report_wait`). The count is kept on the PE's ConfigMap (annotation
``streams.ibm.com/launch-count``), which outlives the PE, so a restarted controller finds it too.
"""

from __future__ import annotations

from streams_k8s.api.contract import LAUNCH_COUNT_ANNOTATION
from streams_k8s.controller.pes.lifecycle import pod_launch
from streams_k8s.controller.pes.pods_by_owner import PodsByOwner
from streams_k8s.controller.pes.report_wait import ReportWait
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import unless_gone
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key


class LaunchCounts:
    def __init__(
        self, client: KubeClient, configmaps: Informer, pods: PodsByOwner, report_wait: ReportWait
    ) -> None:
        self.client, self.configmaps, self.pods, self.report_wait = client, configmaps, pods, report_wait
        self._deleted: dict[ObjectKey, tuple[str, int]] = {}  # by PE: (its uid, its launches)

    def __len__(self) -> int:
        return len(self._deleted)

    def deleted(self, pe: Object) -> None:
        """A PE's deletion is seen: remember what it launched."""
        key, uid = object_key(pe), str(meta(pe).get("uid"))
        launches = max(
            int((pe.get("status") or {}).get("launchCount") or 0),
            *(pod_launch(p) for p in self.pods.live_pe_pods(uid)),
            self.report_wait.ran_unrecorded(key, uid),
        )
        if launches > 0:
            self._deleted[key] = (uid, launches)

    def launched(self, key: ObjectKey) -> None:
        """The successor has launched: its own status carries the count on."""
        self._deleted.pop(key, None)

    def previous(self, key: ObjectKey, uid: str) -> int:
        """Launches of the PE that had this name before the PE ``uid``."""
        remembered = self._deleted.get(key)
        from_memory = remembered[1] if remembered is not None and remembered[0] != uid else 0
        return max(from_memory, self._kept(key))

    async def keep(self, key: ObjectKey) -> None:
        """The PE ``key`` is gone: its count onto its ConfigMap, for the PE that replaces it."""
        remembered = self._deleted.get(key)
        if remembered is None:
            return
        if self.configmaps.store.get(key) is None:  # the job (which owns it) is gone: no successor
            del self._deleted[key]
        elif self._kept(key) < remembered[1]:
            patch = {"metadata": {"annotations": {LAUNCH_COUNT_ANNOTATION: str(remembered[1])}}}
            await unless_gone(self.client.patch(CONFIGMAPS, key.name, patch, key.namespace))

    def _kept(self, key: ObjectKey) -> int:
        cm = self.configmaps.store.get(key)
        value = meta(cm).get("annotations", {}).get(LAUNCH_COUNT_ANNOTATION, "") if cm is not None else ""
        return int(value) if str(value).isdecimal() else 0
