"""Scheduling policies and their configuration from ConfigMaps.

The seed's ConfigMap format (shipped by eventing-kafka and eventing-kafka-broker):

    data:
      predicates: |
        [{"Name": "PodFitsResources"}, {"Name": "NoMaxResourceCount", "Args": "{\\"NumPartitions\\": 100}"}]
      priorities: |
        [{"Name": "AvailabilityZonePriority", "Weight": 10, "Args": "{\\"MaxSkew\\": 2}"}]

Field names match case-insensitively and `Args` may be a JSON string (the seed's form) or a
plain object. Unlike upstream, everything is checked when the policy is loaded: an unknown
plugin, a weight outside 0..10, bad arguments or a missing key is an error, never a silently
skipped plugin or an empty policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.scheduler.framework import FilterPlugin, PluginRegistry, PolicyError, ScorePlugin

MAXFILLUP = "MAXFILLUP"
MIN_WEIGHT = 0
MAX_WEIGHT = 10


@dataclass(frozen=True)
class PluginSpec:
    """One configured plugin: its registered name, arguments and (for priorities) weight."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    weight: int = 0

    def to_json(self, *, with_weight: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.args:
            out["args"] = dict(self.args)
        if with_weight:
            out["weight"] = self.weight
        return out


@dataclass(frozen=True)
class Policy:
    """A plugin policy: predicates (filters, in order) and weighted priorities (scores)."""

    predicates: tuple[PluginSpec, ...] = ()
    priorities: tuple[PluginSpec, ...] = ()

    def has_priority(self, name: str) -> bool:
        return any(p.name == name for p in self.priorities)

    def has_predicate(self, name: str) -> bool:
        return any(p.name == name for p in self.predicates)

    def to_json(self) -> dict[str, Any]:
        return {
            "predicates": [p.to_json(with_weight=False) for p in self.predicates],
            "priorities": [p.to_json(with_weight=True) for p in self.priorities],
        }


@dataclass(frozen=True)
class CompiledPolicy:
    """A policy with its plugins instantiated."""

    filters: tuple[FilterPlugin, ...]
    scores: tuple[tuple[ScorePlugin, int], ...]

    def native(self) -> tuple[list[tuple[str, int]], list[tuple[str, int]]] | None:
        """(filters, (priority, weight)) for the native placement loop; None when a plugin has
        no native implementation (a deployment's own plugins run in Python)."""
        filters = [f.native() for f in self.filters]
        scores = [(s.native(), weight) for s, weight in self.scores]
        if any(f is None for f in filters) or any(s is None for s, _ in scores):
            return None
        return [f for f in filters if f], [(s[0], weight) for s, weight in scores if s]


def compile_policy(policy: Policy, registry: PluginRegistry) -> CompiledPolicy:
    """Instantiate every plugin of `policy`; raises PolicyError naming the first bad entry."""
    filters = []
    for i, spec in enumerate(policy.predicates):
        factory = registry.filters.get(spec.name)
        if factory is None:
            raise PolicyError(
                f"predicates[{i}]: unknown predicate {spec.name!r} (known: {_known(registry.filters)})"
            )
        filters.append(_instantiate(f"predicates[{i}]", spec, factory))
    scores = []
    for i, spec in enumerate(policy.priorities):
        score_factory = registry.scores.get(spec.name)
        if score_factory is None:
            raise PolicyError(
                f"priorities[{i}]: unknown priority {spec.name!r} (known: {_known(registry.scores)})"
            )
        if not MIN_WEIGHT <= spec.weight <= MAX_WEIGHT:
            raise PolicyError(
                f"priorities[{i}] {spec.name}: weight {spec.weight} is outside {MIN_WEIGHT}..{MAX_WEIGHT}"
            )
        scores.append((_instantiate(f"priorities[{i}]", spec, score_factory), spec.weight))
    return CompiledPolicy(tuple(filters), tuple(scores))


def _instantiate(where: str, spec: PluginSpec, factory: Any) -> Any:
    try:
        return factory(spec.args)
    except PolicyError as err:
        raise PolicyError(f"{where}: {err}") from None


def _known(table: Mapping[str, Any]) -> str:
    return ", ".join(sorted(table))


def policy_from_configmap(data: Mapping[str, Any], registry: PluginRegistry) -> Policy:
    """A policy from ConfigMap `data` (both keys required), validated against `registry`."""
    lists = {}
    for key in ("predicates", "priorities"):
        if key not in data:
            raise PolicyError(f"missing policy config map value at key {key}")
        lists[key] = data[key]
    policy = Policy(
        predicates=_parse_list("predicates", lists["predicates"], with_weight=False),
        priorities=_parse_list("priorities", lists["priorities"], with_weight=True),
    )
    compile_policy(policy, registry)
    return policy


def _parse_list(key: str, raw: Any, *, with_weight: bool) -> tuple[PluginSpec, ...]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else []
        except json.JSONDecodeError as err:
            raise PolicyError(f"{key}: invalid JSON: {err}") from None
    if not isinstance(raw, list):
        raise PolicyError(f"{key}: expected a JSON list of plugins, got {type(raw).__name__}")
    return tuple(_parse_entry(f"{key}[{i}]", entry, with_weight=with_weight) for i, entry in enumerate(raw))


def _parse_entry(where: str, entry: Any, *, with_weight: bool) -> PluginSpec:
    if not isinstance(entry, dict):
        raise PolicyError(f"{where}: expected an object with Name, Args{', Weight' if with_weight else ''}")
    allowed = {"name", "args", "weight"} if with_weight else {"name", "args"}
    fields: dict[str, Any] = {}
    for given, value in entry.items():
        lowered = str(given).lower()
        if lowered not in allowed:
            raise PolicyError(f"{where}: unknown field {given!r}")
        fields[lowered] = value
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise PolicyError(f"{where}: missing Name")
    args = fields.get("args")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as err:
            raise PolicyError(f"{where} {name}: Args is not valid JSON: {err}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise PolicyError(f"{where} {name}: Args must be a JSON object (or a string holding one)")
    weight = 0
    if with_weight:
        weight = fields.get("weight")  # type: ignore[assignment]
        if weight is None:
            raise PolicyError(f"{where} {name}: missing Weight")
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise PolicyError(f"{where} {name}: Weight must be an integer, got {weight!r}")
    return PluginSpec(name=name, args=args, weight=weight)
