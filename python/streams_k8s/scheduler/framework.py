"""The plugin framework: what filter and score plugins see, and the registry they live in.

A plugin is built from its parsed arguments by a factory registered under its name; a
deployment can register its own next to the built-in ones (`default_registry()`).

Scores are exact signed integers, higher is better, summed as `Σ weight·score`. Upstream
scored `MaxUint64 - penalty` and summed in wrapping uint64 arithmetic, which inverted the
descheduler's choice whenever an ordinal term pushed a sum past 2^64; exact arithmetic with
`-penalty` orders pods the same way wherever upstream did not wrap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from streams_k8s.scheduler.state import State, bump


class PolicyError(ValueError):
    """A policy that cannot be used: unknown plugin, weight out of range, bad arguments."""


class PluginError(RuntimeError):
    """A score plugin could not score a pod; the scheduling round stops there."""


class SpreadView:
    """One vpod's spread inside a State, with the aggregates the spread plugins need.

    All changes to the vpod's placements during a pass go through `set_vreplicas`, which keeps
    the aggregates current, so plugins answer in O(distinct spread values) per pod instead of
    O(pods).
    """

    def __init__(self, state: State, key: str) -> None:
        self.state = state
        self.key = key
        self.pod_spread = state.pod_spread[key]
        self.node_spread = state.node_spread[key]
        self.zone_spread = state.zone_spread[key]
        self.memo: dict[tuple[Any, ...], int] = {}
        self._histogram: dict[int, int] | None = None

    def set_vreplicas(self, ordinal: int, vreplicas: int) -> None:
        counted_before = self._counted(ordinal)
        value_before = self.pod_spread.get(ordinal, 0)
        self.state.set_vreplicas(self.key, ordinal, vreplicas)
        self.memo.clear()
        histogram = self._histogram
        if histogram is None or not self.state.is_schedulable(ordinal):
            return
        if counted_before:
            bump(histogram, value_before, -1)
        if self._counted(ordinal):
            bump(histogram, self.pod_spread.get(ordinal, 0), 1)

    def _counted(self, ordinal: int) -> bool:
        # An empty pod that other vpods have filled cannot take this vpod: leave it out of the skew.
        return self.pod_spread.get(ordinal, 0) > 0 or self.state.free(ordinal) > 0

    def spread_histogram(self) -> dict[int, int]:
        """vreplicas of this vpod -> number of schedulable pods holding that many (counted pods)."""
        if self._histogram is None:
            histogram: dict[int, int] = {}
            for ordinal in self.state.schedulable:
                if self._counted(ordinal):
                    bump(histogram, self.pod_spread.get(ordinal, 0), 1)
            self._histogram = histogram
        return self._histogram

    def other_pod_values(self, ordinal: int) -> list[tuple[int, int]]:
        """(spread value, pod count) over counted schedulable pods other than `ordinal`."""
        histogram = dict(self.spread_histogram())
        if self.state.is_schedulable(ordinal) and self._counted(ordinal):
            bump(histogram, self.pod_spread.get(ordinal, 0), -1)
        return sorted(histogram.items())


class FilterPlugin(ABC):
    """A predicate: may this vpod get one more vreplica on pod `ordinal`?"""

    @abstractmethod
    def filter(self, view: SpreadView, ordinal: int) -> str | None:
        """None when the pod fits, otherwise the reason it does not."""

    def native(self) -> tuple[str, int] | None:
        """(name, argument) when the native placement loop implements this plugin."""
        return None


class ScorePlugin(ABC):
    """A priority: how good is pod `ordinal` for this vpod (higher is better)."""

    @abstractmethod
    def score(self, view: SpreadView, ordinal: int) -> int:
        """The pod's score; raises PluginError when it cannot be scored."""

    def native(self) -> tuple[str, int] | None:
        """(name, argument) when the native placement loop implements this plugin."""
        return None


FilterFactory = Callable[[Mapping[str, Any]], FilterPlugin]
ScoreFactory = Callable[[Mapping[str, Any]], ScorePlugin]


class PluginRegistry:
    """Filter and score plugin factories by name."""

    def __init__(self) -> None:
        self.filters: dict[str, FilterFactory] = {}
        self.scores: dict[str, ScoreFactory] = {}

    def register_filter(self, name: str, factory: FilterFactory) -> None:
        if name in self.filters:
            raise ValueError(f"filter plugin {name!r} is already registered")
        self.filters[name] = factory

    def register_score(self, name: str, factory: ScoreFactory) -> None:
        if name in self.scores:
            raise ValueError(f"score plugin {name!r} is already registered")
        self.scores[name] = factory

    def copy(self) -> PluginRegistry:
        registry = PluginRegistry()
        registry.filters.update(self.filters)
        registry.scores.update(self.scores)
        return registry


def read_args(plugin: str, args: Mapping[str, Any], fields: Mapping[str, int]) -> dict[str, int]:
    """Validate a plugin's arguments: known fields only (names matched case-insensitively, as
    upstream's JSON decoding did), each a non-negative integer; absent fields take the default.
    """
    wanted = {name.lower(): name for name in fields}
    out = dict(fields)
    for given, value in args.items():
        name = wanted.get(given.lower())
        if name is None:
            known = ", ".join(fields) or "none"
            raise PolicyError(f"{plugin}: unknown argument {given!r} (known: {known})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PolicyError(f"{plugin}: argument {name} must be a non-negative integer, got {value!r}")
        out[name] = value
    return out
