"""A pod's status as the kubelet writes it: started, a container exited or restarted, failed,
evicted, readiness flipped, and the final status of a deleted pod. Pure functions: each takes the
pod as read and returns the new status (the pod is never changed in place)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.clock import now
from streams_k8s.sandbox.conditions import set_condition

TERMINAL = ("Succeeded", "Failed")
# The exit code of a container killed with SIGKILL (an OOM kill, a crash, the end of a grace period).
KILLED = 137


def _copy(pod: dict[str, Any]) -> dict[str, Any]:
    status = dict(pod.get("status") or {})
    status["conditions"] = [dict(c) for c in status.get("conditions") or []]
    status["containerStatuses"] = [
        {**cs, "state": dict(cs.get("state") or {})} for cs in status.get("containerStatuses") or []
    ]
    return status


def set_ready(status: dict[str, Any], ready: bool, reason: str | None = None) -> None:
    value = "True" if ready else "False"
    set_condition(status, "ContainersReady", value, reason)
    set_condition(status, "Ready", value, reason)


def container_id(pod: dict[str, Any], container: str) -> str:
    return f"sandbox://{pod['metadata']['uid'][:8]}-{container}"


def started(
    pod: dict[str, Any], host_ip: str, pod_ip: str, waiting_for_readiness: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Phase Running on ``pod_ip``; containers ready but those in ``waiting_for_readiness`` (their
    readiness probe has not passed yet)."""
    status = _copy(pod)
    at = now()
    status.update(
        phase="Running",
        hostIP=host_ip,
        hostIPs=[{"ip": host_ip}],
        podIP=pod_ip,
        podIPs=[{"ip": pod_ip}],
        startTime=at,
    )
    containers = (pod.get("spec") or {}).get("containers") or []
    status["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": f"sandbox://{c.get('image', '')}",
            "containerID": container_id(pod, c["name"]),
            "ready": c["name"] not in waiting_for_readiness,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": at}},
        }
        for c in containers
    ]
    for condition in ("PodReadyToStartContainers", "Initialized"):
        set_condition(status, condition, "True")
    ready = not waiting_for_readiness
    set_ready(status, ready, None if ready else "ContainersNotReady")
    return status


def waiting(pod: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    """Still Pending: its containers could not be started yet, and why (as ``kubectl describe``
    and ``kubectl logs`` show it)."""
    status = _copy(pod)
    status["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "started": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": message}},
        }
        for c in (pod.get("spec") or {}).get("containers") or []
    ]
    return status


def _terminated(cs: dict[str, Any], exit_code: int, reason: str, at: str) -> dict[str, Any]:
    return {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": (cs["state"].get("running") or {}).get("startedAt", at),
        "finishedAt": at,
        "containerID": cs.get("containerID", ""),
    }


def exited(
    pod: dict[str, Any], exit_codes: dict[str, int], restart: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Containers exited with these codes; those in ``restart`` run again (restartPolicy), the
    others stay terminated. All terminated: phase Succeeded (every code 0) or Failed."""
    status = _copy(pod)
    at = now()
    for cs in status["containerStatuses"]:
        code = exit_codes.get(cs["name"])
        if code is None:
            continue
        terminated = _terminated(cs, code, "Completed" if code == 0 else "Error", at)
        if cs["name"] in restart:
            cs["restartCount"] = int(cs.get("restartCount", 0)) + 1
            cs["lastState"] = {"terminated": terminated}
            cs["state"] = {"running": {"startedAt": at}}
        else:
            cs["state"] = {"terminated": terminated}
            cs["ready"] = False
            cs["started"] = False
    states = [cs["state"] for cs in status["containerStatuses"]]
    if states and all("terminated" in s for s in states):
        ok = all(s["terminated"]["exitCode"] == 0 for s in states)
        status["phase"] = "Succeeded" if ok else "Failed"
        set_ready(status, False, "PodCompleted" if ok else "PodFailed")
    elif any("terminated" in s for s in states):
        set_ready(status, False, "ContainersNotReady")
    return status


def restarts(pod: dict[str, Any], exit_codes: dict[str, int]) -> frozenset[str]:
    """The containers of ``exit_codes`` the pod's restartPolicy runs again."""
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    return frozenset(
        name for name, code in exit_codes.items() if policy == "Always" or (policy == "OnFailure" and code)
    )


def failed(pod: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    """The pod fails as a whole (phase Failed with a reason), e.g. a node-level error."""
    status = _copy(pod)
    at = now()
    status.update(phase="Failed", reason=reason, message=message)
    for cs in status["containerStatuses"]:
        cs["state"] = {"terminated": {"exitCode": KILLED, "reason": reason, "finishedAt": at}}
        cs["ready"] = False
    set_ready(status, False, "PodFailed")
    return status


def evicted(pod: dict[str, Any], message: str) -> dict[str, Any]:
    """The kubelet evicts the pod: phase Failed, reason Evicted, DisruptionTarget condition."""
    status = failed(pod, "Evicted", message)
    set_condition(status, "DisruptionTarget", "True", "TerminationByKubelet", message)
    return status


def readiness(pod: dict[str, Any], ready: dict[str, bool]) -> dict[str, Any]:
    """Containers' readiness (as their readiness probes say); the pod is Ready when all are."""
    status = _copy(pod)
    for cs in status["containerStatuses"]:
        if cs["name"] in ready and "running" in cs["state"]:
            cs["ready"] = ready[cs["name"]]
    everyone = bool(status["containerStatuses"]) and all(
        cs.get("ready") for cs in status["containerStatuses"]
    )
    set_ready(status, everyone, None if everyone else "ContainersNotReady")
    return status


def finished(pod: dict[str, Any], exit_codes: dict[str, int]) -> dict[str, Any]:
    """The final status of a deleted pod once its containers stopped: each running container
    terminated (with its process's code, else 0: it stopped on SIGTERM), phase Succeeded when
    every code is 0, else Failed (a pod that never started: Failed)."""
    status = _copy(pod)
    at = now()
    codes = []
    for cs in status["containerStatuses"]:
        if "running" in cs["state"]:
            code = exit_codes.get(cs["name"], 0)
            cs["state"] = {"terminated": _terminated(cs, code, "Completed" if code == 0 else "Error", at)}
        cs["ready"] = False
        cs["started"] = False
        codes.append(int((cs["state"].get("terminated") or {}).get("exitCode", KILLED)))
    status["phase"] = "Succeeded" if codes and not any(codes) else "Failed"
    set_ready(status, False, "PodCompleted" if status["phase"] == "Succeeded" else "PodFailed")
    return status
