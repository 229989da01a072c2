"""Kubeconfig files for a local control plane's clients: its URL, its CA, a client certificate."""

from __future__ import annotations

from pathlib import Path

import yaml

from streams_k8s.control_plane.certificates import KeyPair

CONTEXT = "streams-k8s-control-plane"


def write_kubeconfig(path: Path, url: str, ca: Path, client: KeyPair, namespace: str = "default") -> Path:
    """A kubeconfig naming the files (not embedding them): the control plane's directory holds both."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [
            {"name": CONTEXT, "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}
        ],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
