"""Policies from ConfigMaps in the seed's format, and their validation errors."""

from __future__ import annotations

import pytest

from scheduler_fixtures import SHIPPED_DESCHEDULER, SHIPPED_SCHEDULER
from streams_k8s.scheduler import (
    PluginSpec,
    PolicyError,
    ScorePlugin,
    default_registry,
    policy_from_configmap,
)


def test_shipped_configmaps_parse() -> None:
    policy = policy_from_configmap(SHIPPED_SCHEDULER, default_registry())
    assert policy.predicates == (
        PluginSpec("PodFitsResources"),
        PluginSpec("NoMaxResourceCount", {"NumPartitions": 100}),
    )
    assert [(p.name, p.weight, dict(p.args)) for p in policy.priorities] == [
        ("AvailabilityZonePriority", 10, {"MaxSkew": 2}),
        ("LowestOrdinalPriority", 2, {}),
        ("EvenPodSpread", 2, {"MaxSkew": 2}),
    ]
    desched = policy_from_configmap(SHIPPED_DESCHEDULER, default_registry())
    assert desched.predicates == ()
    assert desched.has_priority("RemoveWithHighestOrdinalPriority")


def test_plain_objects_and_lower_case_fields_are_accepted() -> None:
    data = {
        "predicates": [{"name": "PodFitsResources"}],
        "priorities": [{"name": "EvenPodSpread", "weight": 0}],
    }
    policy = policy_from_configmap(data, default_registry())
    assert policy.priorities[0].weight == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"priorities": "[]"}, "missing policy config map value at key predicates"),
        ({"predicates": "[]"}, "missing policy config map value at key priorities"),
        ({"predicates": "[{", "priorities": "[]"}, "predicates: invalid JSON"),
        ({"predicates": '{"Name": "x"}', "priorities": "[]"}, "expected a JSON list"),
        ({"predicates": '[{"Name": "Nope"}]', "priorities": "[]"}, "predicates[0]: unknown predicate 'Nope'"),
        (
            {"predicates": "[]", "priorities": '[{"Name": "PodFitsResources", "Weight": 1}]'},
            "unknown priority",
        ),
        (
            {"predicates": "[]", "priorities": '[{"Name": "LowestOrdinalPriority", "Weight": 11}]'},
            "outside 0..10",
        ),
        (
            {"predicates": "[]", "priorities": '[{"Name": "LowestOrdinalPriority", "Weight": -1}]'},
            "outside 0..10",
        ),
        ({"predicates": "[]", "priorities": '[{"Name": "LowestOrdinalPriority"}]'}, "missing Weight"),
        (
            {"predicates": '[{"Name": "EvenPodSpread", "Args": "{\\"Skew\\": 2}"}]', "priorities": "[]"},
            "unknown argument",
        ),
        (
            {"predicates": '[{"Name": "EvenPodSpread", "Args": "{bad"}]', "priorities": "[]"},
            "Args is not valid JSON",
        ),
        (
            {"predicates": '[{"Name": "EvenPodSpread", "Args": "[1]"}]', "priorities": "[]"},
            "Args must be a JSON object",
        ),
        (
            {"predicates": '[{"Name": "PodFitsResources", "Weight": 3}]', "priorities": "[]"},
            "unknown field 'Weight'",
        ),
        ({"predicates": "[{}]", "priorities": "[]"}, "missing Name"),
    ],
)
def test_invalid_policies_are_rejected_with_a_clear_error(data: dict[str, str], message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("(", r"\(")):
        policy_from_configmap(data, default_registry())


def test_deployments_can_register_their_own_plugins() -> None:
    class PreferOdd(ScorePlugin):
        def __init__(self, args: object) -> None:
            pass

        def score(self, view: object, ordinal: int) -> int:
            return ordinal % 2

    registry = default_registry()
    registry.register_score("PreferOdd", PreferOdd)
    policy = policy_from_configmap(
        {"predicates": "[]", "priorities": '[{"Name": "PreferOdd", "Weight": 1}]'}, registry
    )
    assert policy.has_priority("PreferOdd")
    with pytest.raises(PolicyError, match="unknown priority"):
        policy_from_configmap(
            {"predicates": "[]", "priorities": '[{"Name": "PreferOdd", "Weight": 1}]'}, default_registry()
        )
    with pytest.raises(ValueError, match="already registered"):
        registry.register_score("PreferOdd", PreferOdd)


def test_readme_example_configmap_with_even_spread_as_predicate() -> None:
    data = {
        "predicates": (
            '[{"Name": "PodFitsResources"},'
            ' {"Name": "NoMaxResourceCount", "Args": "{\\"NumPartitions\\": 100}"},'
            ' {"Name": "EvenPodSpread", "Args": "{\\"MaxSkew\\": 2}"}]'
        ),
        "priorities": (
            '[{"Name": "AvailabilityZonePriority", "Weight": 10, "Args": "{\\"MaxSkew\\": 2}"},'
            ' {"Name": "LowestOrdinalPriority", "Weight": 2}]'
        ),
    }
    policy = policy_from_configmap(data, default_registry())
    assert policy.has_predicate("EvenPodSpread")
    assert policy.to_json()["predicates"][2] == {"name": "EvenPodSpread", "args": {"MaxSkew": 2}}
