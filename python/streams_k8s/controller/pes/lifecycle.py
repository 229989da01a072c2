"""When a PE gets a new pod: the launch state machine of one PE, as a pure decision.

The PE's ``status.launchCount`` names the launch that should be running; the pod of launch ``n``
has a name fixed by (PE uid, n) (``children.pod.pod_name``), so creating it again is harmless. A
relaunch is written ahead: the controller first records ``launchCount = n + 1`` (and the new pod
name, phase ``Pending``), then removes the old pod and creates the new one. A controller killed
anywhere in between finds the status saying what it meant and finishes the job, never launching
twice.

Restart policies (seed §8.1), applied to the pod of the current launch only:

| the pod ... | relaunch when | otherwise |
|---|---|---|
| failed | ``restartFailedPod`` (unset: the PE's SPL ``restartable``) | kept, PE phase Failed |
| completed | ``restartCompletedPod`` | kept, PE phase Succeeded |
| was taken by the cluster (``pes.disruption``) | always (nobody asked to stop the PE) | |
| was deleted (by a user) | ``restartDeletedPod`` | no pod, PE phase Deleted |
| is gone, PE phase Deleted | ``restartDeletedPod`` set since (the way back) | |
| failed, taken by the cluster | always | |
| has another content id than the PE | always (the PE's code changed) | |
| was made from other PE settings (`podTemplate` annotation) | always (the PE was edited) | |

A suspended PE (``spec.suspended``, its job's ``spec.state: Suspended``) has every pod removed and
phase ``Suspended``; once resumed it relaunches (launch count + 1). A change of ``restartNonce``
(the PE's own, or the job's) changes the pod settings: the pod is relaunched.

A replaced pod that failed is kept for diagnosis, relabelled ``svc=zombie`` (it no longer counts
as the PE's pod), when ``deleteFailedPod`` is false; any other replaced pod is deleted.
The first launch of a PE needs its ConfigMap (with the PE's content id), its host pool and the
nodes prepared for its placement; the first launch of a PE recreated under the same name
continues the launch count of the one it replaces.

A pod that has just started running is a record that can wait (``Decision.started``): the PE's
runtime reports its connectivity moments later, and that one status write carries both
(``started_status``, used by the REST API); the controller records it alone only when no report
came within a grace period. One status write per launch instead of two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, LAUNCH_COUNT_LABEL, POD_TEMPLATE_ANNOTATION
from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.controller.children.pod import pod_template_hash
from streams_k8s.controller.pes.disruption import pod_disruption

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
# PE phase when its pod was deleted and the restart policy says to leave it so.
DELETED = "Deleted"
# PE phase while its job is suspended (``spec.suspended``): its pods are removed.
SUSPENDED = "Suspended"

# Pods of earlier launches to remove: (pod, keep as zombie).
Retired = tuple[tuple[dict[str, Any], bool], ...]


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
    # Pod state to record (RECORD): phase, node and name of the current pod.
    phase: str | None = None
    node: str | None = None
    pod: str | None = None
    # RECORD only says that the current pod now runs (it may ride on a connectivity report).
    started: bool = False
    retire: Retired = ()  # pods of earlier launches to remove now


def pod_launch(pod: dict[str, Any]) -> int:
    value = (pod.get("metadata") or {}).get("labels", {}).get(LAUNCH_COUNT_LABEL, "")
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


def restarts_failed(pe: ProcessingElement) -> bool:
    """restartFailedPod, unset meaning the PE's SPL restartable flag."""
    return pe.spec.restart_failed_pod if pe.spec.restart_failed_pod is not None else pe.spec.restartable


def _retire(pods: Sequence[dict[str, Any]], pe: ProcessingElement) -> Retired:
    keep_failed = not pe.spec.delete_failed_pod
    return tuple((p, keep_failed and pod_phase(p) == FAILED) for p in pods)


def decide(
    pe: ProcessingElement,
    pods: Sequence[dict[str, Any]],
    *,
    previous_launches: int,
    ready: bool,
    waiting_for: str = "",
    ran_unrecorded: int = 0,
    disrupted: str | None = None,
) -> Decision:
    """What to do next for ``pe`` given its live pods (``svc=pe``, owned by this PE incarnation).

    ``previous_launches``: launches of an earlier PE of the same name (its count continues).
    ``ready``: the ConfigMap, host pool and nodes are in place for a new pod (else ``waiting_for``).
    ``ran_unrecorded``: the launch whose pod was seen running while its record waited for a
    connectivity report; it counts as recorded (a pod deleted meanwhile is a restart).
    ``disrupted``: why the cluster took the current launch's pod (`pes.disruption`), if it did.
    """
    status = pe.status
    launch = status.launch_count if status is not None else 0
    phase = status.phase if status is not None else None
    if ran_unrecorded > launch or (ran_unrecorded == launch > 0 and phase in (None, PENDING)):
        launch, phase = ran_unrecorded, RUNNING
    by_launch = {pod_launch(p): p for p in pods}

    if pe.spec.suspended:  # no pod while the job is suspended; resuming relaunches
        retire = _retire(pods, pe)
        if phase != SUSPENDED:
            return Decision(Action.RECORD, launch, phase=SUSPENDED, retire=retire)
        return Decision(Action.NONE, launch, retire=retire)
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
        return _record(target, current, _retire(stale, pe))

    if max(by_launch, default=0) > launch:
        return Decision(Action.NONE, launch)  # our own relaunch is not in the cache yet
    current = by_launch.get(launch)
    stale = [p for n, p in by_launch.items() if n != launch]
    retire = _retire(stale, pe)
    if current is None:
        return _without_pod(pe, launch, phase, ready, waiting_for, disrupted, retire)

    current_phase = pod_phase(current)
    content = (current.get("metadata") or {}).get("annotations", {}).get(CONTENT_ID_ANNOTATION)
    if pe.spec.content_id and content != pe.spec.content_id:
        return Decision(Action.RELAUNCH, launch + 1, "content changed", retire=retire)
    template = (current.get("metadata") or {}).get("annotations", {}).get(POD_TEMPLATE_ANNOTATION)
    if template is not None and template != pod_template_hash(pe.spec):
        return Decision(Action.RELAUNCH, launch + 1, "pod template changed", retire=retire)
    if current_phase == FAILED and (restarts_failed(pe) or pod_disruption(current)):
        return Decision(Action.RELAUNCH, launch + 1, "pod failed", retire=retire)
    if current_phase == SUCCEEDED and pe.spec.restart_completed_pod:
        return Decision(Action.RELAUNCH, launch + 1, "pod completed", retire=retire)
    if (phase, status.node_name if status else None, status.pod_name if status else None) != (
        current_phase,
        pod_node(current),
        pod_name_of(current),
    ) and not (current_phase == PENDING and phase == PENDING and not unschedulable(current)):
        return _record(launch, current, retire)
    return Decision(Action.NONE, launch, retire=retire)


def _without_pod(
    pe: ProcessingElement,
    launch: int,
    phase: str | None,
    ready: bool,
    waiting_for: str,
    disrupted: str | None,
    retire: Retired,
) -> Decision:
    """What to do for a recorded launch whose pod is not (or no longer) there."""
    if phase in (None, PENDING):
        # Written ahead and not created yet (or gone before it started): create it.
        if not ready:
            return Decision(Action.WAIT, launch, waiting_for, retire=retire)
        return Decision(Action.CREATE, launch, "launch recorded", retire=retire)
    if phase == SUSPENDED:
        return Decision(Action.RELAUNCH, launch + 1, "resumed", retire=retire)
    if phase == DELETED:
        if pe.spec.restart_deleted_pod:  # set on the PE since: the way back for its user
            return Decision(Action.RELAUNCH, launch + 1, "restartDeletedPod set", retire=retire)
        return Decision(Action.NONE, launch, retire=retire)
    if disrupted:
        return Decision(Action.RELAUNCH, launch + 1, f"pod taken by the cluster ({disrupted})", retire=retire)
    if pe.spec.restart_deleted_pod:
        return Decision(Action.RELAUNCH, launch + 1, "pod deleted", retire=retire)
    return Decision(Action.RECORD, launch, phase=DELETED, retire=retire)


def _record(launch: int, current: dict[str, Any], retire: Retired) -> Decision:
    phase = pod_phase(current)
    return Decision(
        Action.RECORD,
        launch,
        phase=phase,
        node=pod_node(current),
        pod=pod_name_of(current),
        retire=retire,
        started=phase == RUNNING and not retire,
    )


def status_fields(decision: Decision) -> dict[str, Any]:
    """The PE status a RECORD writes (null removes a field in a merge patch)."""
    return {
        "launchCount": decision.launch,
        "phase": decision.phase,
        "nodeName": decision.node,
        "podName": decision.pod,
    }


def started_status(pe: ProcessingElement, pods: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The status fields to write with a connectivity report when the PE's pod has just started."""
    # With a pod present, neither restart policies nor predecessors enter a RECORD of a running pod.
    decision = decide(pe, pods, previous_launches=0, ready=False)
    return status_fields(decision) if decision.action is Action.RECORD and decision.started else None


def pod_name_of(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")
