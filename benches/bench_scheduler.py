"""Scheduler throughput: 1,000 vpods x 10 vreplicas, 3 zones / 30 nodes, HA profile
(PodFitsResources + EvenPodSpread, AvailabilityZonePriority, LowestOrdinalPriority), over a
StatefulSet of 100, 1,000 and 10,000 pods (pod capacity: 10% more slots than vreplicas, since
the even-spread filter cannot always fill the very last slots).

Run: pytest benches/bench_scheduler.py --benchmark-enable
"""

from __future__ import annotations

from typing import Any

import pytest

from streams_k8s.scheduler import ClusterSnapshot, Node, Placement, PluginSpec, Pod, Policy, Scheduler, VPod

VPODS = 1000
VREPLICAS = 10
ZONES = 3
NODES = 30

HA_PROFILE = Policy(
    predicates=(PluginSpec("PodFitsResources"), PluginSpec("EvenPodSpread", {"MaxSkew": 2})),
    priorities=(
        PluginSpec("AvailabilityZonePriority", {"MaxSkew": 2}, 10),
        PluginSpec("LowestOrdinalPriority", weight=2),
    ),
)


def cluster(pods: int, vpods: int = VPODS) -> ClusterSnapshot:
    """`pods` pods round-robin over 30 nodes in 3 zones, with 10% spare slots."""
    capacity = -(-vpods * VREPLICAS * 11 // (10 * pods))
    return ClusterSnapshot(
        statefulset_name="pool",
        replicas=pods,
        capacity=capacity,
        nodes=tuple(Node(f"node-{n}", f"zone-{n % ZONES}") for n in range(NODES)),
        pods=tuple(Pod(f"pool-{o}", f"node-{o % NODES}") for o in range(pods)),
        vpods=tuple(VPod(f"ns/vpod-{v}", VREPLICAS) for v in range(vpods)),
    )


def schedule_all(snapshot: ClusterSnapshot, native: bool) -> int:
    """Build the state once, then schedule every vpod in turn (nothing committed in between)."""
    scheduler = Scheduler(HA_PROFILE, native=native)
    state = scheduler.state(snapshot)
    placed = 0
    for vpod in snapshot.vpods:
        result = scheduler.schedule(state, vpod.key)
        assert result.error is None
        placed += sum(p.vreplicas for p in result.placements or ())
    return placed


def run(benchmark: Any, pods: int, native: bool, rounds: int) -> None:
    snapshot = cluster(pods)
    placed = benchmark.pedantic(schedule_all, args=(snapshot, native), rounds=rounds, iterations=1)
    assert placed == VPODS * VREPLICAS
    if benchmark.stats is not None:  # None with --benchmark-disable
        benchmark.extra_info["us_per_vreplica"] = round(benchmark.stats.stats.mean / placed * 1e6, 2)


@pytest.mark.parametrize("pods", [100, 1000, 10000])
def test_schedule_native_loop(benchmark: Any, pods: int) -> None:
    run(benchmark, pods, native=True, rounds=3)


@pytest.mark.parametrize("pods", [100, 1000])
def test_schedule_python_loop(benchmark: Any, pods: int) -> None:
    """The same with the pure-Python plugins (what a policy with a deployment's own plugin costs)."""
    run(benchmark, pods, native=False, rounds=1)


def test_build_state(benchmark: Any) -> None:
    """Snapshot -> state for 10,000 pods with 10,000 committed placements."""
    base = cluster(10000)
    vpods = tuple(
        VPod(
            v.key,
            VREPLICAS,
            tuple(Placement(f"pool-{(i * VREPLICAS + r) % 10000}", 1) for r in range(VREPLICAS)),
        )
        for i, v in enumerate(base.vpods)
    )
    snapshot = ClusterSnapshot("pool", 10000, 2, base.nodes, base.pods, vpods)
    state = benchmark(Scheduler(HA_PROFILE).state, snapshot)
    assert len(state.schedulable) == 10000
