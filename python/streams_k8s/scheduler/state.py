"""The scheduler's view of the cluster: free capacity per pod and where every vpod sits.

Built once from a snapshot plus the scheduler's reservations, then updated in place one
vreplica at a time (`set_vreplicas`), so a scheduling pass never rescans the cluster.
Upstream rebuilt this from the listers for every single vreplica placed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams_k8s.scheduler.model import (
    UNKNOWN_ZONE,
    ClusterSnapshot,
    Placement,
    VPod,
    ordinal_of,
    pod_name,
)

# Reservations: vpod key -> pod name -> vreplicas placed but not yet seen in the vpod's status.
Reservations = dict[str, dict[str, int]]


class State:
    """Capacity, schedulable pods, topology and per-vpod spread of one StatefulSet.

    `placements[key]` is each vpod's *effective* placement: its committed placements with its
    reservations laid over them. Free capacity counts effective placements on every pod,
    schedulable or not (a placement on a lost pod still holds its slot until it is moved);
    the spreads count schedulable pods only.
    """

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.statefulset_name = snapshot.statefulset_name
        self.namespace = snapshot.namespace
        self.capacity = snapshot.capacity
        self.replicas = snapshot.replicas

        self.node_zone: dict[str, str] = {
            node.name: node.zone or UNKNOWN_ZONE for node in snapshot.nodes if node.accepts_vreplicas
        }
        self.zones: tuple[str, ...] = tuple(sorted(set(self.node_zone.values())))
        self.nodes: tuple[str, ...] = tuple(sorted(self.node_zone))

        pods = {pod.name: pod for pod in snapshot.pods}
        self.pod_node: dict[int, str] = {}
        self.pod_zone: dict[int, str] = {}
        # Pods annotated unschedulable, by ordinal (the autoscaler clears the mark on emptied pods).
        self.marked: dict[int, str] = {}
        # Pods on a cordoned, unreachable or unknown node: they give no capacity until they move.
        self.stranded: set[int] = set()
        for ordinal in range(self.replicas):
            pod = pods.get(pod_name(self.statefulset_name, ordinal))
            if pod is None:
                continue
            if pod.marked_unschedulable:
                self.marked[ordinal] = pod.name
                continue
            # Pending pods (no node) and pods on bad nodes are out; so is a pod whose node is not
            # in the snapshot (upstream failed the whole state on that lookup).
            if pod.node in self.node_zone:
                self.pod_node[ordinal] = pod.node
                self.pod_zone[ordinal] = self.node_zone[pod.node]
            elif pod.node:
                self.stranded.add(ordinal)
        self.schedulable: list[int] = sorted(self.pod_node)
        # Node / zone index of each schedulable pod (positions in `nodes` / `zones`).
        node_index = {node: i for i, node in enumerate(self.nodes)}
        zone_index = {zone: i for i, zone in enumerate(self.zones)}
        self.schedulable_node_index = [node_index[self.pod_node[o]] for o in self.schedulable]
        self.schedulable_zone_index = [zone_index[self.pod_zone[o]] for o in self.schedulable]

        self.vpods: dict[str, VPod] = {}
        self.placements: dict[str, dict[int, int]] = {}
        self.pod_spread: dict[str, dict[int, int]] = {}
        self.node_spread: dict[str, dict[str, int]] = {}
        self.zone_spread: dict[str, dict[str, int]] = {}
        # Free slots by ordinal below the replicas (the native loop indexes it directly), and of
        # pods past the replicas that still hold placements: sparse, a stale placement on
        # `sts-999999999` must not allocate a billion entries.
        self._free: list[int] = [self.capacity] * self.replicas
        self._used_beyond: dict[int, int] = {}

    @classmethod
    def build(cls, snapshot: ClusterSnapshot, reserved: Mapping[str, Mapping[str, int]]) -> State:
        state = cls(snapshot)
        for vpod in snapshot.vpods:
            state.add_vpod(vpod, reserved.get(vpod.key, {}))
        return state

    # -- vpods ---------------------------------------------------------------------------------

    def add_vpod(self, vpod: VPod, reserved: Mapping[str, int]) -> None:
        """Add (or replace) a vpod with its committed placements and its reservations."""
        if vpod.key in self.vpods:
            self.remove_vpod(vpod.key)
        self.vpods[vpod.key] = vpod
        self.placements[vpod.key] = {}
        self.pod_spread[vpod.key] = {}
        self.node_spread[vpod.key] = {}
        self.zone_spread[vpod.key] = {}
        effective = self.ordinal_map(vpod.placements)
        for name, vreplicas in reserved.items():
            ordinal = ordinal_of(self.statefulset_name, name)
            if ordinal is not None:
                effective[ordinal] = vreplicas
        for ordinal, vreplicas in effective.items():
            self.set_vreplicas(vpod.key, ordinal, vreplicas)

    def remove_vpod(self, key: str) -> None:
        for ordinal in list(self.placements.get(key, {})):
            self.set_vreplicas(key, ordinal, 0)
        for table in (self.vpods, self.placements, self.pod_spread, self.node_spread, self.zone_spread):
            table.pop(key, None)

    def ordinal_map(self, placements: tuple[Placement, ...] | list[Placement]) -> dict[int, int]:
        """Placements as ordinal -> vreplicas, ignoring pods that are not of this StatefulSet."""
        out: dict[int, int] = {}
        for p in placements:
            ordinal = ordinal_of(self.statefulset_name, p.pod_name)
            if ordinal is not None and p.vreplicas > 0:
                out[ordinal] = out.get(ordinal, 0) + p.vreplicas
        return out

    def set_vreplicas(self, key: str, ordinal: int, vreplicas: int) -> None:
        """Set how many vreplicas of `key` sit on pod `ordinal`, keeping every count current."""
        placed = self.placements[key]
        delta = vreplicas - placed.get(ordinal, 0)
        if delta == 0:
            return
        if ordinal < self.replicas:
            self._free[ordinal] -= delta
        else:
            bump(self._used_beyond, ordinal, delta)
        if vreplicas:
            placed[ordinal] = vreplicas
        else:
            del placed[ordinal]
        node = self.pod_node.get(ordinal)
        if node is None:
            return
        bump(self.pod_spread[key], ordinal, delta)
        bump(self.node_spread[key], node, delta)
        bump(self.zone_spread[key], self.pod_zone[ordinal], delta)

    # -- reading -------------------------------------------------------------------------------

    def free(self, ordinal: int) -> int:
        if ordinal < self.replicas:
            return self._free[ordinal]
        return self.capacity - self._used_beyond.get(ordinal, 0)

    def free_table(self, *, copy: bool = True) -> list[int]:
        """Free slots of the pods below the replicas (index = ordinal; negative when overcommitted)."""
        return list(self._free) if copy else self._free

    @property
    def last_ordinal(self) -> int:
        """The highest ordinal below the replicas that holds a vreplica (committed or reserved),
        -1 if none.

        Upstream (since 2023) counted every schedulable pod too, so in plugin mode the
        autoscaler, which never goes below `last_ordinal + 1`, could only shrink the set by
        annotating pods unschedulable: empty pods at the top stayed forever (eventing#6866).
        Placements on pods past the replicas are not counted either: those pods are gone and
        their vreplicas get re-placed, they must not bring the pods back.
        """
        for ordinal in range(self.replicas - 1, -1, -1):
            if self._free[ordinal] != self.capacity:
                return ordinal
        return -1

    def is_schedulable(self, ordinal: int) -> bool:
        return ordinal in self.pod_node

    def free_capacity(self) -> int:
        """Free slots on schedulable pods."""
        return sum(self.free(o) for o in self.schedulable)

    def used(self, ordinal: int) -> int:
        return self.capacity - self.free(ordinal)

    def placements_of(self, key: str) -> list[Placement]:
        """The effective placements of `key`, sorted by ordinal."""
        return [
            Placement(pod_name(self.statefulset_name, o), n) for o, n in sorted(self.placements[key].items())
        ]

    def pending(self, key: str) -> int:
        """Vreplicas of `key` not in its committed placements."""
        vpod = self.vpods[key]
        return max(0, vpod.vreplicas - sum(p.vreplicas for p in vpod.placements))

    def total_pending(self) -> int:
        return sum(self.pending(key) for key in self.vpods)

    def unplaced(self, key: str) -> int:
        """Vreplicas of `key` in neither its committed placements nor its reservation."""
        return max(0, self.vpods[key].vreplicas - sum(self.placements[key].values()))

    def total_unplaced(self) -> int:
        return sum(self.unplaced(key) for key in self.vpods)

    def total_expected(self) -> int:
        return sum(vpod.vreplicas for vpod in self.vpods.values())

    def to_json(self) -> dict[str, Any]:
        """The state as upstream logs it (pod spreads keyed by pod name), plus the free-capacity sum."""
        name = self.statefulset_name
        return {
            "statefulSetName": name,
            "capacity": self.capacity,
            "replicas": self.replicas,
            "freeCap": self.free_table(),
            "freeCapPastReplicas": {pod_name(name, o): self.free(o) for o in sorted(self._used_beyond)},
            "freeCapacity": self.free_capacity(),
            "schedulablePods": list(self.schedulable),
            "lastOrdinal": self.last_ordinal,
            "numZones": len(self.zones),
            "numNodes": len(self.nodes),
            "nodeToZoneMap": dict(sorted(self.node_zone.items())),
            "podSpread": {
                k: {pod_name(name, o): n for o, n in sorted(v.items())}
                for k, v in sorted(self.pod_spread.items())
            },
            "nodeSpread": {k: dict(sorted(v.items())) for k, v in sorted(self.node_spread.items())},
            "zoneSpread": {k: dict(sorted(v.items())) for k, v in sorted(self.zone_spread.items())},
            "pending": {k: self.pending(k) for k in sorted(self.vpods)},
        }


def bump(table: dict[Any, int], key: Any, delta: int) -> None:
    """Add `delta` to a count, dropping the entry when it reaches zero."""
    value = table.get(key, 0) + delta
    if value:
        table[key] = value
    else:
        del table[key]
