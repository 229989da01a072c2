"""NetworkPolicies: pod selector, peers (one kind each), ports and port ranges, policy types."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names, ports, selectors
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index

_POLICY_TYPES = ["Egress", "Ingress"]


def validate_network_policy(policy: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(policy["metadata"], names.name_is_dns_subdomain, True, errors)
    spec = policy.get("spec") or {}
    selectors.label_selector(spec.get("podSelector") or {}, "spec.podSelector", errors)
    for direction, peers_field in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            at = index(child("spec", direction), i)
            for j, port in enumerate(rule.get("ports") or []):
                _port(port, index(child(at, "ports"), j), errors)
            for j, peer in enumerate(rule.get(peers_field) or []):
                _peer(peer, index(child(at, peers_field), j), errors)
    types = spec.get("policyTypes") or []
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            errors.not_supported(index("spec.policyTypes", i), kind, _POLICY_TYPES)
    if len(types) > 2:
        errors.invalid("spec.policyTypes", types, "may not specify more than two policyTypes")


def validate_network_policy_update(policy: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(policy["metadata"], old["metadata"], errors)
    validate_network_policy(policy, errors)


def _port(port: dict[str, Any], path: str, errors: FieldErrors) -> None:
    ports.protocol(port.get("protocol", "TCP"), child(path, "protocol"), errors)
    number = port.get("port")
    end = port.get("endPort")
    if number is not None:
        ports.number_or_name(number, child(path, "port"), errors)
    if isinstance(number, int):
        if end is not None:
            if end < number:
                errors.invalid(child(path, "endPort"), end, "must be greater than or equal to `port`")
            ports.number(end, child(path, "endPort"), errors)
    elif isinstance(number, str):
        if end is not None:
            errors.invalid(child(path, "endPort"), end, "may not be specified when `port` is non-numeric")
    elif end is not None:
        errors.invalid(child(path, "endPort"), end, "may not be specified when `port` is not specified")


def _peer(peer: dict[str, Any], path: str, errors: FieldErrors) -> None:
    selectors_set = [k for k in ("podSelector", "namespaceSelector") if peer.get(k) is not None]
    for k in selectors_set:
        selectors.label_selector(peer[k], child(path, k), errors)
    block = peer.get("ipBlock")
    if block is None and not selectors_set:
        errors.required(path, "must specify a peer")
    elif block is not None and selectors_set:
        errors.forbidden(path, "may not specify both ipBlock and another peer")
    if block is None:
        return
    at = child(path, "ipBlock")
    cidr = block.get("cidr", "")
    if not cidr:
        errors.required(child(at, "cidr"))
        return
    messages = names.cidr(cidr)
    errors.invalid_each(child(at, "cidr"), cidr, messages)
    for i, excepted in enumerate(block.get("except") or []):
        errors.invalid_each(index(child(at, "except"), i), excepted, names.cidr(excepted))
