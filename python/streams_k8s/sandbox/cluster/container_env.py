"""What a container runs, as the kubelet sets it up: its command line and its environment.

Only containers whose program is ours run as processes: no ``command`` (the image's ENTRYPOINT,
``streams-k8s``, as in deploy/Dockerfile) and ``args`` naming one of `RUNNABLE` (the
consistent-region coordinator's pods: ``args: [coordinator, ...]``; the operator's own, as
deploy/deployment.yaml runs it: ``args: [run, ...]``). The environment is the
container's ``env``: values, with ``$(VAR)`` references to earlier variables expanded (``$$`` is a
``$``), and ``fieldRef``s resolved from the pod (name, namespace, uid, labels, annotations, node,
service account, pod and host IPs). Other sources (ConfigMap and Secret keys, resource fields) are
not read: the variable is left out and the reason returned.
"""

from __future__ import annotations

import re
from typing import Any

RUNNABLE = ("coordinator", "run")
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_KEYED = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")


def runs_here(container: dict[str, Any]) -> bool:
    """Whether the container's program is ours, so the simulated kubelet runs it."""
    args = container.get("args") or []
    return not container.get("command") and bool(args) and args[0] in RUNNABLE


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: a defined variable's value; an unknown reference stays."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REFERENCE.sub(one, text)


def field_value(pod: dict[str, Any], path: str, pod_ip: str, host_ip: str) -> str | None:
    """A ``fieldRef``'s value (None: a path the downward API does not offer)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    keyed = _KEYED.match(path)
    if keyed is not None:
        return str((meta.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    return None


def environment(
    pod: dict[str, Any], container: dict[str, Any], *, pod_ip: str, host_ip: str
) -> tuple[dict[str, str], list[str]]:
    """The container's variables, and what could not be set (each with why)."""
    env: dict[str, str] = {}
    problems: list[str] = []
    for entry in container.get("env") or []:
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        name = str(entry["name"])
        source = entry.get("valueFrom")
        if source is None:
            env[name] = expand(str(entry.get("value") or ""), env)
            continue
        path = ((source or {}).get("fieldRef") or {}).get("fieldPath")
        value = field_value(pod, str(path), pod_ip, host_ip) if path else None
        if value is None:
            kind = next(iter(source or {}), "valueFrom")
            problems.append(f"{name}: {kind} {path or ''} is not resolved by the simulated kubelet".strip())
            continue
        env[name] = value
    return env, problems


def command_line(container: dict[str, Any], env: dict[str, str]) -> list[str]:
    """The arguments after the ENTRYPOINT, expanded as the kubelet does."""
    return [expand(str(arg), env) for arg in container.get("args") or []]
