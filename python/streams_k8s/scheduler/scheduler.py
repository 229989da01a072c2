"""Places a vpod's vreplicas on the StatefulSet's pods (plugin-era Knative semantics).

Usage, for an adapter: `state = scheduler.state(snapshot)` once per cluster snapshot, then
`scheduler.schedule(state, key)` for each vpod that needs it. Each result's placements are
what the vpod's status should say; until the status says so they stay *reserved* here, so
later passes (and the autoscaler) count them and never hand the same slot out twice.

Policies:
- MAXFILLUP fills the vpod's existing pods, then the lowest schedulable ordinals, and
  scales down by taking vreplicas off its highest ordinals.
- A plugin policy re-places all the vpod's vreplicas one at a time (the rebalance): filter
  the schedulable pods that have a free slot, score the survivors, take the best; ties go
  to the **lowest ordinal**. (Upstream enforced capacity only through PodFitsResources; here
  no policy can overfill a pod.) Scale-down goes through the descheduler policy one
  vreplica at a time over the pods still holding the vpod; ties go to the **highest ordinal**.

When not every vreplica finds a slot the result carries `NotEnoughReplicas` (requeue after
5 s and let the autoscaler add pods): MAXFILLUP returns the partial placements, the plugin
policy throws its attempt away and returns the placements the vpod already had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streams_k8s._native import place_vreplicas
from streams_k8s.scheduler.framework import PluginError, PluginRegistry, SpreadView
from streams_k8s.scheduler.model import ClusterSnapshot, Placement, VPod, pod_name
from streams_k8s.scheduler.plugins import default_registry
from streams_k8s.scheduler.policy import MAXFILLUP, CompiledPolicy, Policy, compile_policy
from streams_k8s.scheduler.state import Reservations, State

REQUEUE_AFTER_SECONDS = 5.0


class NotEnoughReplicas(Exception):
    """Some vreplicas found no pod; the caller keeps the placements it got and retries later."""

    def __init__(self, namespace: str, statefulset: str, left: int, reason: str | None = None) -> None:
        self.left = left
        self.requeue_after = REQUEUE_AFTER_SECONDS
        message = (
            f"insufficient running pods replicas for StatefulSet {namespace}/{statefulset} "
            f"to schedule resource replicas (left: {left}): retry after {REQUEUE_AFTER_SECONDS:g}s"
        )
        if reason:
            message += f" ({reason})"
        super().__init__(message)


@dataclass(frozen=True)
class ScheduleResult:
    """Placements for the vpod's status (None: leave the status alone) and the error, if any."""

    placements: tuple[Placement, ...] | None
    error: NotEnoughReplicas | None = None


class Scheduler:
    """Schedules vpods of one StatefulSet and keeps their reservations."""

    def __init__(
        self,
        policy: Policy | str,
        descheduler_policy: Policy | None = None,
        registry: PluginRegistry | None = None,
        *,
        native: bool = True,
    ) -> None:
        if isinstance(policy, str) and policy != MAXFILLUP:
            raise ValueError(
                f"unknown scheduler policy type {policy!r} (expected {MAXFILLUP} or a plugin policy)"
            )
        registry = registry or default_registry()
        self.policy = policy
        self.descheduler_policy = descheduler_policy
        self._compiled = compile_policy(policy, registry) if isinstance(policy, Policy) else None
        self._descheduler = compile_policy(descheduler_policy, registry) if descheduler_policy else None
        self.reserved: Reservations = {}
        # The plugin policy's placement loop runs natively when every plugin has a native twin.
        self._native = self._compiled.native() if native and self._compiled else None

    # -- reservations --------------------------------------------------------------------------

    def state(self, snapshot: ClusterSnapshot) -> State:
        """The state of `snapshot` with this scheduler's reservations laid over it."""
        self.prune_reservations(snapshot)
        return State.build(snapshot, self.reserved)

    def prune_reservations(self, snapshot: ClusterSnapshot) -> None:
        """Forget reservations the vpods' status already shows, and those of vpods that are gone.

        Upstream merged each pass into the old reservation and kept keys of deleted vpods
        until their next pass, which leaked capacity (eventing-kafka#1208).
        """
        listed = {vpod.key: vpod for vpod in snapshot.vpods}
        for key in list(self.reserved):
            self.prune_reservation(key, listed.get(key))

    def prune_reservation(self, key: str, vpod: VPod | None) -> None:
        """Bring one vpod's reservation up to date with its committed placements (None: it is gone)."""
        reserved = self.reserved.get(key)
        if reserved is None:
            return
        if vpod is None:
            del self.reserved[key]
            return
        committed = _by_name(vpod.placements)
        entries = {name: n for name, n in reserved.items() if committed.get(name, 0) != n}
        if entries:
            self.reserved[key] = entries
        else:
            del self.reserved[key]

    def forget_reservation(self, key: str, pod: str) -> None:
        """Drop what is reserved for vpod `key` on `pod` (its vreplicas there were evicted)."""
        reserved = self.reserved.get(key)
        if reserved is not None:
            reserved.pop(pod, None)
            if not reserved:
                del self.reserved[key]

    def _reserve(self, state: State, key: str) -> None:
        """Record the vpod's effective placement, with zeros for committed pods it has left."""
        vpod = state.vpods[key]
        committed = _by_name(vpod.placements)
        effective = {pod_name(state.statefulset_name, o): n for o, n in state.placements[key].items()}
        entries = {name: n for name, n in effective.items() if committed.get(name, 0) != n}
        entries.update({name: 0 for name in committed if name not in effective})
        if entries:
            self.reserved[key] = entries
        else:
            self.reserved.pop(key, None)

    # -- scheduling ----------------------------------------------------------------------------

    def schedule(self, state: State, key: str) -> ScheduleResult:
        """Schedule vpod `key` of `state`, updating `state` and the reservations."""
        if key not in state.vpods:
            raise KeyError(f"vpod {key!r} is not in the cluster snapshot")
        view = SpreadView(state, key)
        placed = self._normalise(view)
        had_placements = bool(placed)
        want = state.vpods[key].vreplicas
        total = sum(placed.values())
        left = 0
        reason = None
        if total == want:
            pass
        elif self._compiled is None:
            if total > want:
                _remove_from_highest(view, placed, total - want)
            else:
                left = _fill_up(view, placed, want - total)
        elif total > want and self._descheduler is not None:
            self._deschedule(view, placed, total - want, self._descheduler)
        else:
            left, reason = self._rebalance(view, placed, want, self._compiled)
        self._reserve(state, key)
        placements = state.placements_of(key)
        error = NotEnoughReplicas(state.namespace, state.statefulset_name, left, reason) if left else None
        if not placements and not had_placements and (self._compiled is not None or total == want):
            return ScheduleResult(None, error)
        return ScheduleResult(tuple(placements), error)

    def _normalise(self, view: SpreadView) -> dict[int, int]:
        """The vpod's placements minus those on unschedulable pods and its share of any overcommit."""
        state = view.state
        placed = {}
        for ordinal, vreplicas in sorted(state.placements[view.key].items()):
            if not state.is_schedulable(ordinal):
                view.set_vreplicas(ordinal, 0)
                continue
            over = -state.free(ordinal)
            if over > 0:
                vreplicas -= min(vreplicas, over)
                view.set_vreplicas(ordinal, vreplicas)
            if vreplicas > 0:
                placed[ordinal] = vreplicas
        return placed

    def _rebalance(
        self, view: SpreadView, placed: dict[int, int], want: int, policy: CompiledPolicy
    ) -> tuple[int, str | None]:
        """Re-place all `want` vreplicas from scratch; on a shortfall restore `placed`."""
        for ordinal in placed:
            view.set_vreplicas(ordinal, 0)
        rebalanced: dict[int, int]
        if view.state.replicas <= 0:
            rebalanced, left, reason = {}, want, None
        elif self._native is not None:
            rebalanced, left, reason = _place_natively(view, want, *self._native)
        else:
            rebalanced, left, reason = _place(view, want, policy)
        if left:
            for ordinal in rebalanced:
                view.set_vreplicas(ordinal, 0)
            for ordinal, vreplicas in placed.items():
                view.set_vreplicas(ordinal, vreplicas)
        return left, reason

    def _deschedule(
        self, view: SpreadView, placed: dict[int, int], excess: int, policy: CompiledPolicy
    ) -> None:
        """Take `excess` vreplicas off, one at a time, from the pods the vpod still occupies."""
        for _ in range(excess):
            candidates = _feasible(view, [o for o in sorted(placed) if placed[o] > 0], policy)
            if not candidates:
                return
            try:
                chosen = (
                    candidates[0]
                    if len(candidates) == 1
                    else _best(view, candidates, policy, prefer_high=True)
                )
            except PluginError:
                return
            placed[chosen] -= 1
            view.set_vreplicas(chosen, placed[chosen])

    def schedule_snapshot(self, snapshot: ClusterSnapshot, key: str) -> tuple[ScheduleResult, State]:
        """Schedule one vpod of a fresh snapshot; returns the result and the resulting state."""
        state = self.state(snapshot)
        return self.schedule(state, key), state


def _place(view: SpreadView, want: int, policy: CompiledPolicy) -> tuple[dict[int, int], int, str | None]:
    """Place `want` vreplicas one at a time with the Python plugins: (placed, left, error)."""
    state = view.state
    placed: dict[int, int] = {}
    for done in range(want):
        # A full pod never takes another vreplica, whatever the policy's predicates say.
        feasible = _feasible(view, [o for o in state.schedulable if state.free(o) > 0], policy)
        if not feasible:
            return placed, want - done, None
        try:
            chosen = _best(view, feasible, policy, prefer_high=False)
        except PluginError as err:
            return placed, want - done, str(err)
        placed[chosen] = placed.get(chosen, 0) + 1
        view.set_vreplicas(chosen, placed[chosen])
    return placed, 0, None


def _place_natively(
    view: SpreadView, want: int, filters: list[tuple[str, int]], priorities: list[tuple[str, int]]
) -> tuple[dict[int, int], int, None]:
    """The same as `_place`, for built-in plugins only, in the native loop."""
    state = view.state
    placements, left = place_vreplicas(
        state.schedulable,
        state.free_table(copy=False),
        state.schedulable_node_index,
        state.schedulable_zone_index,
        len(state.nodes),
        len(state.zones),
        want,
        filters,
        priorities,
    )
    for ordinal, vreplicas in placements:
        view.set_vreplicas(ordinal, vreplicas)
    return dict(placements), left, None


def _feasible(view: SpreadView, ordinals: list[int], policy: CompiledPolicy) -> list[int]:
    filters = policy.filters
    if not filters:
        return list(ordinals)
    return [o for o in ordinals if all(f.filter(view, o) is None for f in filters)]


def _best(view: SpreadView, candidates: list[int], policy: CompiledPolicy, *, prefer_high: bool) -> int:
    """The candidate with the highest weighted score; ties go to the lowest (or highest) ordinal."""
    scores = policy.scores
    if not scores:
        return max(candidates) if prefer_high else min(candidates)
    best_ordinal, best_score = -1, 0
    for ordinal in candidates:
        total = sum(weight * plugin.score(view, ordinal) for plugin, weight in scores)
        if best_ordinal < 0 or total > best_score or (prefer_high and total == best_score):
            best_ordinal, best_score = ordinal, total
    return best_ordinal


def _fill_up(view: SpreadView, placed: dict[int, int], missing: int) -> int:
    """MAXFILLUP: fill the vpod's own pods, then the lowest schedulable ordinals; returns what is left."""
    state = view.state
    for ordinal in [*sorted(placed), *(o for o in state.schedulable if o not in placed)]:
        if not missing:
            break
        take = min(state.free(ordinal), missing)
        if take > 0:
            placed[ordinal] = placed.get(ordinal, 0) + take
            view.set_vreplicas(ordinal, placed[ordinal])
            missing -= take
    return missing


def _remove_from_highest(view: SpreadView, placed: dict[int, int], excess: int) -> None:
    for ordinal in sorted(placed, reverse=True):
        take = min(placed[ordinal], excess)
        placed[ordinal] -= take
        view.set_vreplicas(ordinal, placed[ordinal])
        excess -= take
        if not excess:
            return


def _by_name(placements: tuple[Placement, ...] | list[Placement]) -> Mapping[str, int]:
    out: dict[str, int] = {}
    for p in placements:
        out[p.pod_name] = out.get(p.pod_name, 0) + p.vreplicas
    return {name: n for name, n in out.items() if n}
