"""The sandbox: an embedded Kubernetes API server (real REST contract, on loopback) with a
simulated cluster, simulated PE runtime and fault injection, for tests and for trying streams-k8s
without a cluster. Start it with `async with Sandbox() as sb:` or `streams-k8s sandbox`.

Names are imported on first use, so loading the pytest plugin costs nothing until a test asks for
a sandbox, and nothing needs the `sandbox` extra's dependencies before a sandbox is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streams_k8s.sandbox.errors import ApiError
    from streams_k8s.sandbox.faults import Faults, RequestFault
    from streams_k8s.sandbox.sandbox import Sandbox

_EXPORTS = {
    "ApiError": "streams_k8s.sandbox.errors",
    "Faults": "streams_k8s.sandbox.faults",
    "RequestFault": "streams_k8s.sandbox.faults",
    "Sandbox": "streams_k8s.sandbox.sandbox",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["ApiError", "Faults", "RequestFault", "Sandbox"]
