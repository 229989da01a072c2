"""`Sandbox`: the embedded API server, its controllers and (optionally) the simulated cluster as a
client of it, started together on loopback with a kubeconfig written for clients.

Long: the sandbox's one face for tests and tools: its options, lifecycle, clients and controls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from streams_k8s.api import KINDS
from streams_k8s.api.crd import crd_manifest
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import heap
from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.cluster.cluster import SimulatedCluster
from streams_k8s.sandbox.cluster.consistent_region import COORDINATOR_URL, ConsistentRegionParticipant
from streams_k8s.sandbox.cluster.nodes import NodeSpec, load_nodes, make_nodes
from streams_k8s.sandbox.cluster.pe_hooks import Reporter, RuntimeHooks
from streams_k8s.sandbox.cluster.pe_runtime import SimulatedPeRuntime
from streams_k8s.sandbox.cluster.pod_processes import ApiServerAccess
from streams_k8s.sandbox.cluster.simulation import (
    CLIENT_BURST,
    CLIENT_CONCURRENCY,
    CLIENT_QPS,
    Simulation,
    SimulationOptions,
)
from streams_k8s.sandbox.conformance import SchemaGuard, enabled_by_environment
from streams_k8s.sandbox.control import ControlEndpoints
from streams_k8s.sandbox.controllers.gc import GarbageCollector
from streams_k8s.sandbox.controllers.manager import ControllerManager
from streams_k8s.sandbox.crd_files import install_crd, install_crds
from streams_k8s.sandbox.faults import Faults
from streams_k8s.sandbox.kubeconfig import write_kubeconfig
from streams_k8s.sandbox.pod_security import PodSecurity
from streams_k8s.sandbox.pod_streams import ContainerLogs
from streams_k8s.sandbox.rbac import bootstrap as bootstrap_rbac
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.server import ApiServer, RequestRecord
from streams_k8s.sandbox.simulation_sync import caught_up
from streams_k8s.sandbox.store import WatchEvent
from streams_k8s.sandbox.tls import TlsFiles, self_signed
from streams_k8s.sandbox.worker import Worker

log = logging.getLogger(__name__)


class Sandbox:
    """An embedded Kubernetes API on 127.0.0.1 with a simulated cluster (see README.md here):

    async with Sandbox(nodes=3) as sb:
        configuration = await sb.client_configuration()  # kubernetes_asyncio Configuration
        sb.kubeconfig_path, sb.url  # for kubectl and other clients
        sb.faults.fail(429, count=2, verb="update")  # fault injection
        await sb.settle()  # the controllers and the simulated cluster have caught up
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        crd_dirs: Sequence[Path] | None = None,
        kubeconfig_path: Path | None = None,
        history_size: int = 10_000,
        request_log_size: int = 10_000,
        object_history: int = 50,
        bookmark_interval: float = 1.0,
        simulate: bool = True,
        nodes: int | Sequence[NodeSpec] | Path = 3,
        zones: Sequence[str] | None = None,
        start_delay: float = 0.0,
        termination_delay: float = 0.0,
        pe_runtime: bool = True,
        controller_url: str | None = None,
        pe_reporter: Reporter | None = None,
        pe_hooks: RuntimeHooks | None = None,
        consistent_region_url: str | None = COORDINATOR_URL,
        flow_speed: float | None = None,
        disabled_apis: Sequence[str] = (),
        tls: bool = False,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
        schema_guard: bool | None = None,
    ) -> None:
        """Long: one assignment per keyword argument, each documented in README.md's table."""
        self.host = host
        self.port = port
        self.token = token
        # Without directories the project's own CRDs are installed, generated from the API models
        # (the same text as `crds/`, and available from a wheel too).
        self.crd_dirs = list(crd_dirs or ())
        self._project_crds = crd_dirs is None
        self.registry = Registry(history_size, object_history)
        # Every stored built-in object also checked with kubernetes-validate --strict (tests).
        self.schema_guard: SchemaGuard | None = None
        if schema_guard or (schema_guard is None and enabled_by_environment()):
            self.schema_guard = SchemaGuard()
            self.registry.store.listeners.append(self.schema_guard)
        for group_version in disabled_apis:  # e.g. "events.k8s.io/v1", to emulate an older cluster
            self._disable(group_version)
        bootstrap_rbac(self.registry)
        self.pod_security = PodSecurity(self.registry)
        self.registry.pipeline.plugins.append(self.pod_security)
        self.faults = Faults(self.registry)
        self.gc = GarbageCollector(self.registry)
        # What the simulated containers write (kubectl logs).
        self.logs = ContainerLogs(self.registry)
        self.server = ApiServer(
            self.registry,
            self.faults,
            token=token,
            bookmark_interval=bookmark_interval,
            request_log_size=request_log_size,
            logs=self.logs,
        )
        self._kubeconfig_path = kubeconfig_path
        self.tls = tls or tls_cert is not None
        self._tls_files = TlsFiles(tls_cert, tls_key or tls_cert) if tls_cert is not None else None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._holds_heap = False  # raised the GC thresholds (heap.hold) until stopped
        self._runner: web.AppRunner | None = None
        # The embedded server's kube-scheduler and kube-controller-manager; the simulated cluster,
        # a client of this server once it listens.
        self.controllers: ControllerManager | None = None
        self.simulation: Simulation | None = None
        self._simulation_client: KubeClient | None = None
        if simulate:
            self.registry.graceful_pods = True  # a kubelet finishes the deletion of bound pods
            self.controllers = ControllerManager(self.registry)
            options = SimulationOptions(_node_specs(nodes, list(zones or [])), start_delay, termination_delay)
            options.pe_runtime, options.pe_reporter, options.pe_hooks = pe_runtime, pe_reporter, pe_hooks
            options.controller_url, options.consistent_region_url = controller_url, consistent_region_url
            options.flow_speed = flow_speed
            self.simulation = Simulation(options, self.logs)
        self.server.control = ControlEndpoints(
            self.faults, lambda: self.cluster, self.server, self.delete_behind
        )

    def _disable(self, group_version: str) -> None:
        group, _, version = group_version.rpartition("/")
        for rt in list(self.registry.types.values()):
            if rt.group == group and version in rt.versions and group:
                self.registry.unregister(rt.key)

    @property
    def workers(self) -> list[Worker[Any]]:
        """The embedded controllers' workers, then the simulation's (kubelet, PE runtime)."""
        embedded = list(self.gc.workers) + (self.controllers.workers if self.controllers is not None else [])
        return embedded + (self.simulation.workers if self.simulation is not None else [])

    @property
    def cluster(self) -> SimulatedCluster | None:
        """The simulated nodes and pods, to disturb them (once started)."""
        return self.simulation.cluster if self.simulation is not None else None

    @property
    def pe_runtime(self) -> SimulatedPeRuntime | None:
        return self.simulation.pe_runtime if self.simulation is not None else None

    @property
    def consistent_regions(self) -> ConsistentRegionParticipant | None:
        """Answers consistent-region notifications (unless pe_hooks replaced it): by default at the
        jobs' coordinator Services; connect() it elsewhere if need be."""
        return self.simulation.consistent_regions if self.simulation is not None else None

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> Sandbox:
        if not self._holds_heap:
            heap.hold()
            self._holds_heap = True
        if self._project_crds:
            for kind in KINDS:
                self.install_crd(crd_manifest(kind))
        for directory in self.crd_dirs:
            self.install_crds(directory)
        for worker in self.workers:
            worker.start()
        self._tmpdir = tempfile.TemporaryDirectory(prefix="streams-sandbox-")
        if self.tls and self._tls_files is None:
            self._tls_files = self_signed(Path(self._tmpdir.name), self.host)
        context = self._tls_files.server_context() if self._tls_files is not None else None
        self._runner = web.AppRunner(self.server.app(), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=context)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]
        self.server.address = f"{self.host}:{self.port}"
        if self._kubeconfig_path is None:
            self._kubeconfig_path = Path(self._tmpdir.name) / "kubeconfig"
        ca = self._tls_files.cert if self._tls_files is not None else None
        write_kubeconfig(self._kubeconfig_path, self.url, self.token, ca)
        log.info("sandbox API server on %s (kubeconfig %s)", self.url, self._kubeconfig_path)
        if self.simulation is not None:
            await self._start_simulation(Path(self._tmpdir.name), ca)
        return self

    async def _start_simulation(self, directory: Path, ca: Path | None) -> None:
        """The simulated cluster, a client of this server under an identity of its own."""
        assert self.simulation is not None
        own = directory / "simulation.kubeconfig"
        write_kubeconfig(own, self.url, self.server.authn.simulation_token, ca)
        self._simulation_client = await KubeClient.connect(
            str(own), qps=CLIENT_QPS, burst=CLIENT_BURST, max_concurrency=CLIENT_CONCURRENCY
        )
        await self.simulation.start(self._simulation_client, ApiServerAccess(self.url, ca))

    async def stop(self) -> None:
        self.faults.clear()
        if self.simulation is not None:
            await self.simulation.stop()
        if self._simulation_client is not None:
            await self._simulation_client.close()
            self._simulation_client = None
        self.logs.close()
        for coll in self.registry.store.collections.values():
            for watcher in list(coll.watchers):
                watcher.signal("end")
        for worker in self.workers:
            await worker.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None
        if self._holds_heap:
            heap.release()
            self._holds_heap = False

    async def __aenter__(self) -> Sandbox:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- clients --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        if self._kubeconfig_path is None:
            raise RuntimeError("the sandbox is not started")
        return self._kubeconfig_path

    async def client_configuration(self) -> Any:
        """A kubernetes_asyncio `Configuration` loaded from the sandbox's kubeconfig."""
        from kubernetes_asyncio import config
        from kubernetes_asyncio.client import Configuration

        configuration = Configuration()
        await config.load_kube_config(
            config_file=str(self.kubeconfig_path), client_configuration=configuration
        )
        return configuration

    # -- assertions and control -----------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request served so far (bounded), oldest first."""
        return list(self.server.requests)

    def history(
        self, resource: str, name: str, namespace: str | None = None, group: str = ""
    ) -> list[WatchEvent]:
        """The recorded changes of one object (ADDED/MODIFIED/DELETED with the object after each)."""
        rt = self.registry.types.get((group, resource))
        if rt is None:
            raise KeyError(f"unknown resource {resource!r} in group {group!r}")
        limit = self.registry.store.object_history_size
        return self.registry.store.object_history.get((rt.store_key, (namespace or "", name)), [])[-limit:]

    async def settle(self, max_wait: float = 10.0) -> None:
        """Wait until the garbage collector and the embedded controllers have nothing left to do,
        and the simulated cluster has caught up with the server (`caught_up`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait
        quiet = 0
        while quiet < 3:
            await asyncio.sleep(0.001)
            settled = all(w.idle for w in self.workers) and caught_up(self.simulation, self.registry)
            quiet = quiet + 1 if settled else 0
            if loop.time() > deadline:
                raise TimeoutError("the sandbox did not settle")

    async def wait_for(
        self,
        resource: str,
        name: str,
        namespace: str | None = None,
        condition: Callable[[dict[str, Any] | None], bool] = lambda obj: obj is not None,
        group: str = "",
        max_wait: float = 10.0,
    ) -> dict[str, Any] | None:
        """Wait until `condition(object)` holds for one object (None while it does not exist; the
        default waits for it to exist) and return the object; TimeoutError after `max_wait`."""
        rt = self.registry.types.get((group, resource))
        if rt is None:
            raise KeyError(f"unknown resource {resource!r} in group {group!r}")
        changed = asyncio.Event()

        def listener(event_rt: ResourceType, event: WatchEvent) -> None:
            meta = event.obj["metadata"]
            if (
                event_rt.store_key == rt.store_key
                and meta["name"] == name
                and meta.get("namespace") == namespace
            ):
                changed.set()

        self.registry.store.listeners.append(listener)
        try:
            async with asyncio.timeout(max_wait):
                while True:
                    obj = self.registry.find(rt, namespace, name)
                    if condition(obj):
                        return obj
                    changed.clear()
                    await changed.wait()
        finally:
            self.registry.store.listeners.remove(listener)

    def open_watches(self, resource: str | None = None, *, simulation: bool = False) -> int:
        """How many watches are open (on one resource plural, or all); the simulated cluster's
        own watches count only with ``simulation``."""
        return sum(
            1
            for coll in self.registry.store.collections.values()
            for watcher in coll.watchers
            if (resource is None or watcher.rt.plural == resource)
            and (simulation or watcher.user != SIMULATION)
        )

    async def wait_for_watches(
        self, count: int = 1, resource: str | None = None, max_wait: float = 10.0
    ) -> None:
        """Wait until at least `count` watches are open, e.g. until a controller's informers run."""
        opened = self.registry.watch_opened
        async with asyncio.timeout(max_wait):
            while self.open_watches(resource) < count:
                opened.clear()
                await opened.wait()

    def _workers(self, names: tuple[str, ...]) -> list[Worker[Any]]:
        known = {w.name for w in self.workers}
        unknown = set(names) - known
        if unknown:
            raise KeyError(f"unknown sandbox workers {sorted(unknown)}; known: {sorted(known)}")
        return [w for w in self.workers if not names or w.name in names]

    @contextlib.asynccontextmanager
    async def paused(self, *names: str) -> AsyncIterator[None]:
        """Hold the named workers (all by default: the embedded "garbage-collector",
        "namespace-controller", "scheduler", "workload-controllers", "endpoints-controller",
        "endpointslice-controller", "pod-garbage-collector", "taint-eviction-controller",
        "serviceaccount-controller"; the simulation's "kubelet" and "pe-runtime") so a test sees the
        state before they act; they catch up when the block ends."""
        workers = [w for w in self._workers(names) if not w.paused]
        for worker in workers:
            worker.pause()
        try:
            yield
        finally:
            for worker in workers:
                worker.resume()

    def step(self, *names: str) -> int:
        """Let the named paused embedded controllers (all by default) handle what is queued for
        them, now. The simulation's workers write over HTTP: they are not stepped, only resumed."""
        simulated = {w.name for w in self.simulation.workers} if self.simulation is not None else set()
        if set(names) & simulated:
            raise ValueError(
                f"{sorted(set(names) & simulated)} write over HTTP: leave paused() to let them act"
            )
        return sum(w.run_pending() for w in self._workers(names) if w.paused and w.name not in simulated)

    def delete_behind(
        self, resource: str, name: str, namespace: str | None = None, group: str = "", force: bool = False
    ) -> None:
        """Delete an object directly (no HTTP, no faults, not in the request log), as another actor
        would behind the controller's back. `force` first drops its finalizers."""
        rt = self.registry.types.get((group, resource))
        if rt is None:
            raise KeyError(f"unknown resource {resource!r} in group {group!r}")
        if force:
            obj = self.registry.get(rt, namespace, name)
            if obj["metadata"].get("finalizers"):
                stripped = {**obj, "metadata": {**obj["metadata"], "finalizers": []}}
                self.registry.update(rt, rt.storage_version, namespace, name, stripped)
            if self.registry.find(rt, namespace, name) is None:
                return
        self.registry.delete(rt, namespace, name, {"gracePeriodSeconds": 0} if force else None)

    def install_crd(self, crd: dict[str, Any]) -> None:
        """Create (or replace) a CustomResourceDefinition, as `kubectl apply` of its manifest would."""
        install_crd(self.registry, crd)

    def install_crds(self, directory: Path) -> int:
        """Install every CRD in the YAML files of a directory; returns how many."""
        return install_crds(self.registry, directory)


def _node_specs(nodes: int | Sequence[NodeSpec] | Path, zones: list[str]) -> list[NodeSpec]:
    if isinstance(nodes, int):
        return make_nodes(nodes, zones)
    if isinstance(nodes, Path):
        return load_nodes(nodes, zones)
    return list(nodes)
