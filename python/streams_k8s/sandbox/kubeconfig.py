"""The kubeconfig a sandbox writes, so kubectl and kubernetes_asyncio connect to it like a cluster."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

CONTEXT = "streams-sandbox"


def kubeconfig(
    url: str, token: str | None, ca_cert: Path | None = None, namespace: str = "default"
) -> dict[str, Any]:
    user: dict[str, Any] = {"token": token} if token else {}
    cluster: dict[str, Any] = {"server": url}
    if ca_cert is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_cert.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, token: str | None, ca_cert: Path | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig(url, token, ca_cert), sort_keys=False))
    path.chmod(0o600)
    return path
