"""`streams-k8s coordinator` as its pod runs it: a process against the sandbox that serves the
REST API and the metrics, takes its job's regions on, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import re
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
# What the process logs once it listens: the ports it was given, or bound (port 0).
_API = re.compile(r"consistent-region API on :(\d+)")
_HEALTH = re.compile(r"serving health on :(\d+) and metrics on :(\d+)")


async def _listening(proc: asyncio.subprocess.Process) -> tuple[int, int, int]:
    """(api, health, metrics) ports, as the process logs them when it listens. It binds port 0:
    a free port picked beforehand could be taken meanwhile (the process then exited at once, and
    the test waited for it in vain); an exit before it listens fails with what it said."""
    assert proc.stderr is not None
    said: list[str] = []
    api = health = None
    while api is None or health is None:
        line = (await proc.stderr.readline()).decode()
        if not line:
            raise AssertionError(f"the coordinator exited before it listened: {''.join(said)[-2000:]}")
        said.append(line)
        if found := _API.search(line):
            api = int(found[1])
        elif found := _HEALTH.search(line):
            health = (int(found[1]), int(found[2]))
    return api, *health


async def test_the_coordinator_process_serves_its_jobs_regions_and_stops_on_sigterm() -> None:
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
        args += ["--bind-address", "127.0.0.1", "--api-port", "0", "--metrics-port", "0"]
        args += ["--health-port", "0", "--no-udp-hints", "--log-format", "text"]
        proc = await asyncio.create_subprocess_exec(*CLI, *args, stderr=asyncio.subprocess.PIPE)
        try:
            # a process started under load takes seconds to import: the deadline only bounds a hang
            api, health, metrics = await asyncio.wait_for(_listening(proc), 120)
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
            with contextlib.suppress(ProcessLookupError):  # exited already: the error says why
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
