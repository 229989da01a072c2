"""`streams-k8s sandbox --demo`: a generated application submitted to a sandbox, watched until it runs.

Starts the sandbox (by default 3 nodes in 2 zones, on a free loopback port) and the instance
operator in this process, writes a generated application bundle (one of its chains a periodic
consistent region), submits it as a Job, shows PEs and pods coming up, prints what the job became
(PEs, pods, nodes, services), waits for its consistent region's first checkpoint (taken by the
coordinator process its coordinator pod runs, answered by the simulated PEs) and returns 0 once
the Job is Running and the region has checkpointed. The Job declares a simulated workload (one
chain's operator slower than its input: congestion upstream of it), so its PEs serve the
runtime's metrics on 9696, which the operator reads: the console's flow view has rates to show.
With ``keep`` the cluster stays up for kubectl until interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.cli.console import start_console
from streams_k8s.cli.coordinator_accounts import set_up_coordinators
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, JOBS, PES
from streams_k8s.controller.operator import setup as operator_setup
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import NODES, PODS, SERVICES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.nodes import POD_NETWORK
from streams_k8s.sandbox.cluster.pod_network import HOST_NETWORK
from streams_k8s.sandbox.flow.workload import WORKLOAD_ANNOTATION

NAMESPACE = "default"
JOB = "demo"
ZONES = ("zone-a", "zone-b")  # unless the command line names others
# A small pipeline: a source fanning out to 3 chains of 3 Functors and back into one sink; the first
# chain a consistent region that checkpoints every 2 seconds.
APPLICATION = SyntheticSpec(
    name="demo::Pipeline", chains=3, length=3, consistent_chains=1, consistent_period=2.0
)
PE_COUNT = 6
TIMEOUT = 120.0
CHECKPOINT_TIMEOUT = 60.0
ZONE_LABEL = "topology.kubernetes.io/zone"


def _workload() -> str:
    """The demo's simulated load (the Job's annotation): 1,000 tuples/s into every chain, the
    middle chain's second operator able to take 700/s only, so it congests its chain upstream."""
    operators: dict[str, Any] = {"Source": {"source": {"rate": 1000}}}
    for c in range(APPLICATION.chains):
        for j in range(APPLICATION.length):
            upstream = "Source" if j == 0 else f"C{c}_{j - 1}"
            cost = 1 / 700 if (c, j) == (1, 1) else 1 / 5000
            operators[f"C{c}_{j}"] = {"inputs": [upstream], "cost": cost}
    last = [f"C{c}_{APPLICATION.length - 1}" for c in range(APPLICATION.chains)]
    operators["Sink"] = {"inputs": last, "cost": 1 / 20000}
    return json.dumps({"operators": operators})


def _job(bundle: Path) -> Object:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": NAMESPACE, "annotations": {WORKLOAD_ANNOTATION: _workload()}},
        "spec": {
            "bundle": {"name": bundle.name, "file": {"path": str(bundle)}},
            "fusion": {"manual": PE_COUNT},
        },
    }


class _Snapshot:
    """The demo job's objects, read once per refresh."""

    def __init__(self, job: Object | None, pes: list[Object], pods: list[Object]) -> None:
        self.job = job
        self.pes = sorted(pes, key=lambda pe: int(pe["spec"]["id"]))
        self.pods = {p["metadata"]["labels"].get(PE_LABEL): p for p in pods}

    @classmethod
    async def read(cls, client: KubeClient) -> _Snapshot:
        selector = f"{JOB_LABEL}={JOB}"
        jobs, _ = await client.list_all(JOBS, NAMESPACE, field_selector=f"metadata.name={JOB}")
        pes, _ = await client.list_all(PES, NAMESPACE, label_selector=selector)
        pods, _ = await client.list_all(PODS, NAMESPACE, label_selector=f"{selector},{SVC_LABEL}=pe")
        return cls(jobs[0] if jobs else None, pes, pods)

    @property
    def status(self) -> dict[str, Any]:
        return dict((self.job or {}).get("status") or {})

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "Submitting")

    def running_pods(self) -> int:
        return sum(1 for p in self.pods.values() if (p.get("status") or {}).get("phase") == "Running")

    def connected(self) -> int:
        return sum(1 for pe in self.pes if (pe.get("status") or {}).get("connectivity") == "Full")


async def _watch_progress(client: KubeClient, console: Console) -> _Snapshot:
    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    deadline = time.monotonic() + TIMEOUT
    with Progress(*columns, console=console) as progress:
        bars = {
            name: progress.add_task(name, total=None)
            for name in ("PEs created", "pods running", "PEs connected")
        }
        phase = progress.add_task("job: Submitting", total=1)
        while True:
            snap = await _Snapshot.read(client)
            total = int(snap.status.get("processingElements") or 0) or None
            done = (len(snap.pes), snap.running_pods(), snap.connected())
            for (_, bar), count in zip(bars.items(), done, strict=True):
                progress.update(bar, total=total, completed=count)
            progress.update(phase, description=f"job: {snap.phase}", completed=snap.phase == "Running")
            if snap.phase in ("Running", "Failed") or time.monotonic() > deadline:
                return snap
            await asyncio.sleep(0.2)


async def _print_tables(client: KubeClient, snap: _Snapshot, console: Console) -> None:
    nodes, _ = await client.list_all(NODES)
    services, _ = await client.list_all(SERVICES, NAMESPACE, label_selector=f"{JOB_LABEL}={JOB}")
    zone = {n["metadata"]["name"]: n["metadata"].get("labels", {}).get(ZONE_LABEL, "") for n in nodes}
    service_ports = {
        s["metadata"]["name"]: ", ".join(f"{p['name']} {p['port']}" for p in s["spec"]["ports"])
        for s in services
    }

    table = Table(title=f"Job {JOB}: {snap.phase} (id {snap.status.get('id')})")
    for column in ("PE", "ops", "launch", "conn.", "pod", "phase", "node", "zone"):
        table.add_column(column, no_wrap=True)
    for pe in snap.pes:
        pe_id, status = str(pe["spec"]["id"]), pe.get("status") or {}
        pod = snap.pods.get(pe_id) or {}
        node = (pod.get("spec") or {}).get("nodeName") or ""
        table.add_row(
            pe["metadata"]["name"],
            str(len(pe["spec"].get("operators") or ())),
            str(status.get("launchCount", 0)),
            str(status.get("connectivity", "None")),
            (pod.get("metadata") or {}).get("name", ""),
            (pod.get("status") or {}).get("phase", ""),
            node,
            zone.get(node, ""),
        )
    console.print(table)

    ports = Table(title="Services (headless, one per PE)")
    for column in ("service", "DNS name", "ports"):
        ports.add_column(column)
    for name in sorted(service_ports):
        ports.add_row(name, f"{name}.{NAMESPACE}", service_ports[name])
    console.print(ports)

    per_node = Table(title="Nodes")
    for column in ("node", "zone", "PE pods"):
        per_node.add_column(column)
    for name in sorted(zone):
        count = sum(1 for p in snap.pods.values() if (p.get("spec") or {}).get("nodeName") == name)
        per_node.add_row(name, zone[name], str(count))
    console.print(per_node)


async def _checkpointed(client: KubeClient, console: Console) -> bool:
    """Wait for the job's consistent region to complete a checkpoint; say how it went."""
    deadline = time.monotonic() + CHECKPOINT_TIMEOUT
    while time.monotonic() < deadline:
        regions, _ = await client.list_all(CONSISTENT_REGIONS, NAMESPACE, label_selector=f"{JOB_LABEL}={JOB}")
        statuses = {r["metadata"]["name"]: r.get("status") or {} for r in regions}
        if statuses and all(int(s.get("lastCompletedSeqID") or 0) >= 1 for s in statuses.values()):
            for name, status in sorted(statuses.items()):
                taken = f"{status.get('state')}, checkpoint {status['lastCompletedSeqID']} taken"
                console.print(
                    f"consistent region {name}: {taken} (its coordinator pod runs `streams-k8s coordinator`;"
                    " the simulated PEs answer it)"
                )
            return True
        await asyncio.sleep(0.5)
    console.print(f"[red]the consistent region of job {JOB} took no checkpoint in {CHECKPOINT_TIMEOUT:.0f}s")
    return False


async def _until_interrupted() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _cluster_summary(nodes: list[Object]) -> str:
    zones = sorted({(n["metadata"].get("labels") or {}).get(ZONE_LABEL) or "" for n in nodes} - {""})
    return f"{len(nodes)} nodes" + (f" in zones {', '.join(zones)}" if zones else "")


async def run_demo(
    *,
    kubeconfig: Path,
    keep: bool,
    host: str = "127.0.0.1",
    port: int = 0,
    nodes: int | Path = 3,
    zones: Sequence[str] | None = None,
    tls: bool = False,
    token: str | None = None,
    console: Console | None = None,
) -> bool:
    """Run the demo on a sandbox made with these options; True when the job reached Running."""
    console = console or Console()
    # Expected retries (409 on a stale cache) are the operator's business, not the demo's output.
    logging.getLogger("streams_k8s").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="streams-demo-") as tmp:
        bundle = write_sab(Path(tmp) / "demo.sab", APPLICATION)
        os.environ["STREAMS_K8S_BUNDLE_CACHE"] = str(Path(tmp) / "bundle-cache")
        # the operator reads the simulated PEs' metrics where they listen (their pod addresses' loopback
        # counterparts): the console's flow view shows the workload
        os.environ["STREAMS_K8S_FLOW_POD_NETWORK"] = f"{POD_NETWORK}={HOST_NETWORK}"
        sandbox = Sandbox(
            host=host,
            port=port,
            nodes=nodes,
            zones=ZONES if zones is None else zones,
            tls=tls,
            token=token,
            kubeconfig_path=kubeconfig,
            flow_speed=1.0,  # its PEs serve their metrics from the Job's simulated workload
        )
        async with sandbox, await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
            await set_up_coordinators(client, NAMESPACE)  # as deploy/ does: the coordinator's account
            cluster, _ = await client.list_all(NODES)
            console.print(f"sandbox API server at {sandbox.url}: {_cluster_summary(cluster)}")
            # Free ports for the operator's servers keep the demo off 10000, 6379, 8080 and 8081.
            settings = RuntimeSettings(
                kubeconfig=str(sandbox.kubeconfig_path),
                namespace=NAMESPACE,
                bind_address="127.0.0.1",
                api_port=0,
                repository_port=0,
                health_port=0,
                metrics_port=0,
                leader_election=False,
            )
            manager = Manager(settings)
            await manager.connect()
            operator = await operator_setup(manager)
            views = contextlib.AsyncExitStack()  # the console, served from the operator's informers
            console_server = await start_console(
                manager, views, Path(tmp) / "bundle-cache", host=host, port=0, auth="none", flow=operator.flow
            )
            controller = asyncio.create_task(manager.run(handle_signals=False))
            try:
                console.print(f"console at http://{host}:{console_server.port}/jobs/{NAMESPACE}/{JOB}")
                if sandbox.pe_runtime is not None:  # the simulated PEs report to this operator
                    await sandbox.pe_runtime.report_to(f"http://127.0.0.1:{operator.api_port}")
                await client.create(JOBS, _job(bundle))
                console.print(
                    f"submitted Job {JOB}: {APPLICATION.operators} operators fused into {PE_COUNT} PEs"
                )
                snap = await _watch_progress(client, console)
                await _print_tables(client, snap, console)
                running = snap.phase == "Running" and await _checkpointed(client, console)
                if not running:
                    console.print(f"[red]job {JOB} is {snap.phase}, not Running, after {TIMEOUT:.0f}s")
                if keep:
                    console.print(f"export KUBECONFIG={sandbox.kubeconfig_path}  # kubectl get stj,stp,pods")
                    console.print("Ctrl-C stops the sandbox.")
                    await _until_interrupted()
            finally:
                manager.stop()
                with contextlib.suppress(asyncio.CancelledError):
                    await controller
                await operator.stop()
                await views.aclose()
    return running
