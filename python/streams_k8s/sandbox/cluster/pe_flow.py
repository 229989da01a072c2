"""The simulated PEs' metrics endpoint: each started PE of a job that declares a simulated workload
(the Job's ``streams.ibm.com/simulated-workload`` annotation, `sandbox.flow.workload`) serves
``GET /metrics`` on its pod's ``sys-metrics`` port 9696, as the runtime's metrics thread does,
from the job's flow model (`sandbox.flow.job_flow`).

Where to reach it: pods have addresses 10.244.N.M of the simulated pod network, which this host
does not route; a PE's endpoint listens on the loopback address of its pod address
(127.245.N.M, `pod_network.host_address`), port 9696, and is entered in the simulation's
`HostNetwork` as a process-running pod's is. A scraper in the sandbox (the operator) reads a PE
pod's ``status.podIP``, maps it with `host_address`, and GETs ``http://127.245.N.M:9696/metrics``.

Each job's model advances on a clock of its own that can run faster than real time
(``speed`` simulated seconds per second), every ``tick`` seconds and before each scrape. A job
without the annotation gets no endpoint; a workload that cannot be read is said once in each PE's
log, with what is wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web

from streams_k8s.api.contract import AADL_KEY, PE_CONFIG_DIR
from streams_k8s.k8s.objects import ObjectKey
from streams_k8s.k8s.store import Store
from streams_k8s.sandbox.cluster.pe_hooks import RuntimeHooks
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity
from streams_k8s.sandbox.cluster.pe_operators import parse_operators
from streams_k8s.sandbox.cluster.pe_wiring import WiringError, mounted_config_map
from streams_k8s.sandbox.cluster.pod_endpoint import PodEndpoint
from streams_k8s.sandbox.cluster.pod_network import HostNetwork, host_address
from streams_k8s.sandbox.flow.job_flow import FlowClock, JobFlow, PlacedOperator
from streams_k8s.sandbox.flow.workload import WORKLOAD_ANNOTATION, WorkloadError, workload_of

METRICS_PORT = 9696  # sys-metrics
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JobKey = tuple[str, str]  # (namespace, job name)


class FlowMetrics(RuntimeHooks):
    def __init__(
        self,
        jobs: Store,
        configmaps: Store,
        host_network: HostNetwork,
        *,
        speed: float = 1.0,
        tick: float = 1.0,
        port: int = METRICS_PORT,
    ) -> None:
        self.jobs, self.configmaps, self.host_network = jobs, configmaps, host_network
        self.clock = FlowClock(speed)
        self.tick, self.port = tick, port
        self.flows: dict[JobKey, JobFlow] = {}
        self._texts: dict[JobKey, str] = {}  # the annotation each flow was built from
        self._servers: dict[str, tuple[JobKey, PodEndpoint]] = {}  # pod uid -> its endpoint
        # (job, PE id) -> the pod uid running it now: a replaced PE's new pod may start before the
        # old one is heard to stop, which must not take the PE out of the flow
        self._current: dict[tuple[JobKey, str], str] = {}
        self._ticker: asyncio.Task[None] | None = None

    async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
        key = (pe.namespace, pe.job)
        job = self.jobs.get(ObjectKey(*key))
        annotations = ((job or {}).get("metadata") or {}).get("annotations") or {}
        text = annotations.get(WORKLOAD_ANNOTATION)
        address = host_address(pe.address)
        if text is None or address is None:
            return
        try:
            flow = self._flow(key, text)
            operators = self._operators(pe, pod)
        except (WorkloadError, WiringError) as err:
            self.log(pe, f"no simulated load: {err}")
            return
        unknown = flow.place(pe.pe, operators)
        self._current[(key, pe.pe)] = pe.uid
        if unknown:
            self.log(pe, f"operators {', '.join(unknown)} are not in the job's simulated workload: no load")
        await self._serve(pe, key, address)
        if self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(self._advance(), name="pe-flow")

    async def pe_stopped(self, pe: PeIdentity) -> None:
        served = self._servers.pop(pe.uid, None)
        if served is None:
            return
        key, endpoint = served
        self.host_network.leave(pe.address)
        await endpoint.close()
        flow = self.flows.get(key)
        if flow is not None and self._current.get((key, pe.pe)) == pe.uid:
            del self._current[(key, pe.pe)]
            flow.remove(pe.pe)
            if not flow.pes:
                del self.flows[key], self._texts[key]

    def _flow(self, key: JobKey, text: str) -> JobFlow:
        """The job's flow; a new one when its workload annotation changed (simulated time goes on)."""
        flow = self.flows.get(key)
        if flow is None or self._texts[key] != text:
            workload = workload_of({WORKLOAD_ANNOTATION: text})
            if workload is None:
                raise WorkloadError(f"{WORKLOAD_ANNOTATION} is empty")
            fresh = JobFlow(key[1], workload, self.clock.now())
            for pe, operators in (flow.pes if flow is not None else {}).items():
                fresh.place(pe, operators)
            self.flows[key], self._texts[key] = fresh, text
            flow = fresh
        return flow

    def _operators(self, pe: PeIdentity, pod: dict[str, Any]) -> tuple[PlacedOperator, ...]:
        name = mounted_config_map(pod, PE_CONFIG_DIR)
        config = self.configmaps.get(ObjectKey(pe.namespace, name)) if name else None
        text = ((config or {}).get("data") or {}).get(AADL_KEY)
        if text is None:
            raise WiringError(f"no {PE_CONFIG_DIR}/{AADL_KEY} to read its operators from")
        return parse_operators(text)

    async def _serve(self, pe: PeIdentity, key: JobKey, address: str) -> None:
        async def metrics(_: web.Request) -> web.Response:
            flow = self.flows.get(key)
            if flow is None or self._current.get((key, pe.pe)) != pe.uid:
                return web.json_response({"error": f"PE {pe.pe} is not running"}, status=404)
            flow.advance(self.clock.now())
            return web.Response(body=flow.metrics(pe.pe).encode(), headers={"Content-Type": CONTENT_TYPE})

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        try:
            endpoint = PodEndpoint(app, address, self.port)
        except OSError as err:
            self.log(pe, f"cannot serve metrics on {address}:{self.port}: {err}")
            return
        self._servers[pe.uid] = (key, endpoint)  # before it starts: a cancelled start is closed too
        await endpoint.start()
        self.host_network.listen(pe.address, address)
        self.log(pe, f"serving metrics on {pe.address}:{self.port} (here {address}:{self.port})")

    async def _advance(self) -> None:
        while True:
            await asyncio.sleep(self.tick)
            now = self.clock.now()
            for flow in list(self.flows.values()):
                flow.advance(now)

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for _, endpoint in self._servers.values():
            await endpoint.close()
        self._servers.clear()
