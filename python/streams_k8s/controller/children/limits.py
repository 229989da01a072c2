"""What the API server accepts of the objects a job's plan renders, checked before any is written.

A plan is a pure function of the bundle and the Job, so an object the cluster would refuse is known
before the first write. Refusing the submission (or the width change) then leaves nothing
half-made and says which object is too big and what to change, where writing would stop at the
first 413 or 422 with the job half-submitted. The limits are kube-apiserver's and etcd's:

| what | limit | enforced by |
|---|---|---|
| a ConfigMap's data (keys and values) | 1 MiB | ConfigMap validation |
| any object, as JSON | 1.5 MiB | etcd's default request limit (inside the API server's 3 MiB body limit) |
| a Service's name | DNS-1035 label, at most 63 characters | Service validation |
| other names | DNS-1123 subdomain, at most 253 characters | object metadata validation |
| label values | at most 63 characters, alphanumeric at both ends, `-_.` inside | object metadata validation |
| annotations | 256 KiB in all (keys and values) | object metadata validation |

The server may still refuse an object (a tighter limit, an admission policy): `refused` turns its
400/413/422 into the same kind of failure, which is never retried as it stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson

from streams_k8s.api.contract import PE_LABEL
from streams_k8s.api.job import DNS_1035_LABEL
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.kinds import PES
from streams_k8s.controller.placement.label_values import is_label_value
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES

MIB = 1 << 20
MAX_CONFIG_MAP_DATA = MIB
MAX_OBJECT_BYTES = MIB * 3 // 2
MAX_ANNOTATIONS = 256 * 1024
MAX_NAME = 253
# Status codes for an object the server will not take as it is (bad request, too large, invalid).
REFUSED = frozenset({400, 413, 422})
PLAN_TOO_LARGE = "PlanTooLarge"
OBJECT_REFUSED = "ObjectRefused"
_SERVICE_NAME = re.compile(DNS_1035_LABEL)
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# How the API server says an object is too large (422 "Too long: must have at most N bytes", etcd's
# "request is too large").
_SIZE_WORDS = ("too long", "too large", "must have at most")
_FEWER_CHANNELS = "lower the widths of the job's parallel regions"
_SMALLER_PES = (
    "fuse its operators into more, smaller PEs (a larger fusion.manual count, or fusion.legacy) or "
    + _FEWER_CHANNELS
)


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


def _what(child: Desired) -> str:
    return f"{child.resource.kind} {child.name}"


def _remedy(child: Desired) -> str:
    """What the user can change to make this object smaller."""
    pe = (child.body["metadata"].get("labels") or {}).get(PE_LABEL)
    if child.resource in (CONFIGMAPS, PES) and pe is not None:
        return f"PE {pe} holds too much of the application: {_SMALLER_PES}"
    if child.resource == CONFIGMAPS:  # the job's name table: one line per operator input port
        return f"the job's name table has a line per operator port: {_FEWER_CHANNELS}"
    return _FEWER_CHANNELS


def child_problem(child: Desired) -> str | None:
    """Why the API server would refuse ``child`` as rendered, and what to change; None if it would not."""
    metadata: dict[str, Any] = child.body["metadata"]
    name = child.name
    if child.resource == SERVICES and (len(name) > 63 or not _SERVICE_NAME.match(name)):
        return f"{_what(child)}: a Service's name must be a DNS-1035 label of at most 63 characters"
    if len(name) > MAX_NAME or not _SUBDOMAIN.match(name):
        return f"{_what(child)}: the name must be a DNS-1123 subdomain of at most {MAX_NAME} characters"
    for key, value in (metadata.get("labels") or {}).items():
        if not is_label_value(value):
            return f"{_what(child)}: label {key}={value!r} is not a label value (at most 63 characters)"
    annotations = sum(
        len(k.encode()) + len(v.encode()) for k, v in (metadata.get("annotations") or {}).items()
    )
    if annotations > MAX_ANNOTATIONS:
        return f"{_what(child)}: its annotations take {annotations} bytes, more than {MAX_ANNOTATIONS}"
    if child.resource == CONFIGMAPS:
        data = sum(len(k.encode()) + len(v.encode()) for k, v in (child.body.get("data") or {}).items())
        if data > MAX_CONFIG_MAP_DATA:
            return (
                f"{_what(child)} would hold {_mib(data)} of data, more than the "
                f"{_mib(MAX_CONFIG_MAP_DATA)} a ConfigMap may: {_remedy(child)}"
            )
    size = len(orjson.dumps(child.body))
    if size > MAX_OBJECT_BYTES:
        return (
            f"{_what(child)} would take {_mib(size)}, more than the {_mib(MAX_OBJECT_BYTES)} the cluster "
            f"stores in one object: {_remedy(child)}"
        )
    return None


def check_children(children: Iterable[Desired], checked: Iterable[Desired] = ()) -> None:
    """`JobFailure(Planned, PlanTooLarge)` for the first child the cluster would refuse;
    those of ``checked`` (children checked before, taken again by `desired_objects`) are not
    checked again."""
    seen = {id(child) for child in checked}
    for child in children:
        if id(child) not in seen and (problem := child_problem(child)) is not None:
            raise JobFailure("Planned", PLAN_TOO_LARGE, problem)


def refused(child: Desired, err: ApiError) -> JobFailure:
    """The failure to report when the API server refused ``child`` for what it is (``err.status``
    in `REFUSED`)."""
    answer = f"{err.status} {err.reason}: {err.message}" if err.message else f"{err.status} {err.reason}"
    too_big = err.status == 413 or any(w in err.message.lower() for w in _SIZE_WORDS)
    remedy = _remedy(child) if too_big else "this cluster does not accept it; fix the cause and edit the Job"
    return JobFailure(
        "Submitted", OBJECT_REFUSED, f"the API server refused {_what(child)} ({answer}): {remedy}"
    )
