"""The Kubernetes release the sandbox serves: its `/version`, its nodes' kubelet version, and the
release whose schemas and rules its admission follows."""

from __future__ import annotations

KUBERNETES_VERSION = "1.33"
