"""Which PEs to read, and where: every running PE pod's address, from a pod informer's cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from streams_k8s.api.contract import JOB_LABEL, METRICS_PORT, PE_LABEL, SVC_LABEL, SVC_PE
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import ObjectKey, meta


@dataclass(frozen=True, slots=True)
class Target:
    """A PE of a job; ``url`` None while its pod has no address (the PE counts as pending)."""

    job: ObjectKey
    pe: int
    url: str | None


def _host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def pod_targets(pods: Informer, port: int = METRICS_PORT) -> Callable[[], list[Target]]:
    """The targets of the PE pods in ``pods``'s cache (labelled with a job and a PE), read anew
    on each call; a pod not Running yet (or without an IP) is a target without a URL."""

    def targets() -> list[Target]:
        found: dict[tuple[ObjectKey, int], Target] = {}
        for pod in pods.store.select():
            labels = meta(pod).get("labels") or {}
            job, pe = labels.get(JOB_LABEL), str(labels.get(PE_LABEL, ""))
            if labels.get(SVC_LABEL) != SVC_PE or not job or not pe.isdigit():
                continue
            status = pod.get("status") or {}
            ip = status.get("podIP")
            running = status.get("phase") == "Running" and isinstance(ip, str) and ip
            key = (ObjectKey(str(meta(pod).get("namespace") or ""), str(job)), int(pe))
            url = f"http://{_host(str(ip))}:{port}/metrics" if running else None
            if url is not None or key not in found:  # a replacement pod's address over its predecessor's none
                found[key] = Target(key[0], key[1], url)
        return list(found.values())

    return targets
