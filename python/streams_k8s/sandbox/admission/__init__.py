"""Admission: what kube-apiserver does with a written object between the request body and storage.

The registry calls two entry points: `decode` when a body arrives (field types, unknown and
duplicate fields per the request's `fieldValidation`), and `validate` just before storing (the kind's
validation rules, what an update may change, size limits). Both raise `ApiError`s worded as the
real server's; one module per concern holds the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_k8s.sandbox.admission import (
    config,
    coordination,
    custom_resources,
    events,
    limits,
    metadata,
    names,
    networking,
    nodes,
    pods,
    rbac,
    services,
    workloads,
)
from streams_k8s.sandbox.admission.decoding import check_apply_config, decode
from streams_k8s.sandbox.admission.field_errors import Cause, FieldErrors
from streams_k8s.sandbox.admission.field_validation import FieldValidation, parse_json, parse_yaml
from streams_k8s.sandbox.errors import invalid
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.warnings import warn

__all__ = ["FieldValidation", "check_apply_config", "decode", "parse_json", "parse_yaml", "validate"]

Create = Callable[[dict[str, Any], FieldErrors], None]
Update = Callable[[dict[str, Any], dict[str, Any], FieldErrors], None]

_RULES: dict[tuple[str, str], tuple[Create, Update]] = {
    ("", "pods"): (pods.validate_pod, pods.validate_pod_update),
    ("", "services"): (services.validate_service, services.validate_service_update),
    ("", "endpoints"): (services.validate_endpoints, services.validate_endpoints_update),
    ("", "configmaps"): (config.validate_config_map, config.validate_config_map_update),
    ("", "secrets"): (config.validate_secret, config.validate_secret_update),
    ("", "serviceaccounts"): (config.validate_service_account, config.validate_service_account_update),
    ("", "namespaces"): (nodes.validate_namespace, nodes.validate_namespace_update),
    ("", "nodes"): (nodes.validate_node, nodes.validate_node_update),
    ("", "events"): (
        lambda o, e: events.validate_event(o, False, e),
        lambda o, old, e: events.validate_event_update(o, old, False, e),
    ),
    ("events.k8s.io", "events"): (
        lambda o, e: events.validate_event(o, True, e),
        lambda o, old, e: events.validate_event_update(o, old, True, e),
    ),
    ("apps", "deployments"): (workloads.validate_deployment, workloads.validate_deployment_update),
    ("apps", "statefulsets"): (workloads.validate_statefulset, workloads.validate_statefulset_update),
    ("coordination.k8s.io", "leases"): (coordination.validate_lease, coordination.validate_lease_update),
    ("discovery.k8s.io", "endpointslices"): (
        services.validate_endpoint_slice,
        services.validate_endpoint_slice_update,
    ),
    ("networking.k8s.io", "networkpolicies"): (
        networking.validate_network_policy,
        networking.validate_network_policy_update,
    ),
    ("rbac.authorization.k8s.io", "roles"): (rbac.validate_role, rbac.validate_role_update),
    ("rbac.authorization.k8s.io", "clusterroles"): (
        rbac.validate_cluster_role,
        rbac.validate_cluster_role_update,
    ),
    ("rbac.authorization.k8s.io", "rolebindings"): (rbac.validate_role_binding, rbac.validate_binding_update),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): (
        rbac.validate_cluster_role_binding,
        rbac.validate_binding_update,
    ),
}
# Status writes change status only: what each kind checks there.
_STATUS_RULES: dict[tuple[str, str], Update] = {
    ("", "pods"): pods.validate_pod_status_update,
}


def validate(
    rt: ResourceType,
    version: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    subresource: str | None = None,
) -> None:
    """422 Invalid with one cause per broken rule; then the storage size limit."""
    errors = FieldErrors()
    if not rt.builtin:
        custom_resources.validate(rt, version, obj, old, errors)
    elif subresource == "binding":
        pass  # the node is the scheduler's choice; the pod's spec is otherwise unchanged
    elif subresource == "status" and old is not None:
        status_rule = _STATUS_RULES.get(rt.key)
        if status_rule is not None:
            status_rule(obj, old, errors)
        else:
            metadata.validate_update(obj["metadata"], old["metadata"], errors)
    else:
        rules = _RULES.get(rt.key)
        if rules is not None:
            if old is None:
                rules[0](obj, errors)
            else:
                rules[1](obj, old, errors)
        elif old is None:
            metadata.validate(obj["metadata"], names.name_is_path_segment, rt.namespaced, errors)
    if errors.all():
        name = obj["metadata"].get("name", "")
        # events.k8s.io Events are validated as the core Events they are stored as, and named so
        group = "" if rt.key == ("events.k8s.io", "events") else rt.group
        raise invalid(rt.kind, name if isinstance(name, str) else "", _unique(errors.all()), group)
    if not rt.builtin:
        for warning in metadata.finalizer_warnings(obj["metadata"], old and old["metadata"]):
            warn(warning)
    limits.check_stored_size(rt, obj)


def _unique(errors: list[Cause]) -> FieldErrors:
    """The API server reports a repeated cause once."""
    out = FieldErrors()
    for cause in errors:
        if cause not in out:
            out.append(cause)
    return out
