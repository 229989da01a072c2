"""Pods and pod templates: the pod spec rules (its containers, volumes, scheduling fields,
affinity) and what a pod update may change. Containers and volumes have modules of their own."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names, selectors
from streams_k8s.sandbox.admission.containers import validate_container, validate_security_context
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index
from streams_k8s.sandbox.admission.names import MAX_INT32
from streams_k8s.sandbox.admission.volumes import validate_volumes

_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
_UPDATABLE = ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)


def validate_pod(pod: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(pod["metadata"], names.name_is_dns_subdomain, True, errors)
    spec = pod.get("spec") or {}
    validate_pod_spec(spec, "spec", errors)
    if spec.get("ephemeralContainers"):
        errors.forbidden("spec.ephemeralContainers", "cannot be set on create")
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(kind) or []):
            image = container.get("image", "")
            if image != image.strip():
                errors.invalid(
                    child(index(child("spec", kind), i), "image"),
                    image,
                    "must not have leading or trailing whitespace",
                )


def validate_pod_update(pod: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(pod["metadata"], old["metadata"], errors)
    validate_pod(pod, errors)
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for kind in ("containers", "initContainers"):
        if len(spec.get(kind) or []) != len(old_spec.get(kind) or []):
            errors.forbidden(child("spec", kind), "pod updates may not add or remove containers")
            return
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if old_deadline is not None and (deadline is None or deadline > old_deadline):
        errors.invalid("spec.activeDeadlineSeconds", deadline, "must be less than or equal to previous value")
    old_tolerations = old_spec.get("tolerations") or []
    if any(t not in (spec.get("tolerations") or []) for t in old_tolerations):
        errors.forbidden(
            "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
        )
    if _mutable_fields_removed(spec) != _mutable_fields_removed(old_spec):
        errors.forbidden("spec", f"pod updates may not change fields other than {_UPDATABLE}")


def _mutable_fields_removed(spec: dict[str, Any]) -> dict[str, Any]:
    out = {
        k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations", "schedulingGates")
    }
    if (spec.get("terminationGracePeriodSeconds") or 0) <= 1:
        out.pop("terminationGracePeriodSeconds", None)
    for kind in ("containers", "initContainers"):
        if kind in out:
            out[kind] = [{k: v for k, v in c.items() if k != "image"} for c in out[kind]]
    return out


def validate_pod_status_update(pod: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(pod["metadata"], old["metadata"], errors)
    status = pod.get("status") or {}
    for field in ("podIP", "hostIP"):
        if status.get(field):
            errors.invalid_each(child("status", field), status[field], names.ip_address(status[field]))
    for field in ("podIPs", "hostIPs"):
        for i, entry in enumerate(status.get(field) or []):
            ip = entry.get("ip", "")
            errors.invalid_each(child(index(child("status", field), i), "ip"), ip, names.ip_address(ip))


def validate_template(template: dict[str, Any], path: str, errors: FieldErrors) -> None:
    """A workload's pod template: its labels and annotations, and the pod spec."""
    meta = template.get("metadata") or {}
    metadata.validate_labels(meta.get("labels"), child(child(path, "metadata"), "labels"), errors)
    metadata.validate_annotations(
        meta.get("annotations"), child(child(path, "metadata"), "annotations"), errors
    )
    spec = template.get("spec") or {}
    validate_pod_spec(spec, child(path, "spec"), errors)
    if spec.get("ephemeralContainers"):
        errors.forbidden(
            child(child(path, "spec"), "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        )


def validate_pod_spec(spec: dict[str, Any], path: str, errors: FieldErrors) -> None:
    volumes = validate_volumes(spec.get("volumes") or [], child(path, "volumes"), errors)
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    if not containers:
        errors.required(child(path, "containers"))
    seen: set[str] = set()
    for kind, items in (("containers", containers), ("initContainers", init_containers)):
        for i, container in enumerate(items):
            at = index(child(path, kind), i)
            validate_container(container, volumes, at, errors, liveness_once=kind == "containers")
            container_name = container.get("name", "")
            if container_name in seen:
                errors.duplicate(child(at, "name"), container_name)
            seen.add(container_name)
            if not container.get("image"):
                errors.required(child(at, "image"))
    errors.one_of(child(path, "restartPolicy"), spec.get("restartPolicy"), _RESTART_POLICIES)
    errors.one_of(child(path, "dnsPolicy"), spec.get("dnsPolicy"), _DNS_POLICIES)
    if spec.get("dnsPolicy") == "None" and not (spec.get("dnsConfig") or {}).get("nameservers"):
        errors.required(
            child(child(path, "dnsConfig"), "nameservers"),
            "must provide at least one DNS nameserver when dnsPolicy is None",
        )
    metadata.validate_labels(spec.get("nodeSelector"), child(path, "nodeSelector"), errors)
    for field, check in (
        ("serviceAccountName", names.dns1123_subdomain),
        ("nodeName", names.dns1123_subdomain),
        ("priorityClassName", names.dns1123_subdomain),
        ("hostname", names.dns1123_label),
        ("subdomain", names.dns1123_label),
    ):
        if spec.get(field):
            errors.invalid_each(child(path, field), spec[field], check(spec[field]))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        errors.invalid(
            child(path, "activeDeadlineSeconds"), deadline, names.inclusive_range_error(1, MAX_INT32)
        )
    selectors.tolerations(spec.get("tolerations") or [], child(path, "tolerations"), errors)
    _affinity(spec.get("affinity") or {}, child(path, "affinity"), errors)
    validate_security_context(spec.get("securityContext") or {}, child(path, "securityContext"), errors)
    for i, secret in enumerate(spec.get("imagePullSecrets") or []):
        if not secret.get("name"):
            errors.required(child(index(child(path, "imagePullSecrets"), i), "name"))


def _affinity(affinity: dict[str, Any], path: str, errors: FieldErrors) -> None:
    node = affinity.get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    node_path = child(path, "nodeAffinity")
    if required is not None:
        at = child(child(node_path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms")
        terms = required.get("nodeSelectorTerms") or []
        if not terms:
            errors.required(at, "must have at least one node selector term")
        for i, term in enumerate(terms):
            selectors.node_selector_term(term, index(at, i), errors)
    for i, preferred in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        at = index(child(node_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
        _weight(preferred.get("weight", 0), child(at, "weight"), errors)
        selectors.node_selector_term(preferred.get("preference") or {}, child(at, "preference"), errors)
    for kind in ("podAffinity", "podAntiAffinity"):
        pod_affinity = affinity.get(kind) or {}
        kind_path = child(path, kind)
        for i, term in enumerate(pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            _pod_affinity_term(
                term, index(child(kind_path, "requiredDuringSchedulingIgnoredDuringExecution"), i), errors
            )
        for i, weighted in enumerate(
            pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ):
            at = index(child(kind_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
            _weight(weighted.get("weight", 0), child(at, "weight"), errors)
            _pod_affinity_term(weighted.get("podAffinityTerm") or {}, child(at, "podAffinityTerm"), errors)


def _weight(weight: int, path: str, errors: FieldErrors) -> None:
    if not 1 <= weight <= 100:
        errors.invalid(path, weight, "must be in the range 1-100")


def _pod_affinity_term(term: dict[str, Any], path: str, errors: FieldErrors) -> None:
    selectors.label_selector(term.get("labelSelector"), child(path, "labelSelector"), errors)
    selectors.label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector"), errors)
    for namespace in term.get("namespaces") or []:
        errors.invalid_each(child(path, "namespace"), namespace, names.dns1123_label(namespace))
    topology_key = term.get("topologyKey", "")
    if not topology_key:
        errors.required(child(path, "topologyKey"), "can not be empty")
    else:
        errors.invalid_each(child(path, "topologyKey"), topology_key, names.qualified_name(topology_key))
