"""Leases (coordination.k8s.io): subdomain names, positive durations, non-negative transitions."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import metadata, names
from streams_k8s.sandbox.admission.field_errors import FieldErrors


def validate_lease(lease: dict[str, Any], errors: FieldErrors) -> None:
    # apimachinery's ObjectMeta rules alone: a finalizer without a domain is not refused here
    metadata.validate(lease["metadata"], names.name_is_dns_subdomain, True, errors, kube_finalizers=False)
    spec = lease.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errors.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errors.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")


def validate_lease_update(lease: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(lease["metadata"], old["metadata"], errors, kube_finalizers=False)
    validate_lease(lease, errors)
