"""A process-running container's emptyDir volumes: a directory of the pod's own on this host per
volume, and the container's paths under each mount translated to it.

A container sees its volumes at their mount paths; a process here shares the host's file system,
so the kubelet gives each emptyDir a directory under the pod's (removed with the pod) and rewrites
the container's environment values and arguments that name a path under a mount (the operator's
`STREAMS_K8S_BUNDLE_CACHE=/var/cache/streams-k8s/bundles`). A mount at /tmp is the process's
TMPDIR. Other volume kinds (ConfigMaps, Secrets, projected) are not mounted: what runs here reads
its configuration from the API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def empty_dirs(pod: dict[str, Any], container: dict[str, Any], root: Path) -> dict[str, Path]:
    """mount path -> the directory that stands for it, made under ``root``."""
    kinds = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, dict)}
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts") or []:
        volume = kinds.get(mount.get("name"))
        if volume is None or "emptyDir" not in volume or not mount.get("mountPath"):
            continue
        directory = root / str(mount["name"]) / str(mount.get("subPath") or "")
        directory.mkdir(parents=True, exist_ok=True)
        mounts[str(mount["mountPath"]).rstrip("/") or "/"] = directory
    return mounts


def translate(text: str, mounts: dict[str, Path]) -> str:
    """``text`` with a leading path under a mount moved to the mount's directory (the deepest wins)."""
    for mount in sorted(mounts, key=len, reverse=True):
        if text == mount or text.startswith(mount + "/"):
            return str(mounts[mount]) + text[len(mount) :]
    return text


def mounted_environment(env: dict[str, str], mounts: dict[str, Path]) -> dict[str, str]:
    translated = {name: translate(value, mounts) for name, value in env.items()}
    if "/tmp" in mounts:
        translated.setdefault("TMPDIR", str(mounts["/tmp"]))
    return translated
