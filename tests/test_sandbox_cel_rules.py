"""CRD CEL rules (`sandbox.cel`): a rule that reads only some fields of ``self`` or ``oldSelf`` is
evaluated on those fields alone, and decides as on the whole value."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox import cel


def _schema(*rules: str) -> dict[str, Any]:
    return {
        "type": "object",
        "x-kubernetes-validations": [{"rule": r, "message": r} for r in rules],
        "properties": {"metadata": {"type": "object"}, "status": {"type": "object"}},
    }


def _failed(obj: Any, *rules: str, old: Any = None) -> list[str]:
    return [
        c["message"].removeprefix('Invalid value: "object": ') for c in cel.check(obj, old, _schema(*rules))
    ]


def _job(name: str) -> dict[str, Any]:
    """A root with a large status beside the name the rule reads."""
    return {"metadata": {"name": name}, "status": {"kept": list(range(2000)), "phase": "Upgrading"}}


def test_a_rule_on_some_fields_decides_as_on_the_whole_object() -> None:
    rule = "self.metadata.name.size() <= 5"
    assert _failed(_job("short"), rule) == []
    assert _failed(_job("much-too-long"), rule) == [rule]
    assert _failed(_job("a"), "has(self.status) && self.status.phase == 'Upgrading'") == []
    assert _failed({"metadata": {"name": "a"}}, "has(self.status)") == ["has(self.status)"]


def test_rules_that_read_self_whole_see_every_field() -> None:
    for rule in ("size(self) <= 1", "self.all(k, k != 'status')", "self == {'metadata': {'name': 'a'}}"):
        assert _failed(_job("a"), rule) == [rule]
    assert _failed(_job("a"), "self['status'].phase == 'Upgrading'") == []
    assert _failed(_job("a"), "self['status'].phase == 'Running'") == ["self['status'].phase == 'Running'"]


def test_transition_rules_read_the_old_fields_they_name() -> None:
    rule = "self.metadata.name == oldSelf.metadata.name"
    assert _failed(_job("a"), rule, old=_job("a") | {"status": {}}) == []
    assert _failed(_job("a"), rule, old=_job("b")) == [rule]
