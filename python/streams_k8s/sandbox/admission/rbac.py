"""Roles, ClusterRoles and their bindings: path-segment names, rules with verbs and resources,
role references and subjects; a binding's roleRef cannot change."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, go_struct, index
from streams_k8s.sandbox.errors import cause

RBAC_GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]


def validate_role(role: dict[str, Any], errors: FieldErrors, namespaced: bool = True) -> None:
    metadata.validate(role["metadata"], names.name_is_path_segment, namespaced, errors)
    for i, rule in enumerate(role.get("rules") or []):
        _rule(rule, index("rules", i), namespaced, errors)


def validate_cluster_role(role: dict[str, Any], errors: FieldErrors) -> None:
    validate_role(role, errors, namespaced=False)
    aggregation = role.get("aggregationRule")
    if aggregation is not None and not aggregation.get("clusterRoleSelectors"):
        errors.required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        )


def validate_role_update(role: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(role["metadata"], old["metadata"], errors)
    validate_role(role, errors)


def validate_cluster_role_update(role: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(role["metadata"], old["metadata"], errors)
    validate_cluster_role(role, errors)


def _rule(rule: dict[str, Any], path: str, namespaced: bool, errors: FieldErrors) -> None:
    if not rule.get("verbs"):  # declarative in 1.37: reported after the rest, without its detail
        errors.declarative.append(cause(child(path, "verbs"), "Required value", "FieldValueRequired"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errors.invalid(
                child(path, "nonResourceURLs"), urls, "namespaced rules cannot apply to non-resource URLs"
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errors.invalid(
                child(path, "nonResourceURLs"),
                urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            )
        return
    if not rule.get("apiGroups"):
        errors.required(child(path, "apiGroups"), "resource rules must supply at least one api group")
    if not rule.get("resources"):
        errors.required(child(path, "resources"), "resource rules must supply at least one resource")


def validate_role_binding(binding: dict[str, Any], errors: FieldErrors, namespaced: bool = True) -> None:
    metadata.validate(binding["metadata"], names.name_is_path_segment, namespaced, errors)
    ref = binding.get("roleRef") or {}
    group = ref.get("apiGroup", "")
    if group != RBAC_GROUP:
        errors.not_supported("roleRef.apiGroup", group, [RBAC_GROUP])
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    kind = ref.get("kind", "")
    if kind not in kinds:
        errors.not_supported("roleRef.kind", kind, kinds)
    role_name = ref.get("name", "")
    if not role_name:  # declarative in 1.37
        errors.declarative.append(cause("roleRef.name", "Required value", "FieldValueRequired"))
    else:
        errors.invalid_each("roleRef.name", role_name, names.path_segment(role_name))
    for i, subject in enumerate(binding.get("subjects") or []):
        _subject(subject, namespaced, index("subjects", i), errors)


def validate_cluster_role_binding(binding: dict[str, Any], errors: FieldErrors) -> None:
    validate_role_binding(binding, errors, namespaced=False)


def _subject(subject: dict[str, Any], namespaced: bool, path: str, errors: FieldErrors) -> None:
    name, kind = subject.get("name", ""), subject.get("kind", "")
    if not name:  # declarative in 1.37
        errors.declarative.append(cause(child(path, "name"), "Required value", "FieldValueRequired"))
    if kind == "ServiceAccount":
        if name:
            errors.invalid_each(child(path, "name"), name, names.dns1123_subdomain(name))
        if subject.get("apiGroup", ""):
            errors.not_supported(child(path, "apiGroup"), subject["apiGroup"], [""])
        if not namespaced and not subject.get("namespace"):
            errors.required(child(path, "namespace"))
    elif kind in ("User", "Group"):
        if subject.get("apiGroup", "") != RBAC_GROUP:
            errors.not_supported(child(path, "apiGroup"), subject.get("apiGroup", ""), [RBAC_GROUP])
    else:
        errors.not_supported(child(path, "kind"), kind, _SUBJECT_KINDS)


def validate_binding_update(binding: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(binding["metadata"], old["metadata"], errors)
    namespaced = bool(binding["metadata"].get("namespace"))
    validate_role_binding(binding, errors, namespaced)
    if binding.get("roleRef") != old.get("roleRef"):
        ref = binding.get("roleRef") or {}
        errors.invalid(
            "roleRef",
            go_struct(APIGroup=ref.get("apiGroup", ""), Kind=ref.get("kind", ""), Name=ref.get("name", "")),
            "field is immutable",
        )
