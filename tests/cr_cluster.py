"""A job with consistent regions in the sandbox, without the instance operator (issue 6), and the
coordinators the sandbox's pods run.

``JobWorld`` creates what the instance operator will: the ConsistentRegionOperator, one
ConsistentRegion per region, a ProcessingElement and a pod per PE; it stands in for the
operator's connectivity endpoint (the simulated PE runtime's report sets the PE's connectivity
to Full) and relaunches a failed PE pod at the next launch count. ``CoordinatorPod`` runs the
coordinator in the test's process (Manager + Coordinator) on loopback ports, for jobs that have no
coordinator pod (no operator rendered one). Where the operator renders the coordinator's
Deployment (or a coordinator pool runs), its pods run ``streams-k8s coordinator`` processes of
their own: ``coordinator_accounts`` gives them their service account, ``coordinator_url`` finds
where one listens.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from k8s_support import eventually_async, sandbox_runtime
from streams_k8s.api.contract import COORDINATOR_API_PORT, JOB_LABEL, SVC_LABEL
from streams_k8s.cli.coordinator_accounts import set_up_coordinators
from streams_k8s.consistent.coordinator import Coordinator, setup
from streams_k8s.consistent.coordinator_settings import CoordinatorSettings
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS, PROCESSING_ELEMENTS, REGION_OPERATORS
from streams_k8s.consistent.manifests import COORDINATOR_SVC
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity, is_ready

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


async def coordinator_accounts(client: KubeClient, namespace: str = NAMESPACE) -> None:
    """The namespace setup coordinators need (deploy/coordinator-rbac.yaml): their ServiceAccount,
    Role and bindings; without it the kubelet cannot mint their pods' tokens."""
    await set_up_coordinators(client, namespace)


def pod_url(sandbox: Sandbox, pod: dict[str, Any]) -> str | None:
    """Where the process of a pod the sandbox runs listens (its API port), None if none does."""
    assert sandbox.simulation is not None
    address = sandbox.simulation.host_network.where(str((pod.get("status") or {}).get("podIP") or ""))
    return f"http://{address}:{COORDINATOR_API_PORT}" if address else None


async def coordinator_url(sandbox: Sandbox, client: KubeClient, job: str, within: float = 30.0) -> str:
    """The REST API of the job's dedicated coordinator, once its pod is Ready."""
    found: list[str] = []

    async def ready() -> bool:
        selector = f"{JOB_LABEL}={job},{SVC_LABEL}={COORDINATOR_SVC}"
        pods, _ = await client.list_all(PODS, NAMESPACE, label_selector=selector)
        found[:] = [url for p in pods if is_ready(p) and (url := pod_url(sandbox, p))]
        return bool(found)

    await eventually_async(ready, within=within)
    return found[0]
