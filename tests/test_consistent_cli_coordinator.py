"""`streams-k8s coordinator` as its pod runs it: a process against the sandbox that serves the
REST API and the metrics, takes its job's regions on, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import aiohttp
from click.testing import CliRunner

from k8s_support import eventually_async
from streams_k8s.cli import main
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox

CLI = [sys.executable, "-c", "from streams_k8s.cli import main; main()", "coordinator"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_coordinator_process_serves_its_jobs_regions_and_stops_on_sigterm() -> None:
    api, metrics, health = free_port(), free_port(), free_port()
    async with Sandbox(simulate=False) as sb, await KubeClient.connect(str(sb.kubeconfig_path)) as client:
        await client.create(
            CONSISTENT_REGIONS,
            {
                "apiVersion": "streams.ibm.com/v1",
                "kind": "ConsistentRegion",
                "metadata": {
                    "name": "wc-cr0",
                    "namespace": "default",
                    "labels": {"streams.ibm.com/job": "wc"},
                },
                "spec": {"regionIndex": 0, "trigger": "periodic", "period": 2.0, "pesInRegion": [1, 2]},
            },
        )
        args = ["--job", "wc", "-n", "default", "--kubeconfig", str(sb.kubeconfig_path)]
        args += ["--bind-address", "127.0.0.1", "--api-port", str(api), "--metrics-port", str(metrics)]
        args += ["--health-port", str(health), "--no-udp-hints", "--log-format", "text"]
        proc = await asyncio.create_subprocess_exec(*CLI, *args, stderr=asyncio.subprocess.PIPE)
        try:
            async with aiohttp.ClientSession() as http:

                async def serving() -> bool:
                    try:
                        async with http.get(
                            f"http://127.0.0.1:{api}/api/consistentregion/region/0/state"
                        ) as r:
                            return r.status == 200 and await r.json() == "STARTED"
                    except aiohttp.ClientError:
                        return False

                await eventually_async(serving, within=20, every=0.1)
                async with http.get(f"http://127.0.0.1:{metrics}/metrics") as r:
                    text = await r.text()
                async with http.get(f"http://127.0.0.1:{health}/readyz") as r:
                    assert r.status == 200
        finally:
            proc.terminate()
            _, stderr = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    assert 'state{ConsistentRegion="ConsistentRegion_0"} 0.0' in text
    assert "streams_cr_coordinator_regions 1.0" in text


def test_bad_settings_fail_with_one_line(tmp_path: Path) -> None:
    for args, message in (
        (["--mode", "dedicated", "-n", "default"], "dedicated mode needs --job"),
        (["--mode", "fleet"], "'fleet' is not one of"),
    ):
        result = CliRunner().invoke(main, ["coordinator", *args])
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, result.output
        assert message in lines[0]
