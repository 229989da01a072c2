"""Discovery documents: /version, /api, /apis, group and group-version resource lists."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.release import KUBERNETES_VERSION as RELEASE
from streams_k8s.sandbox.release import PATCH

_MAJOR, _MINOR = RELEASE.split(".")
# kube-apiserver's /version, marked as the sandbox's by its build metadata (as k3s marks its own)
KUBERNETES_VERSION = {
    "major": _MAJOR,
    "minor": _MINOR,
    "emulationMajor": _MAJOR,
    "emulationMinor": _MINOR,
    "minCompatibilityMajor": _MAJOR,
    "minCompatibilityMinor": str(int(_MINOR) - 1),
    "gitVersion": f"v{RELEASE}.{PATCH}+streams-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.26.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def core_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _groups(registry: Registry) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rt in registry.types.values():
        if rt.group:
            versions = groups.setdefault(rt.group, [])
            versions.extend(v for v in rt.versions if v not in versions)
    return groups


def group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def group_list(registry: Registry) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [group(name, versions) for name, versions in sorted(_groups(registry).items())],
    }


def builtin_group(registry: Registry, name: str) -> bool:
    """A group of kube-apiserver's own (not a CRD's): what it does not find there is a Status."""
    return any(rt.builtin for rt in registry.types.values() if rt.group == name)


def api_group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = _groups(registry).get(name)
    return group(name, versions) if versions else None


def resource_list(registry: Registry, group_name: str, version: str) -> dict[str, Any] | None:
    served = registry.served.get((group_name, version))
    if not served:
        return None
    resources = [entry for rt in sorted(served.values(), key=lambda r: r.plural) for entry in rt.discovery()]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version}" if group_name else version,
        "resources": resources,
    }
