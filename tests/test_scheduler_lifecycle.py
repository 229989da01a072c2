"""The scheduler and autoscaler driven together the way an adapter drives them.

A small in-memory cluster stands in for Kubernetes: schedule results are written to the
vpods' status, the autoscaler's replicas create or delete pods, the evictor annotates the
pod and removes the placements from the status (as eventing-kafka's did), and annotation
removals are applied. The cluster must converge: every vpod fully placed, no pod over
capacity, and, after vpods go away, a StatefulSet that shrinks instead of keeping idle
annotated pods (eventing#6866).
"""

from __future__ import annotations

import pytest

from scheduler_fixtures import HA_PROFILE
from streams_k8s.scheduler import (
    MAXFILLUP,
    UNSCHEDULABLE_ANNOTATION,
    Autoscaler,
    AutoscaleResult,
    ClusterSnapshot,
    Node,
    Placement,
    Pod,
    Policy,
    Scheduler,
    Taint,
    VPod,
)

CAPACITY = 10
UNREACHABLE = (Taint("node.kubernetes.io/unreachable", "NoExecute"),)


class Cluster:
    def __init__(self, policy: Policy | str) -> None:
        self.replicas = 0
        self.annotated: set[str] = set()
        self.lost_nodes: set[str] = set()
        self.vpods: dict[str, VPod] = {}
        self.scheduler = Scheduler(policy)
        self.autoscaler = Autoscaler(policy, refresh_period=60.0, evictor=self.evict)
        self.autoscaler.promote()
        self.now = 0.0

    def snapshot(self) -> ClusterSnapshot:
        pods = tuple(
            Pod(
                f"sts-{o}",
                f"n{o % 6}",
                {UNSCHEDULABLE_ANNOTATION: "true"} if f"sts-{o}" in self.annotated else {},
            )
            for o in range(self.replicas)
        )
        nodes = tuple(
            Node(f"n{i}", f"z{i % 3}", taints=UNREACHABLE if f"n{i}" in self.lost_nodes else ())
            for i in range(6)
        )
        return ClusterSnapshot("sts", self.replicas, CAPACITY, nodes, pods, tuple(self.vpods.values()), "ns")

    def evict(self, pod: str, key: str, placement: Placement) -> None:
        self.annotated.add(pod)
        vpod = self.vpods[key]
        self.vpods[key] = VPod(key, vpod.vreplicas, tuple(p for p in vpod.placements if p.pod_name != pod))

    def apply(self, result: AutoscaleResult | None) -> None:
        assert result is not None
        self.replicas = result.replicas
        # Deleted pods take their annotation with them; a recreated pod starts clean.
        self.annotated = {p for p in self.annotated if int(p.rsplit("-", 1)[1]) < self.replicas}
        self.annotated -= set(result.clear_annotations)

    def reconcile(self) -> None:
        """Schedule every vpod until none reports a shortfall, scaling up on demand."""
        for _ in range(20):
            state = self.scheduler.state(self.snapshot())
            short = False
            for key in sorted(self.vpods):
                result = self.scheduler.schedule(state, key)
                if result.placements is not None:
                    self.vpods[key] = VPod(key, self.vpods[key].vreplicas, result.placements)
                short = short or result.error is not None
            if not short:
                return
            state = self.scheduler.state(self.snapshot())
            self.apply(self.autoscaler.autoscale(state, attempt_scale_down=False, now=self.now))
        raise AssertionError("scheduling did not converge")

    def periodic(self) -> None:
        self.now += 61.0
        state = self.scheduler.state(self.snapshot())
        self.apply(self.autoscaler.autoscale(state, attempt_scale_down=True, now=self.now))
        self.reconcile()

    def check(self) -> None:
        used: dict[str, int] = {}
        for vpod in self.vpods.values():
            assert sum(p.vreplicas for p in vpod.placements) == vpod.vreplicas, vpod
            for p in vpod.placements:
                assert int(p.pod_name.rsplit("-", 1)[1]) < self.replicas
                used[p.pod_name] = used.get(p.pod_name, 0) + p.vreplicas
        assert all(n <= CAPACITY for n in used.values()), used
        self.scheduler.state(self.snapshot())
        assert self.scheduler.reserved == {}  # every status caught up with its reservation


@pytest.mark.parametrize(("policy", "floor"), [(MAXFILLUP, 2), (HA_PROFILE, 3)])
def test_grow_shrink_and_grow_again(policy: Policy | str, floor: int) -> None:
    cluster = Cluster(policy)
    cluster.vpods = {f"ns/v{i}": VPod(f"ns/v{i}", 5) for i in range(12)}
    cluster.reconcile()
    cluster.check()
    grown = cluster.replicas
    assert grown >= 6

    for i in range(9):  # 15 vreplicas left: two pods' worth
        del cluster.vpods[f"ns/v{i}"]
    for _ in range(12):
        cluster.periodic()
        cluster.check()
    assert cluster.replicas == floor
    assert not cluster.annotated

    cluster.vpods.update({f"ns/w{i}": VPod(f"ns/w{i}", 5) for i in range(8)})
    cluster.reconcile()
    cluster.check()
    assert cluster.replicas >= 6
    cluster.periodic()
    cluster.check()


@pytest.mark.parametrize("policy", [MAXFILLUP, HA_PROFILE])
def test_vreplicas_leave_a_lost_node(policy: Policy | str) -> None:
    cluster = Cluster(policy)
    cluster.vpods = {f"ns/v{i}": VPod(f"ns/v{i}", 4) for i in range(10)}
    cluster.reconcile()
    cluster.lost_nodes = {"n0"}  # sts-0 and sts-6 sit on it
    cluster.reconcile()
    cluster.periodic()
    cluster.check()
    on_lost = {f"sts-{o}" for o in range(cluster.replicas) if o % 6 == 0}
    assert not any(p.pod_name in on_lost for v in cluster.vpods.values() for p in v.placements)
