"""Sizes the StatefulSet for its vpods and compacts vreplicas off its highest pods.

Scale-up runs on demand (the scheduler ran out of slots); scale-down only on the periodic
run, so a burst of new vpods never shrinks the set. When the periodic run leaves the size
alone, compaction moves vreplicas off the top pods whenever the rest can hold them: the
evictor callback removes those placements from the vpods' status (and may annotate the pod
unschedulable so they are not put back); normal scheduling re-places them on lower
ordinals, and a later periodic run scales down.

Only the leader acts. Everything here is pure: time comes in as `now` (seconds).

Fixes against upstream:
- MAXFILLUP sizing skips pods stranded on lost or cordoned nodes;
- plugin-mode sizing counts as pending only vreplicas without a slot: upstream subtracted
  only committed placements, so vreplicas placed but not yet in their vpod's status counted
  twice (in the last ordinal and as pending) and a run during a burst scaled too far;
- in plugin mode the set shrinks to the last pod holding vreplicas (see
  `State.last_ordinal`) instead of never going below the last schedulable pod;
- the top pods are counted from the StatefulSet's replicas, not from a last ordinal that
  included pods already gone (eventing#8388), and placements left on pods beyond the
  replicas are evicted so their vpods get re-placed;
- an emptied pod still annotated unschedulable below the size the vpods need is reported in
  `clear_annotations`, so it takes vreplicas again instead of idling in the middle of the
  set forever (eventing#6866).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from streams_k8s.scheduler.model import Placement, pod_name
from streams_k8s.scheduler.policy import Policy
from streams_k8s.scheduler.state import State

# evictor(pod name, vpod key, placement): take that placement out of the vpod's status.
Evictor = Callable[[str, str, Placement], None]


@dataclass(frozen=True)
class Eviction:
    vpod: str
    pod_name: str
    vreplicas: int


@dataclass(frozen=True)
class AutoscaleResult:
    replicas: int  # desired StatefulSet replicas
    evictions: tuple[Eviction, ...] = ()
    clear_annotations: tuple[str, ...] = ()  # pods whose unschedulable annotation should go


class Autoscaler:
    def __init__(
        self,
        policy: Policy | str,
        *,
        refresh_period: float,
        evictor: Evictor | None = None,
        now: float = 0.0,
    ) -> None:
        self.policy = policy
        self.refresh_period = refresh_period
        self.evictor = evictor
        self.is_leader = False
        # So that the very first periodic run may compact.
        self.last_compact_attempt = now - refresh_period - 60.0

    def promote(self) -> None:
        self.is_leader = True

    def demote(self) -> None:
        self.is_leader = False

    def scale_up_factor(self, state: State) -> int:
        """Scale-ups come in multiples of the zones (or nodes) the HA priorities spread over."""
        if not isinstance(self.policy, Policy):
            return 1
        if self.policy.has_priority("AvailabilityNodePriority"):
            return max(1, len(state.nodes))
        if self.policy.has_priority("AvailabilityZonePriority"):
            return max(1, len(state.zones))
        return 1

    def desired_replicas(self, state: State) -> int:
        """Replicas the vpods need: MAXFILLUP `ceil(expected / capacity)`; plugin mode the last
        ordinal + 1 plus enough pods for the vreplicas without a slot, rounded up to the factor.
        """
        if not isinstance(self.policy, Policy):
            return self._fill_up_replicas(state)
        replicas = state.last_ordinal + 1
        pending = state.total_unplaced()
        if pending > 0:
            per_pod = state.capacity
            if self.policy.has_predicate("EvenPodSpread"):
                # An even spread only fills partly used pods to their current level.
                partly_free = [f for f in state.free_table() if 0 < f < state.capacity]
                per_pod = min(partly_free, default=state.capacity)
            factor = self.scale_up_factor(state)
            replicas += math.ceil(math.ceil(pending / per_pod) / factor) * factor
        return replicas

    @staticmethod
    def _fill_up_replicas(state: State) -> int:
        """`ceil(expected / capacity)` pods, not counting pods stranded on lost or cordoned
        nodes: upstream counted them, so after a node loss the vreplicas they held found no
        room and the set never grew."""
        replicas = math.ceil(state.total_expected() / state.capacity)
        if replicas == 0:
            return 0
        for ordinal in sorted(state.stranded):
            if ordinal < replicas:  # each stranded pod below the size pushes it up by one
                replicas += 1
        return replicas

    def autoscale(self, state: State, *, attempt_scale_down: bool, now: float) -> AutoscaleResult | None:
        """One autoscaler run; None when this instance is not the leader."""
        if not self.is_leader:
            return None
        current = state.replicas
        needed = self.desired_replicas(state)
        replicas = needed if attempt_scale_down else max(needed, current)
        evictions: tuple[Eviction, ...] = ()
        if replicas == current and attempt_scale_down:
            evictions = self._compact(state, now)
        # Below the size the vpods need, an emptied pod must take vreplicas again; at or above
        # it, the mark stays so the pod is drained until the periodic run removes it.
        emptied = tuple(
            name
            for ordinal, name in sorted(state.marked.items())
            if ordinal < needed and state.used(ordinal) == 0
        )
        return AutoscaleResult(replicas, evictions, emptied)

    def _compact(self, state: State, now: float) -> tuple[Eviction, ...]:
        """Evict committed placements from the top pods (when the rest has room) and from pods
        past the replicas, through the evictor."""
        if now < self.last_compact_attempt + self.refresh_period:
            return ()
        factor = self.scale_up_factor(state)
        vacate = self._vacating(state, set(range(max(0, state.replicas - factor), state.replicas)), factor)
        evictions = [
            Eviction(key, pod_name(state.statefulset_name, ordinal), vreplicas)
            for key in sorted(state.vpods)
            for ordinal, vreplicas in sorted(
                state.ordinal_map(state.vpods[key].placements).items(), reverse=True
            )
            if ordinal >= state.replicas or ordinal in vacate
        ]
        if evictions:
            self.last_compact_attempt = now
        for eviction in evictions:
            if self.evictor is not None:
                self.evictor(
                    eviction.pod_name, eviction.vpod, Placement(eviction.pod_name, eviction.vreplicas)
                )
        return tuple(evictions)

    def _vacating(self, state: State, top: set[int], factor: int) -> set[int]:
        """The top pods, when the pods below them have room for everything they hold."""
        if len(state.schedulable) <= factor or state.replicas - 1 < 1:
            return set()
        if isinstance(self.policy, Policy) and state.replicas - factor < factor:
            return set()
        free_below = sum(state.free(o) for o in state.schedulable if o not in top)
        used_on_top = sum(state.used(o) for o in top)
        return top if 0 < used_on_top <= free_below else set()
