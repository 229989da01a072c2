"""A PE's connectivity reports, written into its status in arrival order.

The runtime reports each change of a PE's connectivity once, so no report may be lost to a stale
cache: one the PE cache shows already (and that was the last written) is checked against the PE the
API server holds before it is skipped, as a relaunch written ahead may not be in the cache yet. The
first report of a just-started pod also records the pod (`pes.lifecycle.started_status`), in one
write conditional on the launch and phase the pod facts were read against; when they no longer
hold, both are read again.

A report from a pod of a launch since replaced (stopping, its connections going) speaks for no launch
that runs: written, it would show the new launch connected before its pod runs. It is refused
(409 `Superseded`) on the PE the cache holds and, as the cache may not show a relaunch written ahead
yet, on the API server's: every write of a pod's report is conditional on the pod's launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.controller.kinds import PES
from streams_k8s.controller.pes.lifecycle import PENDING, pod_launch, pod_phase, started_status
from streams_k8s.controller.pes.pods_by_owner import PodsByOwner
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.keyed_locks import KeyedLocks
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

_ATTEMPTS = 5
_HELD = ("launchCount", "phase")  # what a started pod's record is conditional on
# How long a report waits for the pod cache to show its pod running: the watch lags by far less,
# and the runtime's HTTP calls time out after about a second.
REPORT_SETTLE = 0.5


@dataclass(frozen=True)
class Reporter:
    """The pod a report came from, and its launch."""

    pod: str
    launch: int


def reporter(callers: Sequence[Object]) -> Reporter | None:
    """The reporting pod of the newest launch among ``callers`` (the pods the write guard trusted
    the request from); None when it is not known (no caller pod, or one without a launch)."""
    launches = [(pod_launch(p), str(meta(p).get("name"))) for p in callers]
    if not launches or min(launches)[0] < 0:
        return None
    launch, pod = max(launches)
    return Reporter(pod, launch)


class SupersededReport(Exception):
    """A report from a pod of a launch the PE has since replaced; not written."""

    def __init__(self, by: Reporter, launch: int) -> None:
        super().__init__(
            f"pod {by.pod} of launch {by.launch}: launch {launch} replaced it; report not written"
        )


def _refuse_if_superseded(pe: Object, by: Reporter | None) -> None:
    launch = int((pe.get("status") or {}).get("launchCount") or 0)
    if by is not None and by.launch < launch:
        raise SupersededReport(by, launch)


class ConnectivityReports:
    def __init__(self, client: KubeClient, pes: Informer, pods: PodsByOwner | None) -> None:
        self.client, self.pes, self.pods = client, pes, pods
        # A PE's reports in arrival order (one whose answer timed out must not land after the next).
        self._order = KeyedLocks()
        self._written: dict[ObjectKey, str] = {}  # each PE's last value written (the cache may lag)
        # The launch (PE uid, launch count) whose start a report recorded: the next report of that
        # pod, often the moment after (Partial, then Full), need not record it again from a cache
        # that has not shown the first yet, which cost a 409 and a read.
        self._recorded: dict[ObjectKey, tuple[str, int]] = {}
        pes.add_handler(self._forget)

    def _forget(self, kind: str, old: Object | None, new: Object | None) -> None:
        if kind == "delete" and old is not None:
            self._written.pop(object_key(old), None)
            self._recorded.pop(object_key(old), None)

    async def write(self, key: ObjectKey, cached: Object, value: str, by: Reporter | None) -> None:
        """Write ``value``, reported ``by`` a pod, as the PE's connectivity; `SupersededReport` when the
        pod's launch was replaced, `ApiError` 404 when the PE is gone."""
        async with self._order.hold(f"{key.namespace}/{key.name}"):
            pe = self.pes.store.get(key) or cached
            _refuse_if_superseded(pe, by)
            await self._write(key, pe, value, by)

    async def _write(self, key: ObjectKey, pe: Object, value: str, by: Reporter | None) -> None:
        name, namespace, started = key.name, key.namespace, None
        for _ in range(_ATTEMPTS):
            if (started := await self._started_status(key, pe)) is None:
                break
            # On the launch and phase the pod facts were read against, not on the PE's version,
            # which the reports of its pod and of its neighbours' move meanwhile.
            recorded = pe.get("status") or {}
            tested = {k: recorded[k] for k in _HELD} if all(k in recorded for k in _HELD) else {}
            version = meta(pe).get("resourceVersion")
            status = {**started, "connectivity": value}
            try:
                await self.client.patch_status_if(
                    PES, name, namespace, status, held=tested, resource_version=version
                )
                self._written[key] = value
                self._recorded[key] = (str(meta(pe).get("uid")), int(started["launchCount"]))
                return
            except ApiError as err:
                if not (err.conflict or err.status == 422):  # 422: a failed test, or a refused value
                    raise
            pe = await self.client.get(PES, name, namespace)
            _refuse_if_superseded(pe, by)
        shown = (pe.get("status") or {}).get("connectivity"), self._written.get(key, value)
        if started is None and shown == (value, value):  # unless the cache missed a relaunch since
            pe = await self.client.get(PES, name, namespace)
            _refuse_if_superseded(pe, by)
            shown = (pe.get("status") or {}).get("connectivity"), value
        if started is not None or shown != (value, value):
            await self._write_value(key, value, by)

    async def _write_value(self, key: ObjectKey, value: str, by: Reporter | None) -> None:
        """The connectivity alone, on the condition that the reporter's launch is still the PE's."""
        name, namespace = key.name, key.namespace
        if by is not None:
            try:
                held = {"launchCount": by.launch}
                await self.client.patch_status_if(
                    PES, name, namespace, {"connectivity": value}, held=held, resource_version=None
                )
                self._written[key] = value
                return
            except ApiError as err:
                if err.status != 422:
                    raise
            # The test failed: a relaunch the cache did not show yet, or no launch recorded.
            _refuse_if_superseded(await self.client.get(PES, name, namespace), by)
        await self.client.patch_status(PES, name, {"connectivity": value}, namespace)
        self._written[key] = value

    async def _started_status(self, key: ObjectKey, pe: Object) -> dict[str, Any] | None:
        """The record of a just-started pod, when this report can carry it (see `pes.lifecycle`)."""
        if self.pods is None:
            return None
        # A report comes from a running pod; the pod watch may not have shown it running yet.
        uid = str(meta(pe).get("uid"))
        pods = await self.pods.live_pe_pods_when(
            uid, lambda ps: any(pod_phase(p) != PENDING for p in ps), REPORT_SETTLE
        )
        started = started_status(ProcessingElement.from_wire(pe), pods) if pods else None
        if started is not None and self._recorded.get(key) == (uid, started["launchCount"]):
            return None  # recorded by this launch's previous report
        return started
