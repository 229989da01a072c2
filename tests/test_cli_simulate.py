"""`streams-k8s simulate`: simulated Streams nodes join a cluster the kubeconfig reaches (here a
sandbox that simulates no node of its own: its scheduler and controllers stand for a cluster's),
run the pods bound to them, write their containers' output to files, and leave on Ctrl-C."""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from k8s_support import eventually_async
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import NODES, PODS
from streams_k8s.sandbox import Sandbox

CLI = Path(sys.executable).with_name("streams-k8s")
ZONE = "topology.kubernetes.io/zone"


@pytest.mark.sandbox(nodes=0)
async def test_simulated_nodes_join_a_cluster_run_its_pods_and_leave(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    process = await asyncio.create_subprocess_exec(
        str(CLI),
        "simulate",
        *("--kubeconfig", str(sandbox.kubeconfig_path), "--nodes", "2", "--zones", "east,west"),
        *("--log-dir", str(logs)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        joined = await asyncio.wait_for(process.stdout.readline(), 60)
        assert b"simulated nodes streams-sim-0, streams-sim-1 joined" in joined
        async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
            nodes = {n["metadata"]["name"]: n for n in (await client.list_all(NODES))[0]}
            assert sorted(nodes) == ["streams-sim-0", "streams-sim-1"]
            assert sorted(n["metadata"]["labels"][ZONE] for n in nodes.values()) == ["east", "west"]
            pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "main", "image": "x:1"}]}}
            await client.create(PODS, pod, "default")
            found: dict[str, Any] = {}

            async def running() -> bool:
                found.update(await client.get(PODS, "web", "default"))
                return (found.get("status") or {}).get("phase") == "Running"

            await eventually_async(running, within=20)
            node = nodes[found["spec"]["nodeName"]]
            assert ipaddress.ip_address(found["status"]["podIP"]) in ipaddress.ip_network(
                node["spec"]["podCIDR"]
            )
            log = logs / found["metadata"]["uid"] / "main.log"
            assert f'container "main" started on {node["metadata"]["name"]}' in log.read_text()

            process.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(process.wait(), 30) == 0
            assert (await client.list_all(NODES))[0] == []  # the nodes left
        # ... and the pod garbage collector took their pod
        assert await sandbox.wait_for("pods", "web", "default", lambda p: p is None) is None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
