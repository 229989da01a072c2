"""The operator on the real control plane, as it is deployed: the project installed as its README
says (tests/conftest.py `installed`: CRDs, then `kubectl apply -k deploy/`), simulated Streams
nodes joined to the cluster (`streams_k8s.sandbox.cluster.simulation`, a client of the real API
server), and the operator's own Deployment scheduled by kube-scheduler onto one of them, where the
simulated kubelet runs it as a `streams-k8s run` process under the pod's service account.

Everything a test does goes through the real API server: kubectl as a user types it, or a client.
The simulation is reached only to disturb pods as a node would (a container killed) and to call a
pod's address (the console), as a pod of the cluster would.
"""

from __future__ import annotations

import asyncio
import os
import runpy
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from repo_paths import REPO
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object
from streams_k8s.sandbox.cluster.container_logs import LogDirectory
from streams_k8s.sandbox.cluster.egress_proxy import ClusterEgress
from streams_k8s.sandbox.cluster.nodes import NodeSpec, load_nodes
from streams_k8s.sandbox.cluster.pe_identity import is_ready
from streams_k8s.sandbox.cluster.pod_processes import ApiServerAccess
from streams_k8s.sandbox.cluster.simulation import Simulation, SimulationOptions

NAMESPACE = "streams"  # deploy/'s
OPERATOR_LABELS = "app.kubernetes.io/name=streams-k8s-operator"
SERVING_LABEL = "streams.ibm.com/serving"
OPERATOR_USER = f"system:serviceaccount:{NAMESPACE}:streams-k8s-operator"
COORDINATOR_USER = f"system:serviceaccount:{NAMESPACE}:streams-consistent-region"
# Where the Streams runtime reaches the operator: its Service, through the cluster's DNS.
CONTROLLER_URL = "http://streams-api.{namespace}:10000"
EXAMPLES = REPO / "examples"
KUBECTL = shutil.which("kubectl")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")


async def eventually(
    check: Callable[[], Awaitable[Any]], within: float, what: str, every: float = 0.2
) -> Any:
    """Wait until ``check()`` returns something truthy, and return it."""
    last: Any = None
    try:
        async with asyncio.timeout(within):
            while True:
                last = await check()
                if last:
                    break
                await asyncio.sleep(every)
    except TimeoutError:
        raise AssertionError(f"not within {within:.0f} s: {what} (last seen: {last!r})") from None
    return last


@dataclass
class RealCluster:
    plane: ControlPlane
    client: KubeClient  # the admin's
    simulation: Simulation
    bundles: Path  # where the examples' bundles are written (the operator reads them from there)

    async def kubectl(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        assert KUBECTL is not None, "kubectl is not installed"
        proc = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--namespace",
            NAMESPACE,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "KUBECONFIG": str(self.plane.admin_kubeconfig)},
            cwd=REPO,
        )
        out, err = await proc.communicate(stdin.encode() if stdin is not None else b"")
        code = proc.returncode if proc.returncode is not None else -1
        assert code == 0, f"kubectl {' '.join(args)} failed ({code}): {err.decode()}"
        return code, out.decode(), err.decode()

    async def kubectl_json(self, *args: str) -> Any:
        _, out, _ = await self.kubectl(*args, "-o", "json")
        return orjson.loads(out)

    def example(self, name: str) -> list[dict[str, Any]]:
        """The Jobs of examples/jobs/NAME.yaml, their bundle files where this suite wrote them."""
        jobs = [doc for doc in yaml.safe_load_all((EXAMPLES / "jobs" / f"{name}.yaml").read_text()) if doc]
        for job in jobs:
            file = job["spec"]["bundle"]["file"]
            file["path"] = str(self.bundles / Path(file["path"]).name)
        return jobs

    async def apply(self, *objects: dict[str, Any]) -> None:
        await self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    async def pods(self, selector: str) -> list[Object]:
        pods, _ = await self.client.list_all(PODS, NAMESPACE, label_selector=selector)
        return pods

    async def job_pods(self, job: str) -> list[Object]:
        return await self.pods(f"{JOB_LABEL}={job}")

    async def wait_ready(self, job: str, within: float = 90) -> None:
        """`kubectl wait` for the Job's kstatus Ready condition, as a user (or a pipeline) does."""
        await self.kubectl("wait", "--for=condition=Ready", f"--timeout={within:.0f}s", f"stj/{job}")

    async def serving_operator(self) -> Object:
        """The operator pod that serves (the leader, labelled serving), once it is Ready."""

        async def serving() -> Object | None:
            found = await self.pods(f"{OPERATOR_LABELS},{SERVING_LABEL}=true")
            return next((p for p in found if is_ready(p)), None)

        found: Object = await eventually(serving, 90, "a Ready operator pod that serves")
        return found

    async def operator_proxied(self) -> Object:
        """The serving operator pod, once `streams-api`'s EndpointSlice lists it ready: what
        kube-apiserver's service proxy (a user's upload) reads to find it."""
        pod = await self.serving_operator()

        async def listed() -> bool:
            slices, _ = await self.client.list_all(
                ENDPOINT_SLICES, NAMESPACE, label_selector="kubernetes.io/service-name=streams-api"
            )
            endpoints = [e for s in slices for e in s.get("endpoints") or []]
            ready = [e for e in endpoints if (e.get("conditions") or {}).get("ready")]
            return any(pod["status"]["podIP"] in e.get("addresses", ()) for e in ready)

        await eventually(listed, 60, "streams-api's EndpointSlice listing the serving operator pod, ready")
        return pod

    def address_of(self, pod: Object) -> str:
        """Where a pod's process listens on this host (a pod address, seen from inside the cluster)."""
        where = self.simulation.host_network.where(str(pod["status"]["podIP"]))
        assert where is not None, f"pod {pod['metadata']['name']} runs no process"
        return where


async def deployed(
    plane: ControlPlane, workdir: Path, nodes: list[NodeSpec] | None = None
) -> AsyncIterator[RealCluster]:
    """The examples' nodes (or ``nodes``) joined to `plane` (where `deploy/` is installed), until the
    operator's pod serves; stopped with its nodes removed. The simulation's pods are reached by
    kube-apiserver through the plane's cluster egress socket (`sandbox.cluster.egress_proxy`)."""
    client = await KubeClient.connect(str(plane.admin_kubeconfig))
    assert plane.pki is not None
    nodes = nodes if nodes is not None else load_nodes(EXAMPLES / "nodes.yaml")
    options = SimulationOptions(nodes=nodes, controller_url=CONTROLLER_URL)
    # The pods' logs next to the control plane's, kept with them when a test fails.
    simulation = Simulation(options, LogDirectory(plane.directory / "pod-logs"))
    await simulation.start(client, ApiServerAccess(plane.url, plane.pki.ca.cert))
    egress = ClusterEgress(simulation.host_network)
    await egress.start(plane.cluster_egress)
    bundles = workdir / "bundles"
    runpy.run_path(str(EXAMPLES / "bundles.py"))["write_bundles"](bundles)
    cluster = RealCluster(plane, client, simulation, bundles)
    try:
        await cluster.serving_operator()
        yield cluster
    finally:
        await egress.stop()
        await simulation.stop(remove_nodes=True)
        await client.close()
