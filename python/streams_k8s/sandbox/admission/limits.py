"""Size limits outside any one kind's validation: the request body (kube-apiserver's 3 MiB), and
what etcd accepts in one write (its default 1.5 MiB request limit; over the 2 MiB of a gRPC
message, kube-apiserver's etcd client refuses to send it at all)."""

from __future__ import annotations

from typing import Any

import orjson

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.resources import ResourceType

MAX_REQUEST_BODY = 3 * 1024 * 1024
ETCD_MAX_REQUEST = 1536 * 1024
GRPC_MAX_SEND = 2 * 1024 * 1024
# What the etcd transaction adds to the object: its key, the compare and the put (an estimate).
_TXN_OVERHEAD = 200


def request_too_large() -> ApiError:
    return ApiError(
        413, f"Request entity too large: limit is {MAX_REQUEST_BODY}", reason="RequestEntityTooLarge"
    )


def check_stored_size(rt: ResourceType, obj: dict[str, Any]) -> None:
    """kube-apiserver passes etcd's refusal (or its gRPC client's) on as a 500 without a reason
    (kubernetes#112152)."""
    size = stored_size(rt, obj)
    message = size + _TXN_OVERHEAD
    if message > GRPC_MAX_SEND:
        raise ApiError(
            500,
            "rpc error: code = ResourceExhausted desc = trying to send message larger than max "
            f"({message} vs. {GRPC_MAX_SEND})",
            reason="",
        )
    if size > ETCD_MAX_REQUEST:
        raise ApiError(500, "etcdserver: request is too large", reason="")


def stored_size(rt: ResourceType, obj: dict[str, Any]) -> int:
    """About what the object takes in etcd: custom resources are stored as JSON; built-in kinds as
    protobuf, where strings cost their bytes plus a small tag and field names cost nothing."""
    encoded = len(orjson.dumps(obj))
    if not rt.builtin or encoded <= ETCD_MAX_REQUEST:
        return encoded  # JSON is never smaller than the protobuf form
    return _protobuf_size(obj)


def _protobuf_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode()) + 2
    if isinstance(value, dict):
        # Map keys (labels, data) are stored; struct field names are tags. Count every key: a bound.
        return sum(len(k) + 2 + _protobuf_size(v) for k, v in value.items()) + 2
    if isinstance(value, list):
        return sum(_protobuf_size(v) for v in value) + 2
    return 6
