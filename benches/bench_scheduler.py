"""Scheduler throughput: vpods x 10 vreplicas over a StatefulSet across 3 zones / 30 nodes, HA profile.

Run: pytest benches/bench_scheduler.py --benchmark-enable
"""

from __future__ import annotations

import time

import pytest

from streams_k8s.scheduler import ClusterSnapshot, Node, PluginSpec, Pod, Policy, Scheduler, VPod

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


def cluster(pods: int, vpods: int) -> ClusterSnapshot:
    """`pods` pods round-robin over 30 nodes in 3 zones, with room for every vreplica."""
    capacity = max(1, -(-vpods * VREPLICAS // pods))
    return ClusterSnapshot(
        statefulset_name="pool",
        replicas=pods,
        capacity=capacity,
        nodes=tuple(Node(f"node-{n}", f"zone-{n % ZONES}") for n in range(NODES)),
        pods=tuple(Pod(f"pool-{o}", f"node-{o % NODES}") for o in range(pods)),
        vpods=tuple(VPod(f"ns/vpod-{v}", VREPLICAS) for v in range(vpods)),
    )


def schedule_all(snapshot: ClusterSnapshot) -> int:
    scheduler = Scheduler(HA_PROFILE)
    state = scheduler.state(snapshot)
    placed = 0
    for vpod in snapshot.vpods:
        result = scheduler.schedule(state, vpod.key)
        assert result.error is None
        placed += sum(p.vreplicas for p in result.placements or ())
    return placed


@pytest.mark.parametrize(("pods", "vpods"), [(100, 100), (1000, 1000)])
def test_schedule_ha_profile(benchmark: pytest.FixtureRequest, pods: int, vpods: int) -> None:
    snapshot = cluster(pods, vpods)
    started = time.perf_counter()
    placed = benchmark.pedantic(schedule_all, args=(snapshot,), rounds=1, iterations=1)  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - started
    assert placed == vpods * VREPLICAS
    benchmark.extra_info["us_per_vreplica"] = elapsed / placed * 1e6  # type: ignore[attr-defined]
