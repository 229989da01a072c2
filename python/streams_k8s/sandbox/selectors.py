"""Label selectors (all operators) and field selectors, parsed from query strings."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from streams_k8s.sandbox.errors import bad_request
from streams_k8s.sandbox.resources import get_path

_TOKEN = re.compile(r"\s*(!=|==|=|!|,|\(|\)|[^\s!=,()]+)")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as in Kubernetes.
        return not present or labels[self.key] not in self.values


class LabelSelector:
    """A parsed `labelSelector` query: all requirements must hold."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        tokens = [t for t in _TOKEN.findall(text) if t]
        reqs: list[Requirement] = []
        i = 0

        def take() -> str:
            nonlocal i
            if i >= len(tokens):
                raise bad_request(f"unable to parse requirement: unexpected end of selector {text!r}")
            i += 1
            return str(tokens[i - 1])

        while i < len(tokens):
            tok = take()
            if tok == "!":
                reqs.append(Requirement(_key(take(), text), "!"))
            else:
                key = _key(tok, text)
                if i >= len(tokens) or tokens[i] == ",":
                    reqs.append(Requirement(key, "exists"))
                else:
                    op = take()
                    if op in ("=", "=="):
                        reqs.append(Requirement(key, "=", (_value(take(), text),)))
                    elif op == "!=":
                        reqs.append(Requirement(key, "!=", (_value(take(), text),)))
                    elif op in ("in", "notin"):
                        found = take()
                        if found != "(":
                            raise bad_request(f"unable to parse requirement: found '{found}' expected: '('")
                        values: list[str] = []
                        while True:
                            v = take()
                            if v == ")":
                                break
                            if v != ",":
                                values.append(_value(v, text))
                        reqs.append(Requirement(key, op, tuple(values)))
                    else:
                        raise bad_request(f"unable to parse requirement: unknown operator {op!r} in {text!r}")
            if i < len(tokens):
                if tokens[i] != ",":
                    raise bad_request(f"unable to parse requirement: expected ',' in {text!r}")
                i += 1
        return cls(reqs)


def _key(key: str, text: str) -> str:
    from streams_k8s.sandbox.admission import names  # the package imports this module

    if names.qualified_name(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in {text!r}")
    return key


def _value(value: str, text: str) -> str:
    from streams_k8s.sandbox.admission import names

    if names.label_value(value):
        raise bad_request(f"unable to parse requirement: invalid label value {value!r} in {text!r}")
    return value


def selector_from_spec(spec: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector (`matchLabels` + `matchExpressions`) as a LabelSelector."""
    spec = spec or {}
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (spec.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in spec.get("matchExpressions") or []:
        reqs.append(Requirement(expr["key"], ops[expr["operator"]], tuple(expr.get("values") or ())))
    return LabelSelector(reqs)


def selector_to_string(spec: Mapping[str, Any] | None) -> str:
    """The query-string form of a metav1.LabelSelector (what Scale.status.selector carries)."""
    parts = []
    for r in selector_from_spec(spec).requirements:
        if r.op == "=":
            parts.append(f"{r.key}={r.values[0]}")
        elif r.op in ("in", "notin"):
            parts.append(f"{r.key} {r.op} ({','.join(r.values)})")
        elif r.op == "exists":
            parts.append(r.key)
        else:
            parts.append(f"!{r.key}")
    return ",".join(parts)


FieldMatcher = Callable[[Mapping[str, Any]], bool]
# The built-in kinds served here for which kube-apiserver converts no field labels: they select
# on metadata.name and metadata.namespace only, and say so. Other kinds (Pods, Events, ..., custom
# resources) answer "field label not supported".
_WITHOUT_FIELD_CONVERSION = frozenset(
    {
        "ConfigMap",
        "Endpoints",
        "ServiceAccount",
        "StatefulSet",
        "Deployment",
        "Lease",
        "EndpointSlice",
        "NetworkPolicy",
        "CustomResourceDefinition",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    }
)


def parse_field_selector(
    text: str, supported: tuple[str, ...], kind: str, paths: Mapping[str, str] | None = None
) -> FieldMatcher:
    """A `fieldSelector` over metadata.name, metadata.namespace and the kind's extra fields;
    `paths` maps a selectable field to where it is in the stored object, when they differ."""
    checks: list[tuple[str, bool, str]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.match(r"^([^!=]+?)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path, op, value = m.group(1), m.group(2), m.group(3)
        if path not in ("metadata.name", "metadata.namespace", *supported):
            if kind in _WITHOUT_FIELD_CONVERSION:
                raise bad_request(
                    f'"{path}" is not a known field selector: only "metadata.name", "metadata.namespace"'
                )
            raise bad_request(f"field label not supported: {path}")
        checks.append(((paths or {}).get(path, path), op != "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        for path, equal, value in checks:
            got = get_path(obj, path)
            got_s = "" if got is None else (str(got).lower() if isinstance(got, bool) else str(got))
            if (got_s == value) != equal:
                return False
        return True

    return matches
