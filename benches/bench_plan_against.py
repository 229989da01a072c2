"""`streams-k8s plan NEW --against OLD` (issue 33): the preview of a 10% bundle upgrade of a
1,000-PE job, against the old bundle's manifest (offline) and against the live Job (``stj/NAME``,
through the sandbox's kubeconfig, the operator running the job), each as the user runs it: the CLI
as a process of its own. Peers in the same run, interleaved: `streams-k8s --help` (the CLI's own
start) and `streams-k8s plan NEW -o json` (a plain plan of the new bundle).

Run: pytest benches/bench_plan_against.py --benchmark-enable -s   (five runs of each, 1,000 PEs;
without --benchmark-enable one run of each, 10 PEs, as a smoke test)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

from job_inventory import synthetic_job
from operator_process import require_operator
from operator_rig import operator_rig, seconds_until_status
from streams_k8s.controller.kinds import JOBS

RUNS = 5
PES = 1000
REBUILT_EVERY = 10  # as bench_rollout's 10% upgrade
CLI = str(Path(sys.executable).with_name("streams-k8s"))


async def _seconds(*args: str) -> tuple[float, bytes]:
    """Seconds a CLI process takes, and what it printed (it must succeed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        CLI, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await process.communicate()
    elapsed = time.perf_counter() - started
    assert process.returncode == 0, err.decode()
    return elapsed, out


def _manifest(path: Path, job: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(job))
    return path


def _ready(status: dict[str, Any]) -> bool:
    ready = next((c for c in status.get("conditions", []) if c.get("type") == "Ready"), {})
    return status.get("appliedGeneration") == 1 and ready.get("status") == "True"


async def _measure(pes: int, runs: int, tmp: Path) -> dict[str, list[float]]:
    v1 = synthetic_job("roll", tmp, pes)
    (tmp / "v2").mkdir()
    v2 = synthetic_job("roll", tmp / "v2", pes, rebuilt=frozenset(range(1, pes + 1, REBUILT_EVERY)))
    old, new = _manifest(tmp / "v1.yaml", v1), _manifest(tmp / "v2.yaml", v2)
    async with operator_rig(pes, tmp) as rig:
        await seconds_until_status(
            rig.client, "default", "roll", lambda: rig.client.create(JOBS, v1), _ready, 900
        )
        kubeconfig = str(rig.sandbox.kubeconfig_path)
        commands = {
            "streams-k8s --help (the CLI's start)": ("--help",),
            "plan NEW -o json (peer)": ("plan", str(new), "-o", "json"),
            "plan NEW --against OLD manifest": ("plan", str(new), "--against", str(old), "-o", "json"),
            "plan NEW --against stj/roll (live)": (
                *("plan", str(new), "--against", "stj/roll"),
                *("--kubeconfig", kubeconfig, "-o", "json"),
            ),
        }
        previews = []
        figures: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(runs):  # interleaved: each run of each command under the same load
            for label, args in commands.items():
                seconds, out = await _seconds(*args)
                figures[label].append(seconds)
                if "--against" in args:
                    previews.append(orjson.loads(out))
    # both previews say what the operator would do: the PEs of the rebuilt operators replaced
    assert all(p["replaced"] and p["replaced"] == previews[0]["replaced"] for p in previews)
    return figures


def test_plan_against(benchmark: Any, tmp_path: Path) -> None:
    require_operator()
    pes, runs = (10, 1) if benchmark.disabled else (PES, RUNS)
    figures: dict[str, list[float]] = {}

    def measure() -> None:
        figures.update(asyncio.run(_measure(pes, runs, tmp_path)))

    benchmark.pedantic(measure, rounds=1, iterations=1)
    peer = statistics.median(figures["plan NEW -o json (peer)"])
    print(f"\nplan --against, 10% upgrade of {pes} PEs, {runs} runs each, load {os.getloadavg()[0]:.2f}:")
    for label, seconds in figures.items():
        ms = sorted(s * 1000 for s in seconds)
        median = statistics.median(seconds)
        print(
            f"  {label}: min {ms[0]:.0f} / median {statistics.median(ms):.0f} / max {ms[-1]:.0f} ms "
            f"({median / peer:.2f}x the plain plan)"
        )
    benchmark.extra_info.update({label: statistics.median(s) for label, s in figures.items()})
