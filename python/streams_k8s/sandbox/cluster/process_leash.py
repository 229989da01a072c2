"""A pod's process ends with the simulation that started it, however that ended.

A simulation stopped in order stops its processes itself (`pod_processes`). One killed (a test
run cut off by a time-out, a SIGKILL) left them running with init as their parent: an operator
still listening on its pod address, which a later simulation gives to another pod. On Linux the
process asks the kernel to SIGKILL it when its parent goes (``PR_SET_PDEATHSIG``), then checks the
parent has not gone already; elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PARENT = "STREAMS_K8S_SANDBOX_PARENT"  # the simulation's pid, set by `pod_processes`
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when the simulation that started it ends (a no-op without one)."""
    parent = os.environ.pop(PARENT, None)
    if parent is None or sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        return  # not granted: the simulation's own stop still ends it
    if os.getppid() != int(parent):
        os._exit(137)  # the parent went before the request was made (as if killed by it)
