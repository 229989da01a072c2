"""A job with consistent regions in the sandbox, without the instance operator (issue 6).

``JobWorld`` creates what the instance operator will: the ConsistentRegionOperator, one
ConsistentRegion per region, a ProcessingElement and a pod per PE; it stands in for the
operator's connectivity endpoint (the simulated PE runtime's report sets the PE's connectivity
to Full) and relaunches a failed PE pod at the next launch count. ``CoordinatorPod`` runs the
coordinator as its pod would (Manager + Coordinator) on loopback ports.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from k8s_support import sandbox_runtime
from streams_k8s.api.contract import coordinator_service_name
from streams_k8s.consistent.coordinator import Coordinator, setup
from streams_k8s.consistent.coordinator_settings import CoordinatorSettings
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS, PROCESSING_ELEMENTS, REGION_OPERATORS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import ENDPOINT_SLICES, PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.write_guard import peer
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity, session_from

NAMESPACE = "default"


def region_spec(index: int, pes: list[int], **overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "regionIndex": index,
        "trigger": "periodic",
        "period": 0.3,
        "drainTimeout": 5.0,
        "resetTimeout": 5.0,
        "maxConsecutiveResetAttempts": 3,
        "pesInRegion": pes,
        "operatorsToStartRegionMap": {"src": True},
        "operatorsToTriggerMap": {},
    }
    spec.update(overrides)
    return spec


@dataclass
class JobWorld:
    """One job's objects, created over the sandbox's HTTP API."""

    client: KubeClient
    job: str
    regions: dict[int, dict[str, Any]]  # region index -> ConsistentRegion spec
    namespace: str = NAMESPACE
    mode: str = "dedicated"
    operator: dict[str, Any] = field(default_factory=dict)  # the ConsistentRegionOperator, as created
    pe_uids: dict[int, str] = field(default_factory=dict)
    launches: dict[int, int] = field(default_factory=dict)

    @property
    def pes(self) -> list[int]:
        return sorted({pe for spec in self.regions.values() for pe in spec["pesInRegion"]})

    def region_name(self, index: int) -> str:
        return f"{self.job}-cr{index}"

    @property
    def operator_name(self) -> str:
        return f"{self.job}-consistent-region-operator"

    async def create(self) -> None:
        labels = {"streams.ibm.com/job": self.job}
        self.operator = await self.client.create(
            REGION_OPERATORS,
            {
                "apiVersion": "streams.ibm.com/v1",
                "kind": "ConsistentRegionOperator",
                "metadata": {"name": self.operator_name, "namespace": self.namespace, "labels": labels},
                "spec": {
                    "jobName": self.job,
                    "jobUid": f"uid-{self.job}",
                    "numRegions": len(self.regions),
                    "mode": self.mode,
                },
            },
        )
        for index, spec in self.regions.items():
            await self.client.create(
                CONSISTENT_REGIONS,
                {
                    "apiVersion": "streams.ibm.com/v1",
                    "kind": "ConsistentRegion",
                    "metadata": {
                        "name": self.region_name(index),
                        "namespace": self.namespace,
                        "labels": labels,
                    },
                    "spec": spec,
                },
            )
        for pe in self.pes:
            regions = [i for i, spec in self.regions.items() if pe in spec["pesInRegion"]]
            created = await self.client.create(
                PROCESSING_ELEMENTS,
                {
                    "apiVersion": "streams.ibm.com/v1",
                    "kind": "ProcessingElement",
                    "metadata": {
                        "name": f"{self.job}-{pe}",
                        "namespace": self.namespace,
                        "labels": {**labels, "streams.ibm.com/cr": "true"},
                    },
                    "spec": {"id": pe, "regions": regions},
                },
            )
            self.pe_uids[pe] = created["metadata"]["uid"]
            await self.launch(pe)

    async def launch(self, pe: int) -> None:
        """The next launch of the PE: its status (connectivity None) then its pod."""
        launch = self.launches[pe] = self.launches.get(pe, 0) + 1
        await self.client.patch_status(
            PROCESSING_ELEMENTS,
            f"{self.job}-{pe}",
            {"launchCount": launch, "connectivity": "None"},
            self.namespace,
        )
        await self.client.create(PODS, self.pod(pe, launch))

    def pod(self, pe: int, launch: int) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{self.job}-{pe}-l{launch}",
                "namespace": self.namespace,
                "labels": {
                    "app": "streams",
                    "svc": "pe",
                    "streams.ibm.com/job": self.job,
                    "streams.ibm.com/pe": str(pe),
                    "streams.ibm.com/launch-count": str(launch),
                    "streams.ibm.com/cr": "true",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "streams.ibm.com/v1",
                        "kind": "ProcessingElement",
                        "name": f"{self.job}-{pe}",
                        "uid": self.pe_uids[pe],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "pe", "image": "streams-runtime:test"}],
            },
        }

    def pod_name(self, pe: int) -> str:
        return f"{self.job}-{pe}-l{self.launches[pe]}"

    async def status(self, index: int) -> dict[str, Any]:
        obj = await self.client.get(CONSISTENT_REGIONS, self.region_name(index), self.namespace)
        status: dict[str, Any] = obj.get("status") or {}
        return status


class ConnectivityToPeStatus:
    """The instance operator's connectivity endpoint: the PE runtime's report lands in the PE's
    status (what the coordinator watches)."""

    def __init__(self) -> None:
        self.client: KubeClient | None = None  # set once the sandbox is up

    async def __call__(self, pe: PeIdentity, state: str) -> None:
        if self.client is None:
            raise RuntimeError("the stand-in operator is not connected yet")
        await self.client.patch_status(
            PROCESSING_ELEMENTS, f"{pe.job}-{pe.pe}", {"connectivity": state}, pe.namespace
        )


@dataclass
class CoordinatorPod:
    """A coordinator process (Manager + Coordinator) against the sandbox."""

    sandbox: Sandbox
    settings: CoordinatorSettings
    manager: Manager | None = None
    coordinator: Coordinator | None = None
    task: asyncio.Task[int] | None = None

    async def start(self) -> CoordinatorPod:
        runtime = sandbox_runtime(self.sandbox, namespace=self.settings.namespace, shutdown_grace=1.0)
        self.manager = Manager(runtime)
        await self.manager.connect()
        self.coordinator = await setup(self.manager, self.settings)
        self.task = asyncio.create_task(self.manager.run(handle_signals=False))
        return self

    @property
    def url(self) -> str:
        assert self.coordinator is not None
        return f"http://127.0.0.1:{self.coordinator.api_port}"

    @property
    def metrics_url(self) -> str:
        assert self.manager is not None
        assert self.manager.health is not None
        return f"http://127.0.0.1:{self.manager.health.metrics_port}/metrics"

    async def stop(self) -> None:
        """Stop the process (as a deleted pod would be)."""
        assert self.manager is not None
        assert self.coordinator is not None
        assert self.task is not None
        await self.coordinator.close()
        self.manager.stop()
        await self.task


def dedicated(job: str, **overrides: Any) -> CoordinatorSettings:
    return loopback_settings(mode="dedicated", job=job, pod_name=f"streams-{job}-coordinator", **overrides)


def loopback_settings(**overrides: Any) -> CoordinatorSettings:
    """Coordinator settings for a test: loopback, any free port, no UDP, no TokenReview."""
    values: dict[str, Any] = {
        "namespace": NAMESPACE,
        "bind_address": "127.0.0.1",
        "api_port": 0,
        "udp_hints": False,
        "token_review": False,
    }
    values.update(overrides)
    return CoordinatorSettings(**values)


def shared(pod_name: str, **overrides: Any) -> CoordinatorSettings:
    return loopback_settings(mode="shared", pod_name=pod_name, **overrides)


class JobServiceRouter:
    """Stands in for the cluster network in front of each job's selector-less
    ``streams-<job>-consistentregion-api`` Service: forwards ``/jobs/{namespace}/{job}/...`` to
    the endpoint the job's coordinator published (every pod's port is on loopback here)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> JobServiceRouter:
        app = web.Application()
        app.router.add_route("*", "/jobs/{namespace}/{job}/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def endpoint(self, namespace: str, job: str) -> tuple[str, int] | None:
        """(pod name, API port) the job's API Service points at (its EndpointSlice)."""
        try:
            endpoint_slice = await self.client.get(ENDPOINT_SLICES, coordinator_service_name(job), namespace)
        except ApiError:
            return None
        ports = {p["name"]: p["port"] for p in endpoint_slice.get("ports") or ()}
        for endpoint in endpoint_slice.get("endpoints") or ():
            return endpoint["targetRef"]["name"], ports["sys-api"]
        return None

    async def _forward(self, request: web.Request) -> web.Response:
        endpoint = await self.endpoint(request.match_info["namespace"], request.match_info["job"])
        if endpoint is None:
            return web.Response(status=503, text="the job's API Service has no endpoint")
        url = f"http://127.0.0.1:{endpoint[1]}{request.rel_url}"
        # As a Service does, the caller's address reaches the pod (the coordinator trusts PE pods
        # by it): the forwarded connection leaves from it.
        timeout = aiohttp.ClientTimeout(total=10)
        try:
            async with (
                session_from(peer(request), timeout) as http,
                http.request(request.method, url, data=await request.read()) as answer,
            ):
                return web.Response(
                    status=answer.status, body=await answer.read(), content_type=answer.content_type
                )
        except (aiohttp.ClientError, RuntimeError) as err:  # RuntimeError: the router is closing
            return web.Response(status=503, text=str(err))

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
