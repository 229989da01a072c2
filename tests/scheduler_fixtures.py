"""Builders shared by the scheduler tests (project-generated clusters, no external data)."""

from __future__ import annotations

import json

from streams_k8s.scheduler import ClusterSnapshot, Node, Placement, PluginSpec, Pod, Policy, VPod

STS = "sts"


def nodes_in_zones(*zones: str | None) -> tuple[Node, ...]:
    return tuple(Node(f"node{i}", zone) for i, zone in enumerate(zones))


def pods_on(*nodes: str) -> tuple[Pod, ...]:
    """Pod `sts-i` on `nodes[i]` ("" = Pending)."""
    return tuple(Pod(f"{STS}-{i}", node) for i, node in enumerate(nodes))


def vpod(key: str, vreplicas: int, **placements: int) -> VPod:
    """`vpod("ns/a", 5, p0=2, p3=3)`: 2 on sts-0 and 3 on sts-3."""
    return VPod(key, vreplicas, tuple(Placement(f"{STS}-{k[1:]}", n) for k, n in placements.items()))


def snapshot(
    replicas: int,
    nodes: tuple[Node, ...],
    pods: tuple[Pod, ...],
    vpods: tuple[VPod, ...] = (),
    capacity: int = 10,
) -> ClusterSnapshot:
    return ClusterSnapshot(STS, replicas, capacity, nodes, pods, vpods, namespace="ns")


def policy(
    predicates: list[tuple[str, dict[str, int]]], priorities: list[tuple[str, int, dict[str, int]]]
) -> Policy:
    return Policy(
        predicates=tuple(PluginSpec(name, args) for name, args in predicates),
        priorities=tuple(PluginSpec(name, args, weight) for name, weight, args in priorities),
    )


HA_PROFILE = policy(
    [("PodFitsResources", {}), ("EvenPodSpread", {"MaxSkew": 2})],
    [("AvailabilityZonePriority", 10, {"MaxSkew": 2}), ("LowestOrdinalPriority", 2, {})],
)


def as_dict(placements: tuple[Placement, ...] | None) -> dict[str, int] | None:
    return None if placements is None else {p.pod_name: p.vreplicas for p in placements}


# The shipped defaults of eventing-kafka / eventing-kafka-broker (spec §4).
SHIPPED_SCHEDULER = {
    "predicates": json.dumps(
        [{"Name": "PodFitsResources"}, {"Name": "NoMaxResourceCount", "Args": '{"NumPartitions": 100}'}]
    ),
    "priorities": json.dumps(
        [
            {"Name": "AvailabilityZonePriority", "Weight": 10, "Args": '{"MaxSkew": 2}'},
            {"Name": "LowestOrdinalPriority", "Weight": 2},
            {"Name": "EvenPodSpread", "Weight": 2, "Args": '{"MaxSkew": 2}'},
        ]
    ),
}
SHIPPED_DESCHEDULER = {
    "predicates": "[]",
    "priorities": json.dumps(
        [
            {"Name": "RemoveWithEvenPodSpreadPriority", "Weight": 10, "Args": '{"MaxSkew": 2}'},
            {"Name": "RemoveWithAvailabilityZonePriority", "Weight": 10, "Args": '{"MaxSkew": 2}'},
            {"Name": "RemoveWithHighestOrdinalPriority", "Weight": 2},
        ]
    ),
}
