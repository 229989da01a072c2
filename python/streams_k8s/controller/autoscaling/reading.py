"""Reading a job's PE metrics for the autoscaler: every running PE pod of the job, ``GET
http://<pod IP>:9696/metrics`` (``sys-metrics``), at most `CONCURRENCY` at a time.

Pod addresses are those of the cluster's pod network; where the operator does not route to them
(the sandbox's pods, 10.244.N.M, listen on 127.245.N.M), ``STREAMS_K8S_FLOW_POD_NETWORK=FROM=TO``
says where a pod address of FROM is reached (the same setting the operator's flow reading uses).
A PE that does not answer is left out of the reading (its instances then miss from the window).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
from collections.abc import Awaitable, Callable, Mapping

import aiohttp

from streams_k8s.api.contract import JOB_LABEL, METRICS_PORT, PE_LABEL
from streams_k8s.k8s.objects import Object
from streams_k8s.k8s.store import Store

POD_NETWORK_ENV = "STREAMS_K8S_FLOW_POD_NETWORK"
CONCURRENCY, TIMEOUT = 32, 2.0
JobReader = Callable[[str, str], Awaitable[Mapping[str, str]]]  # (namespace, job) -> PE id -> text


def pod_network(spec: str | None) -> Callable[[str], str]:
    """``FROM=TO`` (two networks of one size): an address of FROM mapped to TO at the same offset."""
    if not spec:
        return lambda ip: ip
    source, sep, target = spec.partition("=")
    try:
        old, new = ipaddress.ip_network(source.strip()), ipaddress.ip_network(target.strip())
    except ValueError as err:
        raise ValueError(f"{POD_NETWORK_ENV}={spec!r}: {err}") from None
    if not sep or old.num_addresses != new.num_addresses:
        raise ValueError(f"{POD_NETWORK_ENV}={spec!r}: expected FROM=TO, two networks of one size")

    def address(ip: str) -> str:
        found = ipaddress.ip_address(ip)
        if found in old:
            return str(new.network_address + (int(found) - int(old.network_address)))
        return ip

    return address


class PodMetricsReader:
    """A `JobReader` over a PE pod cache."""

    def __init__(self, pods: Store, address: Callable[[str], str] | None = None) -> None:
        self.pods = pods
        self.address = address or pod_network(os.environ.get(POD_NETWORK_ENV))
        self._session: aiohttp.ClientSession | None = None
        self._limit = asyncio.Semaphore(CONCURRENCY)

    def _targets(self, namespace: str, job: str) -> dict[str, str]:
        found = {}
        for pod in self.pods.select_by_labels({JOB_LABEL: job}, namespace):
            labels = pod["metadata"].get("labels") or {}
            ip = (pod.get("status") or {}).get("podIP")
            if ip and _running(pod) and PE_LABEL in labels:
                found[str(labels[PE_LABEL])] = f"http://{self.address(str(ip))}:{METRICS_PORT}/metrics"
        return found

    async def __call__(self, namespace: str, job: str) -> Mapping[str, str]:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT))
        session = self._session

        async def read(url: str) -> str | None:
            async with self._limit:
                try:
                    async with session.get(url) as answer:
                        return await answer.text() if answer.status == 200 else None
                except (aiohttp.ClientError, TimeoutError):
                    return None

        targets = self._targets(namespace, job)
        texts = await asyncio.gather(*(read(url) for url in targets.values()))
        return {pe: text for pe, text in zip(targets, texts, strict=True) if text is not None}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _running(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get(
        "deletionTimestamp"
    )
