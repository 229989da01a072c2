"""Who a PE pod is, as the runtime inside it knows itself (its job and PE id from the pod's labels
or env, its container, its pod address), and what leaves from it: lines in its container's log,
and HTTP calls from its pod's address."""

from __future__ import annotations

import functools
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

import aiohttp

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
from streams_k8s.sandbox.pod_streams import ContainerLogs


@dataclass(frozen=True)
class PeIdentity:
    namespace: str
    pod: str
    uid: str
    job: str
    pe: str
    container: str = ""  # the runtime's container (the pod's first)
    address: str = ""  # the pod's IP: where its calls come from


@functools.cache
def _bindable(address: str) -> bool:
    """Whether connections can leave from ``address`` (all of 127.0.0.0/8 on Linux)."""
    try:
        if not ipaddress.ip_address(address).is_loopback:
            return False
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
            probe.bind((address, 0))
    except (ValueError, OSError):
        return False
    return True


def session_from(address: str, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    """An HTTP session whose connections leave from ``address`` when this host has it (the
    sandbox's pod addresses are loopback ones), else from wherever the system picks."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0)) if _bindable(address) else None
    return aiohttp.ClientSession(timeout=timeout, connector=connector)


def pe_log(logs: ContainerLogs, pe: PeIdentity, text: str) -> None:
    """A line the PE runtime writes to its container's log."""
    if pe.container:
        logs.write(pe.uid, pe.container, f"pe {pe.pe} (job {pe.job}): {text}")


def is_pe_pod(pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return labels.get(APP_LABEL) == APP_VALUE and labels.get(SVC_LABEL) == SVC_PE


def identify(pod: dict[str, Any]) -> PeIdentity | None:
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    env = {e.get("name"): e.get("value") for e in containers[0].get("env") or [] if isinstance(e, dict)}
    job = labels.get(JOB_LABEL) or env.get(JOB_NAME_ENV)
    pe = labels.get(PE_LABEL) or env.get(PE_ID_ENV)
    if not job or pe is None:
        return None
    container = str(containers[0].get("name") or "")
    address = str((pod.get("status") or {}).get("podIP") or "")
    return PeIdentity(meta["namespace"], meta["name"], meta["uid"], str(job), str(pe), container, address)
