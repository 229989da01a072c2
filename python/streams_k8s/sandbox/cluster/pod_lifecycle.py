"""What the simulated kubelet does next for a pod bound to one of its nodes, as a pure decision.

- a Pending pod, not being deleted: START (after the start delay);
- a pod Running, Succeeded or Failed, not being deleted: NOTHING (exits come from its containers);
- a pod being deleted whose containers still run here (a process, or the termination delay is not
  over): STOP;
- then, until it is Succeeded or Failed: FINISH (terminated statuses, the final phase);
- then, while it has a grace period: REMOVE (DELETE with grace period 0 and a UID precondition);
- once no grace period is left (our DELETE, or a forced one its finalizers hold): NOTHING, the API
  server keeps the object until its finalizers go.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from streams_k8s.sandbox.cluster.pod_status import TERMINAL


class Step(StrEnum):
    NOTHING = "Nothing"
    START = "Start"
    STOP = "Stop"
    FINISH = "Finish"
    REMOVE = "Remove"


def next_step(pod: dict[str, Any], *, stopped: bool) -> Step:
    """``stopped``: nothing of the pod runs here any longer (processes ended, delay over)."""
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if not meta.get("deletionTimestamp"):
        return Step.START if phase == "Pending" else Step.NOTHING
    if not stopped:
        return Step.STOP
    if phase not in TERMINAL:
        return Step.FINISH
    if meta.get("deletionGracePeriodSeconds"):
        return Step.REMOVE
    return Step.NOTHING
