"""The Kubernetes release the sandbox serves: its `/version`, its nodes' kubelet version, and the
release whose schemas and rules its admission follows."""

from __future__ import annotations

KUBERNETES_VERSION = "1.37"
# The patch release of the real control plane the sandbox is held to (tools/build-control-plane).
PATCH = "2"
