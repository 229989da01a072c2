"""What the coordinator reads of Kubernetes objects: the job an object, or a request's Host header,
is for, and what region health needs of a PE pod.
"""

from __future__ import annotations

from streams_k8s.api.contract import (
    COORDINATOR_SERVICE_AFFIXES,
    JOB_LABEL,
    LAUNCH_COUNT_LABEL,
    PE_LABEL,
)
from streams_k8s.consistent.health import PodObservation
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# The Service a job's PEs reach their coordinator through: streams-<job>-consistentregion-api.
API_SERVICE_PREFIX, API_SERVICE_SUFFIX = COORDINATOR_SERVICE_AFFIXES


def job_of(obj: Object) -> ObjectKey | None:
    name = (meta(obj).get("labels") or {}).get(JOB_LABEL)
    return ObjectKey(meta(obj).get("namespace") or "", name) if name else None


def job_of_host(host: str) -> ObjectKey | None:
    """``streams-<job>-consistentregion-api.<ns>[.svc...][:port]`` -> (ns, job)."""
    labels = host.rsplit(":", 1)[0].split(".")
    service = labels[0]
    if len(labels) < 2 or not (
        service.startswith(API_SERVICE_PREFIX) and service.endswith(API_SERVICE_SUFFIX)
    ):
        return None
    job = service[len(API_SERVICE_PREFIX) : -len(API_SERVICE_SUFFIX)]
    return ObjectKey(labels[1], job) if job else None


def pod_observation(pod: Object) -> PodObservation | None:
    """What health needs of a PE pod; None for a pod without the PE labels."""
    labels = meta(pod).get("labels") or {}
    try:
        pe, launch = int(labels[PE_LABEL]), int(labels.get(LAUNCH_COUNT_LABEL, "1"))
    except (KeyError, ValueError):
        return None
    owner = next((r.get("uid") for r in meta(pod).get("ownerReferences") or () if r.get("controller")), None)
    return PodObservation(pe, launch, owner, (pod.get("status") or {}).get("phase"))
