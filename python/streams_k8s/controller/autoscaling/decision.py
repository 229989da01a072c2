"""The autoscaler's decision: the widths of every parallel region of a job at once, DS2-style.

One pass over the logical graph in topological order: the sources' target rate (what they
submitted plus what their backlog grew by) flows through each operator's selectivity, giving each
operator the input rate it must take; an operator needs ``ceil(input / (true rate x target
utilisation))`` instances, and a region is as wide as its neediest operator (each in a PE of its
own per channel), within its bounds. A region changes only when its utilisation at the target rate
leaves the band: above ``high`` it grows at once to the needed width; under ``low`` it shrinks to
it only after staying under for ``scale_down_delay``. After a change (active mode) nothing is
decided for ``stabilisation`` seconds, and the first window after that checks that the change
delivered what it promised (the sources' rate it was sized for); every decision that changes or
recommends something, and every check, is kept in a short history.

Pure: `decide(topology, widths, window, settings, state) -> Decision`, the caller applies the
widths (through the ParallelRegion's ``/scale``) or writes the recommendation, and keeps
``Decision.state`` for the next call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from streams_k8s.controller.autoscaling.estimates import RateEstimate, Topology, estimate
from streams_k8s.controller.autoscaling.observations import Window
from streams_k8s.controller.autoscaling.settings import AutoscalerSettings

HISTORY = 10  # decisions kept in status


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    at: float
    widths: Mapping[str, int]  # after the decision
    action: str  # "scaled", "recommended", "delivered", "not delivered"
    reason: str


@dataclass(frozen=True, slots=True)
class AutoscalerState:
    changed_at: float | None = None  # when widths last changed (active mode)
    promised: float = 0.0  # sources' tuples/s the last change was sized for
    checked: bool = True  # the last change's delivery was checked
    low_since: Mapping[str, float] = field(default_factory=dict)  # region -> under the band since
    history: tuple[HistoryEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    widths: Mapping[str, int]  # what every region should have
    changed: bool
    reasons: tuple[str, ...]
    state: AutoscalerState
    estimates: Mapping[str, RateEstimate] = field(default_factory=dict)


def _required_inputs(topology: Topology, rates: Mapping[str, RateEstimate]) -> dict[str, float]:
    """Tuples/s each operator must take for the sources to run at their target."""
    out: dict[str, float] = {}
    need: dict[str, float] = {}
    for op in topology:
        if not op.inputs:
            out[op.name] = rates[op.name].target
            continue
        need[op.name] = sum(out.get(upstream, 0.0) for upstream in op.inputs)
        out[op.name] = need[op.name] * rates[op.name].selectivity
    return need


@dataclass(frozen=True, slots=True, order=True)
class RegionNeed:
    needed: int  # width
    utilisation: float  # at the target rate with today's width
    why: str = field(compare=False)
    known: bool = field(default=True, compare=False)  # every operator's true rate estimated


def _region_needs(
    topology: Topology,
    widths: Mapping[str, int],
    rates: Mapping[str, RateEstimate],
    target_utilisation: float,
) -> dict[str, RegionNeed]:
    """What each region needs: the neediest of its operators."""
    need = _required_inputs(topology, rates)
    found: dict[str, RegionNeed] = {}
    for op in topology:
        if op.region is None or op.region not in widths:
            continue
        width, rate = widths[op.region], rates[op.name].true_rate
        wanted = need.get(op.name, 0.0)
        if rate is None or rate <= 0:
            needed, utilisation = width, target_utilisation
            why = f"{op.name}: true rate unknown (processed {rates[op.name].observed:.0f}/s), width kept"
        else:
            needed = max(1, math.ceil(wanted / (rate * target_utilisation) - 1e-9))
            utilisation = wanted / (width * rate)
            why = (
                f"{op.name}: {wanted:.0f}/s at {rate:.0f}/s per channel ({rates[op.name].how}) "
                f"needs {needed} at {target_utilisation:.0%}"
            )
        candidate = RegionNeed(needed, utilisation, why, rate is not None and rate > 0)
        kept = found.get(op.region)
        if kept is None or candidate > kept:
            found[op.region] = replace(candidate, known=candidate.known and (kept is None or kept.known))
        elif not candidate.known:
            found[op.region] = replace(kept, known=False, why=f"{kept.why}; {why}")
    return found


def _check_delivery(
    state: AutoscalerState, window: Window, submitted: float, target: float, tolerance: float
) -> AutoscalerState:
    """The first window after a change's stabilisation: did the sources run at what it promised
    (or at their target, if that fell since)?"""
    if state.checked or state.changed_at is None:
        return state
    promised = min(state.promised, target)
    ok = submitted >= promised * (1 - tolerance)
    entry = HistoryEntry(
        window.end,
        state.history[-1].widths if state.history else {},
        "delivered" if ok else "not delivered",
        f"sources at {submitted:.0f}/s of the {promised:.0f}/s the change was sized for",
    )
    return replace(state, checked=True, history=(*state.history, entry)[-HISTORY:])


def _region_step(
    region: str,
    current: int,
    need: RegionNeed,
    settings: AutoscalerSettings,
    low_since: dict[str, float],
    start: float,
    now: float,
) -> tuple[int, str]:
    """One region's width after the window from `start` to `now`, and why (empty: nothing to
    say); `low_since` is updated (since when the region has been under the band: the start of the
    first window it was under all along)."""
    needed, utilisation, why = need.needed, need.utilisation, need.why
    bounds = settings.bounds(region)
    needed = min(max(needed, bounds.min), bounds.max)
    at = f"utilisation {utilisation:.0%}"
    if utilisation > settings.high or current < bounds.min:
        low_since.pop(region, None)
        if needed > current:
            return needed, f"{region} {current} -> {needed}: {at} over {settings.high:.0%}; {why}"
        return current, f"{region} stays at {current} (its maximum): {at}; {why}"
    if utilisation < settings.low or current > bounds.max:
        since = low_since.setdefault(region, start)
        if needed >= current:
            return current, ""
        if now - since >= settings.scale_down_delay or current > bounds.max:
            low_since.pop(region)
            return (
                needed,
                f"{region} {current} -> {needed}: {at} under {settings.low:.0%} since {since:.0f}s; {why}",
            )
        due = since + settings.scale_down_delay
        return (
            current,
            f"{region} {current} -> {needed} at {due:.0f}s if it stays under {settings.low:.0%} ({at})",
        )
    low_since.pop(region, None)
    return current, "" if need.known else why  # an unknown rate is worth saying


def decide(
    topology: Topology,
    widths: Mapping[str, int],
    window: Window,
    settings: AutoscalerSettings,
    state: AutoscalerState,
) -> Decision:
    """The widths every region should have after `window` (see the module docstring)."""
    if state.changed_at is not None and window.start < state.changed_at + settings.stabilisation:
        until = state.changed_at + settings.stabilisation
        return Decision(
            dict(widths),
            False,
            (f"stabilising after the change at {state.changed_at:.0f}s until {until:.0f}s",),
            state,
        )
    rates = estimate(topology, window)
    sources = [rates[op.name] for op in topology if not op.inputs]
    target = sum(r.target for r in sources)
    submitted = sum(r.observed for r in sources)
    state = _check_delivery(state, window, submitted, target, settings.delivery_tolerance)
    needs = _region_needs(topology, widths, rates, settings.target_utilisation)
    new, reasons, low_since = dict(widths), [f"sources' target {target:.0f}/s"], dict(state.low_since)
    for region, need in needs.items():
        width, reason = _region_step(
            region, widths[region], need, settings, low_since, window.start, window.end
        )
        new[region] = width
        if reason:
            reasons.append(reason)
    state = replace(state, low_since=low_since)
    changed = new != dict(widths)
    last = state.history[-1].widths if state.history else None
    if changed and (settings.mode == "Active" or new != last):
        active = settings.mode == "Active"
        entry = HistoryEntry(window.end, new, "scaled" if active else "recommended", "; ".join(reasons[1:]))
        state = replace(state, history=(*state.history, entry)[-HISTORY:])
        if active:
            state = replace(state, changed_at=window.end, promised=target, checked=False)
    return Decision(new, changed, tuple(reasons), state, rates)
