"""The simulated cluster as a client of an API server, any: the embedded sandbox's, or a real
kube-apiserver (where kube-scheduler binds the pods and kube-controller-manager runs endpoints,
garbage collection, node lifecycle and namespaces).

It registers its nodes (`node_agent`: Node, Lease heartbeat), then watches through
`streams_k8s.k8s` informers what its kubelet (`kubelet`) and PE runtime (`pe_runtime`) need: the
pods bound to a node, and for the PE runtime Services, EndpointSlices and ConfigMaps (with
``flow_speed``, the Jobs too, whose simulated workload its PEs carry: `pe_flow`). It starts
its workers once those caches are filled, so the addresses of pods that already run are known
before any pod starts.

Its client should authenticate as an identity of its own (the sandbox gives it one), so that its
requests can be told apart from the operator's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams_k8s.api import Job
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS, ENDPOINT_SLICES, NODES, PODS, SERVICES
from streams_k8s.sandbox.cluster.cluster import SimulatedCluster
from streams_k8s.sandbox.cluster.cluster_dns import ClusterDns
from streams_k8s.sandbox.cluster.consistent_region import COORDINATOR_URL, ConsistentRegionParticipant
from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.kubelet import Kubelet
from streams_k8s.sandbox.cluster.node_agent import RENEW_INTERVAL, STATUS_INTERVAL, NodeAgent
from streams_k8s.sandbox.cluster.nodes import NodeSpec
from streams_k8s.sandbox.cluster.pe_flow import FlowMetrics
from streams_k8s.sandbox.cluster.pe_hooks import HookChain, HttpConnectivityReporter, Reporter, RuntimeHooks
from streams_k8s.sandbox.cluster.pe_runtime import SimulatedPeRuntime
from streams_k8s.sandbox.cluster.pod_calls import PodCalls
from streams_k8s.sandbox.cluster.pod_network import HostNetwork
from streams_k8s.sandbox.cluster.pod_processes import ApiServerAccess, PodProcesses
from streams_k8s.sandbox.cluster.pod_tokens import PodTokens
from streams_k8s.sandbox.cluster.service_endpoints import ServiceEndpoints
from streams_k8s.sandbox.worker import Worker

log = logging.getLogger(__name__)

# The simulation stands for many kubelets at once: its requests are not to queue behind a
# kubelet's default 50/s.
CLIENT_QPS, CLIENT_BURST, CLIENT_CONCURRENCY = 10_000.0, 10_000, 64
SYNC_TIMEOUT = 60.0


@dataclass
class SimulationOptions:
    nodes: list[NodeSpec]
    start_delay: float = 0.0
    termination_delay: float = 0.0
    renew_interval: float = RENEW_INTERVAL
    status_interval: float = STATUS_INTERVAL
    pe_runtime: bool = True
    controller_url: str | None = None
    pe_reporter: Reporter | None = None
    pe_hooks: RuntimeHooks | None = None
    consistent_region_url: str | None = COORDINATOR_URL
    processes: bool = True  # run the containers whose program is ours (`pod_processes`)
    # simulated seconds per second of the jobs' flow models; None: PEs serve no metrics (`pe_flow`)
    flow_speed: float | None = None


class Simulation:
    def __init__(self, options: SimulationOptions, logs: ContainerLog) -> None:
        self.options = options
        self.logs = logs
        # Answers consistent-region notifications unless the options' hooks replace it.
        self.consistent_regions: ConsistentRegionParticipant | None = None
        if options.pe_runtime and options.pe_hooks is None:
            self.consistent_regions = ConsistentRegionParticipant(options.consistent_region_url)
        self.host_network = HostNetwork()
        self.informers: dict[Resource, Informer] = {}
        self.cluster: SimulatedCluster | None = None
        self.kubelet: Kubelet | None = None
        self.pe_runtime: SimulatedPeRuntime | None = None
        self.flow: FlowMetrics | None = None  # the PEs' metrics endpoints, with `flow_speed`
        self._tasks: list[asyncio.Task[Any]] = []
        self._workdir: Path | None = None

    @property
    def workers(self) -> list[Worker[Any]]:
        runtime = [self.pe_runtime.worker] if self.pe_runtime is not None else []
        return ([self.kubelet.worker] if self.kubelet is not None else []) + runtime

    @property
    def idle(self) -> bool:
        """Every cache filled, every queue empty, no write in flight."""
        synced = all(i.synced.is_set() for i in self.informers.values())
        return synced and all(w.idle for w in self.workers)

    async def start(self, client: KubeClient, api: ApiServerAccess) -> None:
        """Register the nodes, fill the caches, then run the kubelet and the PE runtime."""
        tokens = PodTokens(client)
        self._workdir = Path(tempfile.mkdtemp(prefix="streams-simulation-"))
        processes = None
        if self.options.processes:
            processes = PodProcesses(api, tokens, self.logs, self._workdir, self._exited)
        nodes: dict[str, NodeAgent] = {}
        pods = self._informer(client, PODS, field_selector="spec.nodeName!=")
        self.kubelet = Kubelet(
            client,
            pods,
            nodes,
            self.logs,
            processes=processes,
            host_network=self.host_network,
            start_delay=self.options.start_delay,
            termination_delay=self.options.termination_delay,
        )
        self.cluster = SimulatedCluster(
            client,
            self.kubelet,
            renew_interval=self.options.renew_interval,
            status_interval=self.options.status_interval,
        )
        existing, _ = await client.list_all(NODES)
        taken = [str((n.get("spec") or {}).get("podCIDR") or "") for n in existing]
        for spec in self.options.nodes:
            node = await self.cluster.register(spec, [cidr for cidr in taken if cidr])
            taken.append(str(node["spec"]["podCIDR"]))
        if self.options.pe_runtime:
            self.pe_runtime = self._pe_runtime(client, pods, tokens)
        for informer in self.informers.values():
            self._tasks.append(asyncio.get_running_loop().create_task(informer.run(), name=informer.name))
        async with asyncio.timeout(SYNC_TIMEOUT):
            await asyncio.gather(*(i.synced.wait() for i in self.informers.values()))
        for worker in self.workers:
            worker.start()

    def _informer(self, client: KubeClient, resource: Resource, **options: Any) -> Informer:
        informer = Informer(client, resource, name=f"simulation/{resource}", **options)
        self.informers[resource] = informer
        return informer

    def _pe_runtime(self, client: KubeClient, pods: Informer, tokens: PodTokens) -> SimulatedPeRuntime:
        services = self._informer(client, SERVICES)
        endpoints = ServiceEndpoints(self._informer(client, ENDPOINT_SLICES))
        configmaps = self._informer(client, CONFIGMAPS)
        calls = PodCalls(ClusterDns(services.store, endpoints, self.host_network), tokens)
        options = self.options
        reporter = options.pe_reporter
        if reporter is None and options.controller_url:
            reporter = HttpConnectivityReporter(options.controller_url, calls)
        hooks = options.pe_hooks or self.consistent_regions
        if options.flow_speed is not None:
            jobs = self._informer(client, Resource.of(Job))
            self.flow = FlowMetrics(jobs.store, configmaps.store, self.host_network, speed=options.flow_speed)
            hooks = HookChain(*(h for h in (hooks, self.flow) if h is not None))
        return SimulatedPeRuntime(
            pods, services, configmaps, endpoints, reporter, self.logs, calls=calls, hooks=hooks
        )

    async def _exited(self, uid: str, container: str, code: int) -> None:
        if self.kubelet is not None:
            await self.kubelet.exited(uid, container, code)

    async def stop(self, *, remove_nodes: bool = False) -> None:
        """Stop everything that runs (processes included); ``remove_nodes`` deletes the nodes too
        (the cluster's pod garbage collector then deletes their pods)."""
        for worker in self.workers:
            await worker.stop()
        if self.cluster is not None:
            for name, agent in list(self.cluster.nodes.items()):
                if remove_nodes:
                    with contextlib.suppress(Exception):  # the API server may be gone already
                        await self.cluster.remove_node(name)
                else:
                    await agent.stop()
        if self.pe_runtime is not None:
            await self.pe_runtime.close()
        if self.kubelet is not None:
            await self.kubelet.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
