"""Which PEs to read, and where: every running PE pod's address, from a pod informer's cache."""

from __future__ import annotations

import ipaddress
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
    pod: str | None = None  # its pod's name (how Prometheus labels what it scraped)


Address = Callable[[str], str]


def _host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def remapped(spec: str) -> Address:
    """``FROM=TO`` (two networks of one size): a pod address of FROM is reached at the address of
    TO at the same offset (the sandbox's pods listen on 127.245.N.M for 10.244.N.M); any other
    address as it is. `ValueError` naming what is wrong."""
    source, sep, target = spec.partition("=")
    if not sep:
        raise ValueError(f"{spec!r}: expected FROM=TO, two networks such as 10.244.0.0/16=127.245.0.0/16")
    try:
        old, new = ipaddress.ip_network(source.strip()), ipaddress.ip_network(target.strip())
    except ValueError as err:
        raise ValueError(f"{spec!r}: {err}") from None
    if old.num_addresses != new.num_addresses or old.version != new.version:
        raise ValueError(f"{spec!r}: the two networks differ in size or IP version")

    def address(ip: str) -> str:
        try:
            found = ipaddress.ip_address(ip)
        except ValueError:
            return ip
        if found not in old:
            return ip
        return str(new.network_address + (int(found) - int(old.network_address)))

    return address


def pod_targets(
    pods: Informer, port: int = METRICS_PORT, address: Address = lambda ip: ip
) -> Callable[[], list[Target]]:
    """The targets of the PE pods in ``pods``'s cache (labelled with a job and a PE), read anew
    on each call, at ``address(podIP)``; a pod not Running yet (or without an IP) is a target
    without a URL."""

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
            url = f"http://{_host(address(str(ip)))}:{port}/metrics" if running else None
            if url is not None or key not in found:  # a replacement pod's address over its predecessor's none
                found[key] = Target(key[0], key[1], url, str(meta(pod).get("name") or ""))
        return list(found.values())

    return targets
