"""The simulated PE runtime: what the Streams PE container would tell the controller.

For every Running and Ready pod labelled `app=streams, svc=pe`, it reports connectivity `"Full"`
once per pod (per launch), as the runtime's connectivity thread does:
`PUT {controller}/api/state/job/{job}/pe/{pe}/connectivity` with the JSON string body, expecting
a 2xx; failures are retried. The job and PE id come from the `streams.ibm.com/job` and
`streams.ibm.com/pe` labels (or the STREAMS_JOB_NAME / STREAMS_PE_ID env of the first container).

Calls leave from the pod's own address (`status.podIP`, a loopback address in the sandbox's pod
network), so a server that trusts PE pods by source address (the instance API's write guard)
sees them as a cluster would show them.

The reporter is pluggable (any async callable), and `RuntimeHooks` is where further behaviour
attaches: the runtime calls `pe_started` / `pe_stopped`; `consistent_region.ConsistentRegionParticipant`
is the hook that answers consistent-region drains and resets.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.worker import Worker
from streams_k8s.sandbox.workloads import is_ready

log = logging.getLogger(__name__)

PODS = ("", "pods")
JOB_LABEL = "streams.ibm.com/job"
PE_LABEL = "streams.ibm.com/pe"


@dataclass(frozen=True)
class PeIdentity:
    namespace: str
    pod: str
    uid: str
    job: str
    pe: str
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


Reporter = Callable[[PeIdentity, str], Awaitable[None]]


class RuntimeHooks:
    """Extension point for behaviour beyond connectivity (consistent regions): override these."""

    async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
        """The PE's pod is Running and Ready (connectivity is reported next)."""

    async def pe_stopped(self, pe: PeIdentity) -> None:
        """The PE's pod terminated or was deleted."""

    async def close(self) -> None:
        """The sandbox stops: release what the hooks hold."""


class HttpConnectivityReporter:
    """Reports to the controller's REST API like the real runtime (PUT, JSON string body), from
    the PE's pod address."""

    def __init__(self, base_url: str, timeout: float = 2.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)

    async def __call__(self, pe: PeIdentity, state: str) -> None:
        url = f"{self.base_url.format(namespace=pe.namespace)}/api/state/job/{pe.job}/pe/{pe.pe}/connectivity"
        body = orjson.dumps(state)
        async with (
            session_from(pe.address, self.timeout) as session,
            session.put(url, data=body, headers={"Content-Type": "application/json"}) as response,
        ):
            if response.status >= 300:
                raise RuntimeError(f"PUT {url} answered {response.status}: {(await response.text())[:200]}")

    async def close(self) -> None:
        """Nothing held between reports (each leaves from its own pod's address)."""


def is_pe_pod(pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return labels.get("app") == "streams" and labels.get("svc") == "pe"


def identify(pod: dict[str, Any]) -> PeIdentity | None:
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    env = {e.get("name"): e.get("value") for e in containers[0].get("env") or [] if isinstance(e, dict)}
    job = labels.get(JOB_LABEL) or env.get("STREAMS_JOB_NAME")
    pe = labels.get(PE_LABEL) or env.get("STREAMS_PE_ID")
    if not job or pe is None:
        return None
    address = str((pod.get("status") or {}).get("podIP") or "")
    return PeIdentity(meta["namespace"], meta["name"], meta["uid"], str(job), str(pe), address)


class SimulatedPeRuntime:
    def __init__(
        self,
        registry: Registry,
        reporter: Reporter | None,
        *,
        hooks: RuntimeHooks | None = None,
        retry_interval: float = 1.0,
    ) -> None:
        self.registry = registry
        self.reporter = reporter
        self.hooks = hooks or RuntimeHooks()
        self.retry_interval = retry_interval
        self.pods_rt: ResourceType = registry.types[PODS]
        self.worker: Worker[tuple[str, str]] = Worker("pe-runtime", self._sync)
        self.started: dict[str, PeIdentity] = {}  # pod uid -> identity, once Running and Ready
        self.reported: set[str] = set()  # pod uids whose connectivity the controller accepted
        self._reporting: set[str] = set()  # pod uids with a report in flight
        self.failures: list[tuple[PeIdentity, str]] = []
        self._stopped: list[PeIdentity] = []
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key != PODS or not is_pe_pod(event.obj):
            return
        key = (event.obj["metadata"]["namespace"], event.obj["metadata"]["name"])
        if event.type == "DELETED" or not is_ready(event.obj):
            pe = self.started.pop(event.obj["metadata"]["uid"], None)
            self.reported.discard(event.obj["metadata"]["uid"])
            if pe is None:
                return
            self._stopped.append(pe)
        self.worker.add(key)

    async def report_to(self, controller_url: str | None) -> None:
        """Report to this controller REST API from now on (None: stop reporting); PEs already
        running report to it too, as the runtime retries until the controller answers."""
        await self._close_reporter()
        self.reporter = HttpConnectivityReporter(controller_url) if controller_url else None
        for pe in self.started.values():
            self.worker.add((pe.namespace, pe.pod))

    async def _sync(self, key: tuple[str, str]) -> None:
        while self._stopped:
            await self.hooks.pe_stopped(self._stopped.pop(0))
        pod = self.registry.find(self.pods_rt, *key)
        if pod is None or not is_ready(pod):
            return
        uid = pod["metadata"]["uid"]
        pe = self.started.get(uid) or identify(pod)
        if pe is None:
            log.warning(
                "PE pod %s/%s has no %s/%s labels: connectivity not reported", *key, JOB_LABEL, PE_LABEL
            )
            return
        if uid not in self.started:
            self.started[uid] = pe
            await self.hooks.pe_started(pe, pod)
        if self.reporter is None or uid in self.reported or uid in self._reporting:
            return
        self._reporting.add(uid)
        self.worker.spawn(self._report(self.reporter, key, pe))  # every PE reports on its own

    async def _report(self, reporter: Reporter, key: tuple[str, str], pe: PeIdentity) -> None:
        try:
            await reporter(pe, "Full")
        except Exception as exc:  # an unreachable controller is retried, as by the real runtime
            self.failures.append((pe, str(exc)))
            asyncio.get_running_loop().call_later(self.retry_interval, self.worker.add, key)
            return
        finally:
            self._reporting.discard(pe.uid)
        if pe.uid in self.started:  # not stopped meanwhile (a restarted pod reports again)
            self.reported.add(pe.uid)

    async def close(self) -> None:
        await self.hooks.close()
        await self._close_reporter()

    async def _close_reporter(self) -> None:
        close = getattr(self.reporter, "close", None)
        if close is not None:
            await close()
