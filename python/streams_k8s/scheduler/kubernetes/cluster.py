"""The scheduler's `State` of one StatefulSet, kept current from watch events.

Vpod changes are applied in place (the vpod's placements and reservation are swapped in the
live state, O(its placements)). Changes to the topology (the StatefulSet's replicas, its
pods' nodes or marks, the nodes' zones, cordons and taints) are rarer and rebuild the state
from the cached objects on the next read. Pod updates that change nothing the scheduler
reads (phase, conditions, addresses) leave the state alone.
"""

from __future__ import annotations

from streams_k8s.k8s.objects import Object, meta
from streams_k8s.scheduler.kubernetes.objects import statefulset_replicas
from streams_k8s.scheduler.model import ClusterSnapshot, Node, Pod, VPod, ordinal_of
from streams_k8s.scheduler.scheduler import Scheduler
from streams_k8s.scheduler.state import State


class StatefulSetMissing(Exception):
    """The StatefulSet does not exist (yet): nothing can be scheduled or scaled."""


class ClusterCache:
    def __init__(self, scheduler: Scheduler, namespace: str, statefulset: str, capacity: int) -> None:
        self.scheduler = scheduler
        self.namespace = namespace
        self.statefulset_name = statefulset
        self.capacity = capacity
        self.replicas: int | None = None  # None while the StatefulSet does not exist
        self._generation = 0
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}
        self.vpods: dict[str, VPod] = {}
        self._state: State | None = None
        self.rebuilds = 0

    # -- topology: any change rebuilds the state on the next read ------------------------------

    def set_statefulset(self, obj: Object | None) -> bool:
        """Take the StatefulSet's replicas (None: deleted); an older generation than one already
        seen is ignored, so a late watch event cannot undo a scale this process just wrote."""
        if obj is None:
            replicas = None
            self._generation = 0
        else:
            generation = meta(obj).get("generation")
            if isinstance(generation, int):
                if generation < self._generation:
                    return False
                self._generation = generation
            replicas = statefulset_replicas(obj)
        if replicas == self.replicas:
            return False
        self.replicas = replicas
        self._state = None
        return True

    def set_node(self, name: str, node: Node | None) -> bool:
        return self._set(self.nodes, name, node)

    def set_pod(self, name: str, pod: Pod | None) -> bool:
        if ordinal_of(self.statefulset_name, name) is None:
            return False  # not a pod of our StatefulSet
        return self._set(self.pods, name, pod)

    def _set(self, table: dict[str, Node] | dict[str, Pod], name: str, value: Node | Pod | None) -> bool:
        if table.get(name) == value:
            return False
        if value is None:
            del table[name]
        else:
            table[name] = value  # type: ignore[assignment]
        self._state = None
        return True

    # -- vpods: applied in place ---------------------------------------------------------------

    def set_vpod(self, key: str, vpod: VPod | None) -> None:
        self.scheduler.prune_reservation(key, vpod)
        if vpod is None:
            self.vpods.pop(key, None)
            if self._state is not None:
                self._state.remove_vpod(key)
            return
        self.vpods[key] = vpod
        if self._state is not None:
            self._state.add_vpod(vpod, self.scheduler.reserved.get(key, {}))

    def forget_reservation(self, key: str, pod: str) -> None:
        """The vpod's vreplicas on `pod` were evicted: stop reserving them there."""
        self.scheduler.forget_reservation(key, pod)
        vpod = self.vpods.get(key)
        if vpod is not None and self._state is not None:
            self._state.add_vpod(vpod, self.scheduler.reserved.get(key, {}))

    # -- reading -------------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        if self.replicas is None:
            raise StatefulSetMissing(f"StatefulSet {self.namespace}/{self.statefulset_name} not found")
        return ClusterSnapshot(
            self.statefulset_name,
            self.replicas,
            self.capacity,
            tuple(self.nodes.values()),
            tuple(self.pods.values()),
            tuple(self.vpods.values()),
            self.namespace,
        )

    def state(self) -> State:
        """The live state (rebuilt first if the topology changed); raises `StatefulSetMissing`."""
        if self._state is None:
            self._state = self.scheduler.state(self.snapshot())
            self.rebuilds += 1
        return self._state

    def needing_schedule(self) -> list[str]:
        """Vpods to schedule again after a topology change: those with vreplicas on pods that
        will not run them (pods on a cordoned, unreachable or unknown node, pods marked
        unschedulable, pods past the replicas) and those still short of vreplicas.

        Pods that are only Pending or being recreated are not counted as lost: the
        StatefulSet brings them back under the same name and their placements stay valid.
        """
        state = self.state()
        lost = state.stranded | set(state.marked)
        out = []
        for key, placed in state.placements.items():
            if sum(placed.values()) < state.vpods[key].vreplicas or any(
                o in lost or o >= state.replicas for o in placed
            ):
                out.append(key)
        return sorted(out)
