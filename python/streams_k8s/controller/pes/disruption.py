"""Why a PE's pod went away: a disruption nobody asked for, or a deletion by a user.

A pod the cluster takes (a drain's eviction, node loss, a NoExecute taint, preemption, node
pressure) is restarted whatever the PE's `restartDeletedPod` says: nobody meant to stop the PE.
A pod deleted by a user follows the policy. They are told apart by, in order:

1. the pod's `DisruptionTarget` condition (Kubernetes >= 1.26 sets it before it deletes a pod
   for a reason of its own: `EvictionByEvictionAPI` (kubectl drain, the Eviction API),
   `PreemptionByScheduler`, `DeletionByTaintManager` (NoExecute), `DeletionByPodGC` (node gone),
   `TerminationByKubelet` (node pressure, node shutdown)), or its status reason `Evicted`;
2. the state of the node the pod ran on, as the controller sees it now: gone, not Ready,
   cordoned (`kubectl drain` cordons the node before it evicts), or tainted NoExecute with a
   taint the pod does not tolerate.

The second rule also holds after a controller restart, when the deleted pod itself is no longer
known. A user who deletes a pod on a cordoned or failing node gets it restarted too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DISRUPTION_TARGET = "DisruptionTarget"
EVICTED = "Evicted"


def _tolerated(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def pod_disruption(pod: Mapping[str, Any]) -> str | None:
    """What the pod itself says took it (rule 1), None if nothing."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET and condition.get("status") == "True":
            return str(condition.get("reason") or DISRUPTION_TARGET)
    return EVICTED if status.get("reason") == EVICTED else None


def node_disruption(
    node_name: str | None, node: Mapping[str, Any] | None, tolerations: list[Mapping[str, Any]]
) -> str | None:
    """What the state of the pod's node says (rule 2), None if the node is fine (or unknown)."""
    if not node_name:
        return None
    if node is None:
        return "NodeGone"
    spec, status = node.get("spec") or {}, node.get("status") or {}
    if spec.get("unschedulable"):
        return "NodeCordoned"
    for taint in spec.get("taints") or ():
        if taint.get("effect") == "NoExecute" and not _tolerated(tolerations, taint):
            return f"NoExecuteTaint({taint.get('key')})"
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return "NodeNotReady"
    return None


def disruption(
    pod: Mapping[str, Any] | None, node_name: str | None, node: Mapping[str, Any] | None
) -> str | None:
    """Why the pod was taken, if the cluster took it (see the module docs); None for a deletion."""
    if pod is not None and (found := pod_disruption(pod)) is not None:
        return found
    tolerations = list(((pod or {}).get("spec") or {}).get("tolerations") or ())
    return node_disruption(node_name, node, tolerations)
