"""The whole path a user waits for (issue 17): CLI start, the plan of 10,000 operators, re-plan.

- CLI start: `streams-k8s --help` and `streams-k8s plan` of a small bundle in fresh processes, next to
  a bare `python -c pass` measured in the same run (goal ≤ 150 ms and ≤ 10 times the bare interpreter).
- Whole plan of `SyntheticSpec(chains=500, length=20)` with `--fusion manual=100`, in-process (ADL
  parse, topology, fusion, AADL, name table; goal ≤ 300 ms), split by phase, and `plan -o yaml` of
  the same bundle through the CLI in-process (bundle read, plan, ConfigMaps, YAML; goal ≤ 1 s).
- The same `plan ... -o json` as a process of its own, beyond the CLI's own start (issue 33: goal
  ≤ 0.3 s beyond it), interleaved with that start.
- Re-plan after a width change end to end (re-topology, re-fusion, AADL of the changed PEs and
  their ConfigMaps; goal ≤ 100 ms), next to the whole plan of the same application.
- AADL of the 100 PEs of the whole plan, rendered natively (the call `plan` makes, reading the
  plan's objects included; goal ≤ 40 ms), next to the lxml writer it replaced (`tests/aadl_oracle.py`).

Run: pytest benches/bench_plan.py --benchmark-enable -s
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aadl_oracle import pe_aadl
from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.aadl import pe_aadls
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.collector import collector_paused
from streams_k8s.app.physical import PortIndex
from streams_k8s.app.plan import plan_application, refuse_with_widths
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl, write_sab
from streams_k8s.app.topology import build_topology
from streams_k8s.cli import main
from streams_k8s.controller.children.config_maps import pe_config_map
from streams_k8s.controller.children.metadata import ChildMetadata

TEN_K = SyntheticSpec(chains=500, length=20)  # 10,002 operators
TEN_K_REGIONS = SyntheticSpec(chains=500, length=20, regions=10, width=4)
FUSION = Fusion(manual=100)


def _times(run: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        out.append(time.perf_counter() - started)
    return out


def _line(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return f"{label}: min {ms[0]:.0f} ms, median {statistics.median(ms):.0f} ms, max {ms[-1]:.0f} ms"


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


def test_cli_start(benchmark: Any, tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "small.sab", SyntheticSpec(chains=4, length=5, regions=1))
    cli = [str(Path(sys.executable).parent / "streams-k8s")]  # the installed console script
    runs = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "streams-k8s --help": [*cli, "--help"],
        "streams-k8s plan small.sab": [*cli, "plan", str(sab)],
        "streams-k8s plan small.sab -o yaml": [*cli, "plan", str(sab), "-o", "yaml"],
    }
    # As installed from a wheel, the package's modules are byte-compiled: one run first writes
    # their bytecode even where PYTHONDONTWRITEBYTECODE is set (else every run compiles them, ~40 ms).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for cmd in runs.values():
        subprocess.run(cmd, check=True, capture_output=True, env=env)
    figures = {
        label: _times(lambda cmd=cmd: subprocess.run(cmd, check=True, capture_output=True, env=env), 10)
        for label, cmd in runs.items()
    }
    bare = statistics.median(figures["python -c pass"])
    print(f"\nCLI start ({_load()}):")
    for label, seconds in figures.items():
        print(f"  {_line(label, seconds)}  ({statistics.median(seconds) / bare:.1f}x bare)")
    benchmark.extra_info.update({k: statistics.median(v) for k, v in figures.items()})
    benchmark.pedantic(lambda: None, rounds=1)


def test_whole_plan_10k(benchmark: Any) -> None:
    adl = synthetic_adl(TEN_K)
    app = parse_adl(adl)
    topo = build_topology(app, {})
    phases = {
        "ADL parse": _times(lambda: parse_adl(adl), 3),
        "topology": _times(lambda: build_topology(app, {}), 3),
        "plan from parsed ADL (topology, fusion, AADL, name table)": _times(
            lambda: plan_application(app, FUSION, job_name="bench"), 3
        ),
    }
    print(f"\nwhole plan of {TEN_K.operators} operators, manual=100 ({_load()}; {len(topo.nodes)} nodes):")
    for label, seconds in phases.items():
        print(f"  {_line(label, seconds)}")
    whole = benchmark.pedantic(
        lambda: plan_application(parse_adl(adl), FUSION, job_name="bench"), rounds=3, iterations=1
    )
    assert len(whole.pes) == 100


def test_plan_yaml_10k(benchmark: Any, tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "big.sab", TEN_K)
    args = ["plan", str(sab), "--fusion", "manual=100"]

    def run(output: str) -> None:
        result = CliRunner().invoke(main, [*args, "-o", output])
        assert result.exit_code == 0, result.output

    print(f"\nplan CLI in-process, {TEN_K.operators} operators ({_load()}):")
    for output in ("json", "yaml"):
        print(f"  {_line('-o ' + output, _times(lambda o=output: run(o), 3))}")
    benchmark.pedantic(lambda: run("yaml"), rounds=3, iterations=1)


def test_plan_json_10k_process(benchmark: Any, tmp_path: Path) -> None:
    """The whole `plan` of 10,000 operators, `-o json`, as a user runs it (a process of its own),
    against the CLI's own start (`plan` of 20 operators, `--help`), interleaved, five runs each
    (issue 33: at most 0.3 s beyond the CLI's start)."""
    big = write_sab(tmp_path / "big.sab", TEN_K)
    small = write_sab(tmp_path / "small.sab", SyntheticSpec(chains=4, length=5, regions=1))
    cli = str(Path(sys.executable).parent / "streams-k8s")
    runs = {
        "streams-k8s --help": [cli, "--help"],
        "streams-k8s plan small.sab -o json": [cli, "plan", str(small), "-o", "json"],
        "streams-k8s plan big.sab --fusion manual=100 -o json": [
            *(cli, "plan", str(big), "--fusion", "manual=100", "-o", "json")
        ],
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    figures: dict[str, list[float]] = {label: [] for label in runs}
    for cmd in runs.values():  # bytecode written first (see test_cli_start)
        subprocess.run(cmd, check=True, capture_output=True, env=env)
    for _ in range(5):
        for label, cmd in runs.items():
            figures[label].extend(
                _times(lambda cmd=cmd: subprocess.run(cmd, check=True, capture_output=True, env=env), 1)
            )
    print(f"\nplan -o json of {TEN_K.operators} operators, a process each ({_load()}):")
    for label, seconds in figures.items():
        print(f"  {_line(label, seconds)}")
    whole = statistics.median(figures["streams-k8s plan big.sab --fusion manual=100 -o json"])
    for start in ("streams-k8s --help", "streams-k8s plan small.sab -o json"):
        beyond = whole - statistics.median(figures[start])
        print(f"  beyond `{start}` (medians): {beyond * 1000:.0f} ms")
    benchmark.extra_info.update({k: statistics.median(v) for k, v in figures.items()})
    benchmark.pedantic(lambda: None, rounds=1)


@pytest.fixture(scope="module")
def regions_plan() -> Any:
    return plan_application(parse_adl(synthetic_adl(TEN_K_REGIONS)), FUSION, job_name="bench")


def test_replan_after_width_change_10k(benchmark: Any, regions_plan: Any) -> None:
    alias = regions_plan.parallel_regions[0].alias
    metadata = ChildMetadata(job="bench")

    def replan(width: int) -> Any:
        plan, diff = refuse_with_widths(regions_plan, [ParallelRegionWidth(alias=alias, width=width)])
        touched = set(diff.replaced) | set(diff.added)
        return diff, [pe_config_map(pe, metadata) for pe in plan.pes if pe.id in touched]

    diff, maps = replan(8)
    whole = _times(lambda: plan_application(regions_plan.topology.app, FUSION, job_name="bench"), 3)
    print(
        f"\nre-plan of {len(regions_plan.topology.nodes)} nodes, region {alias} 4 -> 8 ({_load()}): "
        f"{diff.summary()}, {len(maps)} ConfigMaps rendered"
    )
    print(f"  {_line('re-plan 4 -> 8', _times(lambda: replan(8), 7))}")
    print(f"  {_line('peer: whole plan from the parsed ADL', whole)}")
    benchmark.pedantic(lambda: replan(8), rounds=7, iterations=1)


def test_aadl_rendering_10k(benchmark: Any) -> None:
    plan = plan_application(parse_adl(synthetic_adl(TEN_K)), FUSION, job_name="bench")
    topo, ports = plan.topology, PortIndex.of(plan.pes)

    @collector_paused()  # as plan_application renders them
    def native() -> list[str]:
        return pe_aadls(topo, plan.pes, ports, job_name="bench", job_id=0)

    @collector_paused()
    def lxml() -> list[str]:
        return [pe_aadl(topo, pe, ports, job_name="bench", job_id=0) for pe in plan.pes]

    assert native() == lxml() == [pe.aadl for pe in plan.pes]
    megabytes = sum(len(pe.aadl) for pe in plan.pes) / 1e6
    print(f"\nAADL of {len(plan.pes)} PEs, {TEN_K.operators} operators, {megabytes:.1f} MB ({_load()}):")
    print(f"  {_line('native (rust/aadl)', _times(native, 7))}")
    print(f"  {_line('peer: lxml writer (tests/aadl_oracle.py)', _times(lxml, 3))}")
    benchmark.pedantic(native, rounds=7, iterations=1)
