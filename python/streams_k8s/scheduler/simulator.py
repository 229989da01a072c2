"""The scheduler simulator: one JSON document in, what the scheduler would do out.

Input (camelCase): `statefulSet {name, replicas, namespace?}`, `capacity`, `nodes`, `pods`,
`vpods`, optional `reserved {key: [placements]}`, `policy` (`{"type": "MAXFILLUP"}`, a
ConfigMap or its `data`, or `{"predicates": [...], "priorities": [...]}`), optional
`deschedulerPolicy`, and `schedule` (the key of the vpod to schedule).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from streams_k8s.scheduler.autoscaler import Autoscaler
from streams_k8s.scheduler.framework import PolicyError
from streams_k8s.scheduler.model import ClusterSnapshot, Node, Placement, Pod, Taint, VPod
from streams_k8s.scheduler.plugins import default_registry
from streams_k8s.scheduler.policy import MAXFILLUP, Policy, policy_from_configmap
from streams_k8s.scheduler.scheduler import Scheduler


class SimulationError(ValueError):
    """The input document cannot be simulated; the message says why, in one line."""


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _PlacementIn(_In):
    pod_name: str = Field(alias="podName")
    vreplicas: int = Field(ge=0)


class _TaintIn(_In):
    key: str
    effect: str = ""
    value: str = ""


class _NodeIn(_In):
    name: str
    zone: str | None = None
    unschedulable: bool = False
    taints: list[_TaintIn] = []


class _PodIn(_In):
    name: str
    node: str = ""
    annotations: dict[str, str] = {}


class _VPodIn(_In):
    key: str
    vreplicas: int = Field(ge=0)
    placements: list[_PlacementIn] = []


class _StatefulSetIn(_In):
    name: str
    replicas: int = Field(ge=0)
    namespace: str = ""


class SimulationInput(_In):
    stateful_set: _StatefulSetIn = Field(alias="statefulSet")
    capacity: int = Field(gt=0)
    nodes: list[_NodeIn] = []
    pods: list[_PodIn] = []
    vpods: list[_VPodIn] = []
    reserved: dict[str, list[_PlacementIn]] = {}
    policy: dict[str, Any]
    descheduler_policy: dict[str, Any] | None = Field(default=None, alias="deschedulerPolicy")
    schedule: str | None = None

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(
            statefulset_name=self.stateful_set.name,
            namespace=self.stateful_set.namespace,
            replicas=self.stateful_set.replicas,
            capacity=self.capacity,
            nodes=tuple(
                Node(n.name, n.zone, n.unschedulable, tuple(Taint(t.key, t.effect) for t in n.taints))
                for n in self.nodes
            ),
            pods=tuple(Pod(p.name, p.node, p.annotations) for p in self.pods),
            vpods=tuple(
                VPod(v.key, v.vreplicas, tuple(Placement(p.pod_name, p.vreplicas) for p in v.placements))
                for v in self.vpods
            ),
        )


def parse_input(document: Any) -> SimulationInput:
    try:
        return SimulationInput.model_validate(document)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise SimulationError(f"{where}: {first['msg']}{more}") from None


def _policy(raw: dict[str, Any], where: str) -> Policy | str:
    if "type" in raw:
        if raw["type"] != MAXFILLUP or len(raw) != 1:
            raise SimulationError(f'{where}: the only policy type is {{"type": "{MAXFILLUP}"}}')
        return MAXFILLUP
    data = raw.get("data", raw)  # a whole ConfigMap, or its data
    if not isinstance(data, dict):
        raise SimulationError(f"{where}: data must be an object")
    try:
        return policy_from_configmap(data, default_registry())
    except PolicyError as err:
        raise SimulationError(f"{where}: {err}") from None


def _scheduler(sim: SimulationInput) -> Scheduler:
    descheduler = None
    if sim.descheduler_policy is not None:
        parsed = _policy(sim.descheduler_policy, "deschedulerPolicy")
        if not isinstance(parsed, Policy):
            raise SimulationError("deschedulerPolicy: must be a plugin policy")
        descheduler = parsed
    scheduler = Scheduler(_policy(sim.policy, "policy"), descheduler)
    scheduler.reserved = {
        key: {p.pod_name: p.vreplicas for p in placements} for key, placements in sim.reserved.items()
    }
    return scheduler


def simulate_schedule(document: Any) -> dict[str, Any]:
    """Schedule the vpod named by `schedule`: `{"placements", "error", "state"}`."""
    sim = parse_input(document)
    if sim.schedule is None:
        raise SimulationError("schedule: the key of the vpod to schedule is required")
    snapshot = sim.snapshot()
    if sim.schedule not in {v.key for v in snapshot.vpods}:
        raise SimulationError(f"schedule: no vpod with key {sim.schedule!r} in vpods")
    scheduler = _scheduler(sim)
    result, state = scheduler.schedule_snapshot(snapshot, sim.schedule)
    placements = None
    if result.placements is not None:
        placements = [{"podName": p.pod_name, "vreplicas": p.vreplicas} for p in result.placements]
    return {
        "placements": placements,
        "error": None if result.error is None else str(result.error),
        "state": {
            **state.to_json(),
            "schedulerPolicy": scheduler.policy if isinstance(scheduler.policy, str) else "",
            "schedPolicy": scheduler.policy.to_json() if isinstance(scheduler.policy, Policy) else None,
            "deschedPolicy": None
            if scheduler.descheduler_policy is None
            else scheduler.descheduler_policy.to_json(),
            "reserved": scheduler.reserved,
        },
    }


def simulate_autoscale(document: Any, *, scale_down: bool) -> dict[str, Any]:
    """One leader autoscaler run (periodic with `scale_down`): `{"replicas", "evictions", ...}`."""
    sim = parse_input(document)
    scheduler = _scheduler(sim)
    state = scheduler.state(sim.snapshot())
    autoscaler = Autoscaler(scheduler.policy, refresh_period=0.0)
    autoscaler.promote()
    result = autoscaler.autoscale(state, attempt_scale_down=scale_down, now=0.0)
    assert result is not None  # the simulated autoscaler is the leader
    return {
        "replicas": result.replicas,
        "evictions": [
            {"vpod": e.vpod, "podName": e.pod_name, "vreplicas": e.vreplicas} for e in result.evictions
        ],
        "clearAnnotations": list(result.clear_annotations),
    }
