"""`streams-k8s sandbox --demo`: the README's first command, run as a user runs it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from k8s_support import eventually_async
from operator_support import free_port
from streams_k8s.cli import main
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import NODES, PODS
from streams_k8s.sandbox.cluster.pod_network import host_address

ZONE = "topology.kubernetes.io/zone"

CLI = Path(sys.executable).with_name("streams-k8s")


def test_demo_reaches_running_and_prints_what_the_job_became(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(CLI), "sandbox", "--demo"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 nodes in zones zone-a, zone-b" in out
    assert "Job demo: Running" in out
    assert re.search(r"checkpoint \d+ taken", out)  # its coordinator pod runs the coordinator
    for pe in range(6):
        assert f"demo-{pe}.default" in out  # services
    assert out.count("Running │") >= 6  # every PE's pod
    assert "zone-b" in out
    # Its kubeconfig pointed at a server that has stopped: it is not left in the folder it ran from.
    assert not (tmp_path / "streams-sandbox.kubeconfig").exists()


async def test_demo_keep_leaves_a_cluster_for_kubectl_shaped_by_the_flags(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        str(CLI),
        "sandbox",
        "--demo",
        "--keep",
        "--kubeconfig",
        str(kubeconfig),
        *("--nodes", "2", "--zones", "east", "--host", "127.0.0.1", "--port", str(port)),
        stdout=asyncio.subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert process.stdout is not None
    try:
        printed = []
        async with asyncio.timeout(180):
            while b"Ctrl-C" not in (line := await process.stdout.readline()):
                assert line, "the demo ended before keeping the cluster"
                printed.append(line.decode())
        assert f"sandbox API server at http://127.0.0.1:{port}: 2 nodes in zones east\n" in printed
        async with await KubeClient.connect(str(kubeconfig)) as client:
            job = await client.get(JOBS, "demo", "default")
            nodes, _ = await client.list_all(NODES)
            # Its PEs carry the Job's simulated workload and serve the runtime's metrics on 9696:
            # the middle chain's slow operator (700/s of the 1,000/s) has its input queue filling.
            queued: dict[str, float] = {}

            async def congested() -> bool:
                async with aiohttp.ClientSession() as http:
                    queued.update(await _queued(client, http))
                return queued.get("C1_1", 0) > 0

            await eventually_async(congested, within=30)
        assert queued["C0_1"] == 0
        assert job["status"]["phase"] == "Running"
        assert sorted(n["metadata"]["labels"][ZONE] for n in nodes) == ["east", "east"]
        # The console the demo printed serves the job while the cluster is kept.
        url = next(line.split()[-1] for line in printed if line.startswith("console at "))
        assert url.endswith("/jobs/default/demo")
        async with (
            aiohttp.ClientSession() as session,
            session.get(url.replace("/jobs/", "/api/jobs/")) as answer,
        ):
            assert answer.status == 200
            assert (await answer.json())["job"]["phase"] == "Running"

        # ... and the flow the operator reads from the PEs: the slow operator's queue filling
        async def flowing() -> bool:
            async with (
                aiohttp.ClientSession() as session,
                session.get(url.replace("/jobs/", "/api/jobs/")) as answer,
            ):
                flow = (await answer.json()).get("flow") or {}
            slow = (flow.get("operators") or {}).get("C1_1") or {}
            return (slow.get("fill") or 0) > 0 and slow.get("level") not in (None, "unknown")

        await eventually_async(flowing, within=60)
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _queued(client: KubeClient, session: aiohttp.ClientSession) -> dict[str, float]:
    """Each operator's op_input_n_tuples_queued, read from every demo PE pod's sys-metrics port."""
    pods, _ = await client.list_all(PODS, "default", label_selector="streams.ibm.com/job=demo,svc=pe")
    queued: dict[str, float] = {}
    for pod in pods:
        address = host_address(pod["status"].get("podIP") or "")
        try:
            async with session.get(f"http://{address}:9696/metrics") as answer:
                text = await answer.text() if answer.status == 200 else ""
        except aiohttp.ClientError:  # a PE (re)starting: read on the next try
            continue
        for family in text_string_to_metric_families(text):
            if family.name == "op_input_n_tuples_queued":
                queued |= {s.labels["name"]: s.value for s in family.samples}
    return queued


def test_flags_the_demo_cannot_honour_are_refused(tmp_path: Path) -> None:
    for args, message in (
        (["--demo", "--controller-url", "http://127.0.0.1:1"], "--controller-url cannot be used with --demo"),
        (
            ["--demo", "--no-cluster", "--duration", "5"],
            "--no-cluster, --duration cannot be used with --demo",
        ),
        (["--keep"], "--keep needs --demo"),
    ):
        result = CliRunner().invoke(main, ["sandbox", *args, "--kubeconfig", str(tmp_path / "k")])
        assert result.exit_code == 2, result.output
        (line,) = result.output.strip().splitlines()
        assert line.startswith(f"Error: {message}"), line
