"""Pod volumes: names, one source each, and the files they project (key-to-path items, file
modes, relative paths)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.admission import names
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index


def validate_volumes(volumes: list[dict[str, Any]], path: str, errors: FieldErrors) -> set[str]:
    """Validate the pod's volumes; returns the names volume mounts may refer to."""
    valid: set[str] = set()
    seen: set[str] = set()
    for i, volume in enumerate(volumes):
        at = index(path, i)
        found = FieldErrors()
        _volume_source(volume, at, found)
        name = volume.get("name", "")
        if not name:
            found.required(child(at, "name"))
        else:
            found.invalid_each(child(at, "name"), name, names.dns1123_label(name))
        if name in seen:
            found.duplicate(child(at, "name"), name)
        seen.add(name)
        if found:
            errors.extend(found)
        else:
            valid.add(name)
    return valid


def _volume_source(volume: dict[str, Any], path: str, errors: FieldErrors) -> None:
    sources = [k for k in volume if k != "name"]
    if not sources:
        errors.required(path, "must specify a volume type")
        return
    for extra in sources[1:]:
        errors.forbidden(child(path, extra), "may not specify more than 1 volume type")
    source, body = sources[0], volume[sources[0]] or {}
    at = child(path, source)
    if source == "configMap":
        if not body.get("name"):
            errors.required(child(at, "name"))
        _key_to_paths(body, at, errors)
    elif source == "secret":
        if not body.get("secretName"):
            errors.required(child(at, "secretName"))
        _key_to_paths(body, at, errors)
    elif source == "persistentVolumeClaim":
        if not body.get("claimName"):
            errors.required(child(at, "claimName"))
    elif source == "hostPath":
        if not body.get("path"):
            errors.required(child(at, "path"))
    elif source == "emptyDir":
        if body.get("medium", "") not in ("", "Memory", "HugePages"):
            errors.not_supported(child(at, "medium"), body["medium"], ["", "Memory", "HugePages"])
    elif source == "downwardAPI":
        _file_mode(body.get("defaultMode"), child(at, "defaultMode"), errors)
        for i, item in enumerate(body.get("items") or []):
            relative_path(item.get("path", ""), child(index(child(at, "items"), i), "path"), errors)


def _key_to_paths(body: dict[str, Any], path: str, errors: FieldErrors) -> None:
    _file_mode(body.get("defaultMode"), child(path, "defaultMode"), errors)
    for i, item in enumerate(body.get("items") or []):
        at = index(child(path, "items"), i)
        if not item.get("key"):
            errors.required(child(at, "key"))
        relative_path(item.get("path", ""), child(at, "path"), errors)
        _file_mode(item.get("mode"), child(at, "mode"), errors)


def _file_mode(mode: int | None, path: str, errors: FieldErrors) -> None:
    if mode is not None and not 0 <= mode <= 0o777:
        errors.invalid(path, mode, "must be a number between 0 and 0777 (octal), both inclusive")


def relative_path(value: str, path: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(path)
        return
    if value.startswith("/"):
        errors.invalid(path, value, "must be a relative path")
    if ".." in value.split("/"):
        errors.invalid(path, value, "must not contain '..'")
