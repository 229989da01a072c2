"""When a PE gets a new pod: the launch state machine of one PE, as a pure decision.

The PE's ``status.launchCount`` names the launch that should be running; the pod of launch ``n``
has a name fixed by (PE uid, n) (``pod_spec.pod_name``), so creating it again is harmless. A
relaunch is written ahead: the controller first records ``launchCount = n + 1`` (and the new pod
name, phase ``Pending``), then removes the old pod and creates the new one. A controller killed
anywhere in between finds the status saying what it meant and finishes the job, never launching
twice.

Restart policies (seed §8.1), applied to the pod of the current launch only:

| the pod ... | relaunch when | otherwise |
|---|---|---|
| failed | ``restartFailedPod`` (unset: the PE's SPL ``restartable``) | kept, PE phase Failed |
| completed | ``restartCompletedPod`` | kept, PE phase Succeeded |
| was deleted (not by us) | ``restartDeletedPod`` | no pod, PE phase Deleted |
| has another content id than the PE | always (the PE's code changed) | |

A replaced pod that failed is kept for diagnosis, relabelled ``svc=zombie`` (it no longer counts
as the PE's pod), when ``deleteFailedPod`` is false; any other replaced pod is deleted.
The first launch of a PE needs its ConfigMap (with the PE's content id), its host pool and the
nodes prepared for its placement; the first launch of a PE recreated under the same name
continues the launch count of the one it replaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.controller import labels

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
# PE phase when its pod was deleted and the restart policy says to leave it so.
DELETED = "Deleted"
ZOMBIE = "zombie"


class Action(StrEnum):
    WAIT = "Wait"  # prerequisites of a pod are missing
    CREATE = "Create"  # create the pod of `launch`
    RELAUNCH = "Relaunch"  # write launchCount = `launch` ahead of replacing the pod
    RECORD = "Record"  # write the observed pod state into the PE status
    NONE = "None"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    launch: int = 0
    reason: str = ""
    # Pod state to record (RECORD): phase and node of the current pod.
    phase: str | None = None
    node: str | None = None
    # Pods of earlier launches to remove now: (pod, keep as zombie).
    retire: tuple[tuple[dict[str, Any], bool], ...] = ()


def pod_launch(pod: dict[str, Any]) -> int:
    value = (pod.get("metadata") or {}).get("labels", {}).get(labels.LAUNCH_COUNT, "")
    return int(value) if str(value).isdecimal() else -1


def pod_phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or PENDING)


def pod_node(pod: dict[str, Any]) -> str | None:
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


def unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def restarts_failed(pe: ProcessingElement, restartable: bool) -> bool:
    """restartFailedPod, unset meaning the PE's SPL restartable flag."""
    return pe.spec.restart_failed_pod if pe.spec.restart_failed_pod is not None else restartable


def _retire(pods: Sequence[dict[str, Any]], pe: ProcessingElement) -> tuple[tuple[dict[str, Any], bool], ...]:
    keep_failed = not pe.spec.delete_failed_pod
    return tuple((p, keep_failed and pod_phase(p) == FAILED) for p in pods)


def decide(
    pe: ProcessingElement,
    pods: Sequence[dict[str, Any]],
    *,
    restartable: bool,
    previous_launches: int,
    ready: bool,
    waiting_for: str = "",
) -> Decision:
    """What to do next for ``pe`` given its live pods (``svc=pe``, owned by this PE incarnation).

    ``previous_launches``: launches of an earlier PE of the same name (its count continues).
    ``ready``: the ConfigMap, host pool and nodes are in place for a new pod (else ``waiting_for``).
    """
    status = pe.status
    launch = status.launch_count if status is not None else 0
    phase = status.phase if status is not None else None
    by_launch = {pod_launch(p): p for p in pods}

    if launch == 0:
        # Not yet recorded: adopt a pod created before a restart, else start after the predecessor.
        target = max(by_launch, default=previous_launches + 1)
        current = by_launch.get(target)
        if current is None:
            if not ready:
                return Decision(Action.WAIT, target, waiting_for)
            return Decision(Action.CREATE, target, "first launch")
        stale = [p for n, p in by_launch.items() if n != target]
        if pod_phase(current) == PENDING and not unschedulable(current) and not stale:
            return Decision(Action.NONE, target)  # recorded once it runs: one status write
        return Decision(
            Action.RECORD, target, phase=pod_phase(current), node=pod_node(current), retire=_retire(stale, pe)
        )

    if max(by_launch, default=0) > launch:
        return Decision(Action.NONE, launch)  # our own relaunch is not in the cache yet
    current = by_launch.get(launch)
    stale = [p for n, p in by_launch.items() if n != launch]
    retire = _retire(stale, pe)
    if current is None:
        if phase in (None, PENDING):
            # Written ahead and not created yet (or gone before it started): create it.
            if not ready:
                return Decision(Action.WAIT, launch, waiting_for, retire=retire)
            return Decision(Action.CREATE, launch, "launch recorded", retire=retire)
        if phase == DELETED:
            return Decision(Action.NONE, launch, retire=retire)
        if pe.spec.restart_deleted_pod:
            return Decision(Action.RELAUNCH, launch + 1, "pod deleted", retire=retire)
        return Decision(Action.RECORD, launch, phase=DELETED, retire=retire)

    current_phase = pod_phase(current)
    content = (current.get("metadata") or {}).get("annotations", {}).get(labels.CONTENT_ID)
    if pe.spec.content_id and content != pe.spec.content_id:
        return Decision(Action.RELAUNCH, launch + 1, "content changed", retire=retire)
    if current_phase == FAILED and restarts_failed(pe, restartable):
        return Decision(Action.RELAUNCH, launch + 1, "pod failed", retire=retire)
    if current_phase == SUCCEEDED and pe.spec.restart_completed_pod:
        return Decision(Action.RELAUNCH, launch + 1, "pod completed", retire=retire)
    node = pod_node(current)
    pod = pod_name_of(current)
    if (phase, status.node_name if status else None, status.pod_name if status else None) != (
        current_phase,
        node,
        pod,
    ) and not (current_phase == PENDING and phase == PENDING and not unschedulable(current)):
        return Decision(Action.RECORD, launch, phase=current_phase, node=node, retire=retire)
    return Decision(Action.NONE, launch, retire=retire)


def pod_name_of(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")
