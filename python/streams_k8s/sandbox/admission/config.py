"""ConfigMaps, Secrets and ServiceAccounts: key formats, the 1 MiB data limit, Secret types and
`immutable: true`."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from streams_k8s.sandbox.admission import metadata, names
from streams_k8s.sandbox.admission.field_errors import FieldErrors, key

MAX_DATA_SIZE = 1024 * 1024
_IMMUTABLE = "field is immutable when `immutable` is set"
# Keys a typed Secret must carry.
_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": [".dockercfg"],
    "kubernetes.io/dockerconfigjson": [".dockerconfigjson"],
    "kubernetes.io/ssh-auth": ["ssh-privatekey"],
    "kubernetes.io/tls": ["tls.crt", "tls.key"],
}


def validate_config_map(config_map: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(config_map["metadata"], names.name_is_dns_subdomain, True, errors)
    data = config_map.get("data") or {}
    binary = config_map.get("binaryData") or {}
    total = 0
    for k, v in sorted(data.items()):
        errors.invalid_each(key("data", k), k, names.config_map_key(k))
        if k in binary:
            errors.invalid(key("data", k), k, "duplicate of key present in binaryData")
        total += len(v.encode())
    for k, v in sorted(binary.items()):
        errors.invalid_each(key("binaryData", k), k, names.config_map_key(k))
        total += len(base64.b64decode(v))
    if total > MAX_DATA_SIZE:
        # The limit is on the whole object's data: kube-apiserver reports it on the root path.
        errors.too_long("[]", MAX_DATA_SIZE)


def validate_config_map_update(config_map: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(config_map["metadata"], old["metadata"], errors)
    _immutable_data(config_map, old, ("data", "binaryData"), errors)
    validate_config_map(config_map, errors)


def _immutable_data(
    obj: dict[str, Any], old: dict[str, Any], fields: tuple[str, ...], errors: FieldErrors
) -> None:
    if not old.get("immutable"):
        return
    if not obj.get("immutable"):
        errors.forbidden("immutable", _IMMUTABLE)
    for field in fields:
        if (obj.get(field) or {}) != (old.get(field) or {}):
            errors.forbidden(field, _IMMUTABLE)


def validate_secret(secret: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(secret["metadata"], names.name_is_dns_subdomain, True, errors)
    data = secret.get("data") or {}
    total = 0
    for k, v in sorted(data.items()):
        errors.invalid_each(key("data", k), k, names.config_map_key(k))
        total += len(base64.b64decode(v))
    if total > MAX_DATA_SIZE:
        errors.too_long("data", MAX_DATA_SIZE)
    kind = secret.get("type", "Opaque")
    annotations = secret["metadata"].get("annotations") or {}
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get("kubernetes.io/service-account.name"):
            errors.required("metadata.annotations[kubernetes.io/service-account.name]")
    elif kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        errors.required("data[username]")
        errors.required("data[password]")
    for required in _REQUIRED_KEYS.get(kind, []):
        if required not in data:
            errors.required(key("data", required))
    if kind == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" in data:
        try:
            orjson.loads(base64.b64decode(data[".dockerconfigjson"]))
        except orjson.JSONDecodeError as exc:
            errors.invalid("data[.dockerconfigjson]", "<secret contents redacted>", str(exc))


def validate_secret_update(secret: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(secret["metadata"], old["metadata"], errors)
    if secret.get("type", "Opaque") != old.get("type", "Opaque"):
        errors.immutable("type", secret.get("type", ""))
    _immutable_data(secret, old, ("data",), errors)
    validate_secret(secret, errors)


def validate_service_account(account: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(account["metadata"], names.name_is_dns_subdomain, True, errors)


def validate_service_account_update(
    account: dict[str, Any], old: dict[str, Any], errors: FieldErrors
) -> None:
    metadata.validate_update(account["metadata"], old["metadata"], errors)
    validate_service_account(account, errors)
