"""The JobAutoscaler controller: every ``intervalSeconds`` it takes its job's PE metrics from the
operator's flow reading (`reading`: its latest round), makes a window of the last two readings
and lets the DS2-style `decision` size every parallel region.

In ``Active`` mode a width it changes is set through the ParallelRegion's ``/scale`` subresource
(what ``kubectl scale`` does: the job controller applies it like any width edit); in
``Recommend`` mode nothing changes. Either way the autoscaler's status gets the widths it saw, its
recommendation, the reasons and the decision history, and an Event says what it did or would do
(``Scaled``, ``Recommended``). Settings the job cannot have (a region it lacks, besides what the
CRD refuses) set ``Valid=False`` with a Warning Event and nothing is decided until they change.

It touches nothing else: the Job and its children are the job controller's. A window is only
made of two readings of the same widths, each region's PEs all running; a reading in between (a
width being applied) starts the window again. What it decided before (stabilisation, scale-down
timers, history) is kept in memory: a restarted operator starts a fresh window and stabilises
from its first change.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from streams_k8s.api.autoscaler import AutoscalerMode, JobAutoscalerSpec
from streams_k8s.api.contract import AADL_KEY, JOB_LABEL
from streams_k8s.controller.autoscaling.decision import AutoscalerState, Decision, HistoryEntry, decide
from streams_k8s.controller.autoscaling.estimates import Topology
from streams_k8s.controller.autoscaling.observations import Scrape, window
from streams_k8s.controller.autoscaling.reading import JobReader
from streams_k8s.controller.autoscaling.settings import AutoscalerSettings, Bounds, problems
from streams_k8s.controller.autoscaling.topology import TopologyError, job_topology
from streams_k8s.controller.kinds import JOB_AUTOSCALERS, PARALLEL_REGIONS
from streams_k8s.k8s.conditions import ConditionDict, set_condition
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta

log = logging.getLogger(__name__)

VALID = "Valid"
NOT_READING = "the operator reads no PE metrics (STREAMS_K8S_FLOW_INTERVAL=0): nothing to decide from"


@dataclass
class Tracked:
    """What the controller remembers of one autoscaler between its windows."""

    uid: str
    state: AutoscalerState
    last: Scrape | None = None
    widths: dict[str, int] | None = None  # the widths `last` was read at
    recommended: dict[str, int] | None = None


def settings_of(spec: JobAutoscalerSpec) -> AutoscalerSettings:
    return AutoscalerSettings(
        mode="Active" if spec.mode is AutoscalerMode.ACTIVE else "Recommend",
        target_utilisation=spec.target_utilization,
        low=spec.low_utilization,
        high=spec.high_utilization,
        stabilisation=float(spec.stabilization_seconds),
        scale_down_delay=float(spec.scale_down_delay_seconds),
        interval=float(spec.interval_seconds),
        regions={r.alias: Bounds(r.min, r.max) for r in spec.regions},
    )


class JobAutoscalerController:
    def __init__(self, manager: Manager, reader: JobReader | None) -> None:
        """``reader``: the flow reading's (`reading.flow_reader`); None when the operator reads
        no PE metrics (``STREAMS_K8S_FLOW_INTERVAL=0``), which each autoscaler is told."""
        self.client = manager.client
        self.autoscalers = manager.informer(JOB_AUTOSCALERS)
        self.regions = manager.informer(PARALLEL_REGIONS)
        self.configmaps = manager.informer(CONFIGMAPS, label_selector="app=streams")
        self.reader = reader
        self.events = manager.event_recorder("streams-autoscaler")
        self.tracked: dict[ObjectKey, Tracked] = {}
        manager.controller("job-autoscalers", self.reconcile).watch(self.autoscalers)

    def _regions(self, namespace: str, job: str) -> tuple[dict[str, int], dict[int, str], bool]:
        """The job's regions: alias -> width wanted, index -> alias, and whether all run their width."""
        widths, aliases, settled = {}, {}, True
        for pr in self.regions.store.select_by_labels({JOB_LABEL: job}, namespace):
            spec, status = pr.get("spec") or {}, pr.get("status") or {}
            widths[str(spec["alias"])] = int(spec["width"])
            aliases[int(spec["index"])] = str(spec["alias"])
            settled = settled and status.get("width") == spec.get("width")
        return widths, aliases, settled

    def _topology(self, namespace: str, job: str, aliases: dict[int, str]) -> Topology:
        aadls = [
            str((cm.get("data") or {})[AADL_KEY])
            for cm in self.configmaps.store.select_by_labels({JOB_LABEL: job}, namespace)
            if AADL_KEY in (cm.get("data") or {})
        ]
        return job_topology(aadls, aliases)

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        obj = self.autoscalers.store.get(key)
        if obj is None:
            self.tracked.pop(key, None)
            return None
        spec = JobAutoscalerSpec.model_validate(obj["spec"])
        settings = settings_of(spec)
        tracked = self.tracked.get(key)
        if tracked is None or tracked.uid != meta(obj).get("uid"):
            tracked = self.tracked[key] = Tracked(str(meta(obj).get("uid")), AutoscalerState())
        widths, aliases, settled = self._regions(key.namespace, spec.job)
        wrong = problems(settings, widths) if widths else [f"job {spec.job} has no parallel region (yet)"]
        if wrong:
            tracked.last = None
            await self._invalid(obj, "; ".join(wrong))
            return Requeue(settings.interval)
        try:
            topology = self._topology(key.namespace, spec.job, aliases)
        except TopologyError as err:
            await self._invalid(obj, str(err))
            return Requeue(settings.interval)
        if self.reader is None:
            await self._invalid(obj, NOT_READING)
            return Requeue(settings.interval)
        now = self.reader(ObjectKey(key.namespace, spec.job))
        if now is None:  # not read yet
            await self._write_status(obj, widths, None)
            return Requeue(settings.interval)
        previous, tracked.last = tracked.last, now
        same = tracked.widths == widths
        tracked.widths = dict(widths)
        if previous is None or not settled or not same or now.t - previous.t < settings.interval / 2:
            await self._write_status(obj, widths, None)
            return Requeue(settings.interval)
        decision = decide(topology, widths, window(previous, now), settings, tracked.state)
        tracked.state = decision.state
        await self._act(obj, spec, settings, tracked, widths, decision)
        return Requeue(settings.interval)

    async def _act(
        self,
        obj: Object,
        spec: JobAutoscalerSpec,
        settings: AutoscalerSettings,
        tracked: Tracked,
        widths: dict[str, int],
        decision: Decision,
    ) -> None:
        reasons = "; ".join(decision.reasons)
        if decision.changed and settings.mode == "Active":
            namespace = str(meta(obj).get("namespace"))
            for pr in self.regions.store.select_by_labels({JOB_LABEL: spec.job}, namespace):
                alias = str(pr["spec"]["alias"])
                if decision.widths[alias] != widths[alias]:
                    body = {"spec": {"replicas": decision.widths[alias]}}
                    await self.client.patch(
                        PARALLEL_REGIONS, meta(pr)["name"], body, namespace, subresource="scale"
                    )
            tracked.last = None  # the new PEs' counters start again
            await self.events.record(
                obj, "Normal", "Scaled", f"{_widths(widths)} -> {_widths(decision.widths)}: {reasons}"
            )
        elif decision.changed and decision.widths != tracked.recommended:
            await self.events.record(obj, "Normal", "Recommended", f"{_widths(decision.widths)}: {reasons}")
        tracked.recommended = dict(decision.widths) if decision.changed else None
        await self._write_status(obj, widths, decision)

    async def _invalid(self, obj: Object, message: str) -> None:
        conditions: list[ConditionDict] = list((obj.get("status") or {}).get("conditions") or [])
        if set_condition(conditions, VALID, "False", "InvalidSettings", message, meta(obj).get("generation")):
            await self.events.record(obj, "Warning", "InvalidSettings", message)
            await self._patch_status(obj, {"conditions": conditions})

    async def _write_status(self, obj: Object, widths: dict[str, int], decision: Decision | None) -> None:
        conditions: list[ConditionDict] = list((obj.get("status") or {}).get("conditions") or [])
        set_condition(conditions, VALID, "True", "RegionsFound", "", meta(obj).get("generation"))
        status: dict[str, Any] = {"conditions": conditions, "widths": widths}
        if decision is not None:
            status |= {
                "recommendation": dict(decision.widths),
                "reasons": list(decision.reasons),
                "lastWindow": _stamp(time.time()),
                "history": [_entry(h) for h in decision.state.history],
            }
        await self._patch_status(obj, status)

    async def _patch_status(self, obj: Object, status: dict[str, Any]) -> None:
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items() if k != "conditions") and _same_conditions(
            current, status
        ):
            return
        await self.client.patch(
            JOB_AUTOSCALERS,
            meta(obj)["name"],
            {"status": status},
            meta(obj)["namespace"],
            subresource="status",
        )


def _same_conditions(current: dict[str, Any], status: dict[str, Any]) -> bool:
    strip = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in current.get("conditions") or []
    ]
    wanted = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []
    ]
    return strip == wanted


def _widths(widths: Any) -> str:
    return ", ".join(f"{alias} {width}" for alias, width in sorted(dict(widths).items()))


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(h: HistoryEntry) -> dict[str, Any]:
    return {"time": _stamp(h.at), "action": h.action, "widths": dict(h.widths), "reason": h.reason[:1024]}
