"""The sandbox: an embedded Kubernetes API server (real REST contract, on loopback) with a
simulated cluster, simulated PE runtime and fault injection, for tests and for trying streams-k8s
without a cluster. Start it with `async with Sandbox() as sb:` or `streams-k8s sandbox`."""

from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.faults import Faults, RequestFault
from streams_k8s.sandbox.sandbox import Sandbox

__all__ = ["ApiError", "Faults", "RequestFault", "Sandbox"]
