"""Who a PE pod is, as the runtime inside it knows itself (its job and PE id from the pod's labels
or env, its container, its pod address, its service account), and the lines it writes to its
container's log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    JOB_LABEL,
    JOB_NAME_ENV,
    PE_ID_ENV,
    PE_LABEL,
    SVC_LABEL,
    SVC_PE,
)
from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.pod_tokens import PodRef


@dataclass(frozen=True)
class PeIdentity:
    namespace: str
    pod: str
    uid: str
    job: str
    pe: str
    container: str = ""  # the runtime's container (the pod's first)
    address: str = ""  # the pod's IP
    service_account: str = "default"

    @property
    def pod_ref(self) -> PodRef:
        """The pod, as a token bound to it names it."""
        return PodRef(self.namespace, self.pod, self.uid, self.service_account)


def pe_log(logs: ContainerLog, pe: PeIdentity, text: str) -> None:
    """A line the PE runtime writes to its container's log."""
    if pe.container:
        logs.write(pe.uid, pe.container, f"pe {pe.pe} (job {pe.job}): {text}")


def is_pe_pod(pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return labels.get(APP_LABEL) == APP_VALUE and labels.get(SVC_LABEL) == SVC_PE


def is_ready(pod: dict[str, Any]) -> bool:
    """Running, not being deleted, and Ready: a started PE."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def identify(pod: dict[str, Any]) -> PeIdentity | None:
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or [{}]
    env = {e.get("name"): e.get("value") for e in containers[0].get("env") or [] if isinstance(e, dict)}
    job = labels.get(JOB_LABEL) or env.get(JOB_NAME_ENV)
    pe = labels.get(PE_LABEL) or env.get(PE_ID_ENV)
    if not job or pe is None:
        return None
    container = str(containers[0].get("name") or "")
    address = str((pod.get("status") or {}).get("podIP") or "")
    account = str(spec.get("serviceAccountName") or "default")
    return PeIdentity(
        meta["namespace"], meta["name"], meta["uid"], str(job), str(pe), container, address, account
    )
