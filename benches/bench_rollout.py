"""Rollout benchmarks (issue 14): edits of a running 1,000-PE job rolled out to Running, each against
what creating the same number of pods costs in the same run.

The instance operator runs as its own process (`streams-k8s run`), the sandbox in this one
(`operator_rig`). Two edits:

- a PE-template edit (`processingElement.runtimeTraceLevel`: every pod's settings change, no PE's
  content): time from the edit to the edit's generation applied with every pod ready (Ready=True)
  against the job's own create -> Ready, API writes per replaced PE (every POST/PUT/PATCH/DELETE in
  the sandbox's request log from the edit until every PE has reported full connectivity again, or
  RECONNECT_WITHIN after Ready: the PEs that did not are counted) and the operator's CPU seconds
  over the same span (/proc utime+stime), and the edit -> UpgradeStarted Event part of the time;
- a bundle upgrade rebuilding 10% of the operators (every tenth: their shared objects change, so
  their PEs' content does): only the PEs holding one are replaced (counted, and every other pod
  keeps its UID and launch count); time to Running against creating a job of as many PEs as were
  replaced, in the same sandbox right after; and both split where each first writes one of the
  job's children (`_until_first_child`): the plan before (the whole job re-planned, against the
  peer's plan of as many PEs as were replaced), the rollout after.

And, to tell the cost of replacing a pod from the cost of the job's size, the same bundle upgrade
of a job of 100 PEs rebuilding every operator, all in one batch (``maxUnavailable: 100``, as the
10% upgrade's 100 PEs go in one batch of its default 250): as many pods replaced as the 10%
upgrade, against the same peer, in a job a tenth of the size. And the 10% upgrade again with pods
whose containers take POD_START to start, as on a node with the image cached (the sandbox's
start at once): what the ratio is where starting a pod costs what it does on a cluster.

Each creation and edit starts from a quiet operator (`Rig.quiet`: its client's rate limiter full
again), ends at the Job status event that shows it Ready (a watch opened before it,
`seconds_until_status`), and is measured with the objects this process already holds frozen out
of its garbage collection (`_frozen_heap`): the sandbox runs here, and a full collection of a
1,000-PE job's objects stopped it for 0.3-0.5 s at random points of a measurement.

Run: pytest benches/bench_rollout.py --benchmark-enable -s   (five runs of 1,000 PEs per edit,
100 for the whole-job upgrade; without --benchmark-enable one run of 10 PEs, as a smoke test)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from job_inventory import NS, pe_pods, synthetic_job
from operator_process import require_operator
from operator_rig import Rig, applied_and_ready, operator_rig, seconds_until_status, spread, until
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EVENTS
from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.server import RequestRecord

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
RUNS = 5  # medians of five (issue 33)
REBUILT_EVERY = 10  # a bundle upgrade rebuilding every tenth operator: 10% of them
# Writes and CPU are counted until every PE reports full connectivity again, or this long after Ready.
RECONNECT_WITHIN = 60.0
# A container start on a node with the image cached: the sandbox's pods start at once unless told.
POD_START = 1.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """The objects this process holds so far (the sandbox's, a 1,000-PE job's) left out of its
    garbage collections while one creation or edit is measured: a full collection of them stops
    the sandbox, kube-apiserver's stand-in here, for 0.3-0.5 s at random points of a measurement
    (kube-apiserver's collector does not stop the world for that long)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def _pe_specs(client: KubeClient, name: str) -> dict[int, dict[str, Any]]:
    pes, _ = await client.list_all(PES, NS, label_selector=f"{JOB_LABEL}={name}")
    return {int(pe["spec"]["id"]): pe["spec"] for pe in pes}


async def _partial(client: KubeClient) -> int:
    """PEs not reporting full connectivity."""
    pes, _ = await client.list_all(PES, NS)
    return sum(1 for pe in pes if (pe.get("status") or {}).get("connectivity") != "Full")


async def _reconnected(client: KubeClient) -> int:
    """Wait (at most RECONNECT_WITHIN) for every PE to report full connectivity again; how many
    did not."""
    with contextlib.suppress(TimeoutError):
        await until(lambda: _no_partial(client), within=RECONNECT_WITHIN, every=0.5)
    return await _partial(client)


async def _no_partial(client: KubeClient) -> bool:
    return await _partial(client) == 0


@dataclass
class UntilReady:
    seconds: float
    # This process's CPU seconds over them: the sandbox's, the API server's stand-in with its
    # simulated kubelets and PEs, whose CPU bounds both figures of a ratio.
    sandbox_cpu: float


async def _until_ready(rig: Rig, name: str, act: Callable[[], Any], generation: int) -> UntilReady:
    with _frozen_heap():
        cpu = time.process_time()
        elapsed = await seconds_until_status(rig.client, NS, name, act, applied_and_ready(generation), 900)
        return UntilReady(elapsed, time.process_time() - cpu)


async def _create(rig: Rig, job: dict[str, Any]) -> UntilReady:
    """Create ``job``; seconds to its first generation Ready (then its PEs get the time to
    connect, so their reports are not counted as the next edit's writes)."""
    await rig.quiet()
    created = await _until_ready(rig, job["metadata"]["name"], lambda: rig.client.create(JOBS, job), 1)
    await _reconnected(rig.client)
    return created


@dataclass
class Edit:
    ready: UntilReady  # edit -> Ready
    planned: float  # edit -> UpgradeStarted (re-plan, diff, write-ahead); the rest is the rollout
    writes: list[RequestRecord]  # the operator's
    simulation_writes: int  # the simulated cluster's (kubelets, PEs) over the same span
    cpu: float  # the operator's CPU seconds
    partial: int  # PEs still not reporting full connectivity RECONNECT_WITHIN after Ready
    wall: float  # when the edit was made (epoch seconds, as the sandbox's request log)

    def figures(self, replaced: int) -> dict[str, Any]:
        kinds = Counter(f"{r.method} {r.info.resource if r.info else r.path}" for r in self.writes)
        return {
            "edit_to_upgrade_started_s": round(self.planned, 2),
            "edit_to_first_pod_deleted_s": round(self._first("DELETE", "pods") - self.wall, 2),
            "edit_to_last_pod_posted_s": round(self._last("POST", "pods") - self.wall, 2),
            "pes_not_reconnected": self.partial,
            "operator_cpu_s": round(self.cpu, 2),
            "api_writes_per_replaced_pe": round(len(self.writes) / max(replaced, 1), 2),
            "simulation_writes_per_replaced_pe": round(self.simulation_writes / max(replaced, 1), 2),
            "writes_by_kind": dict(kinds),
        }

    def _times(self, method: str, resource: str) -> list[float]:
        return [r.time for r in self.writes if r.method == method and r.info and r.info.resource == resource]

    def _first(self, method: str, resource: str) -> float:
        return min(self._times(method, resource))

    def _last(self, method: str, resource: str) -> float:
        return max(self._times(method, resource))


# A job's name table and its PEs' objects: the first write of one is where an edit or a creation
# starts rolling out.
CHILDREN = {"configmaps", "services", "streamspes", "pods"}


def _until_first_child(writes: list[RequestRecord], job: str) -> float:
    """Seconds from the write of Job ``job`` (its creation or edit) to the first write of one of its
    children (its name table, a PE's ConfigMap, Service, ProcessingElement or pod; not a status, not
    the job ids' ConfigMap): the plan's part of either figure, before anything rolls out."""

    def named(resources: set[str]) -> Iterator[tuple[str, float]]:
        for r in writes:
            if r.info and r.info.resource in resources and not r.info.subresource:
                yield r.info.name or str(orjson.loads(r.body)["metadata"]["name"]), r.time

    started = min(t for name, t in named({"streamsjobs"}) if name == job)
    return min(t for name, t in named(CHILDREN) if name == job or name.startswith(f"{job}-")) - started


async def _upgrade_started(client: KubeClient, name: str) -> float:
    """When the job controller recorded the UpgradeStarted Event (epoch seconds)."""
    events, _ = await client.list_all(EVENTS, NS)
    return max(
        datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")).timestamp()
        for e in events
        if e.get("reason") == "UpgradeStarted" and (e.get("regarding") or {}).get("name") == name
    )


async def _edit(rig: Rig, name: str, spec: dict[str, Any]) -> Edit:
    """Apply ``spec`` (a merge patch) as generation 2: seconds to Ready, the writes and the
    operator's CPU seconds until every PE is connected again."""
    assert rig.operator.process is not None
    await rig.quiet()
    mark, cpu = len(rig.sandbox.requests), _cpu_seconds(rig.operator.process.pid)
    wall = 0.0

    async def edit() -> None:
        nonlocal wall
        wall = time.time()
        await rig.client.patch(JOBS, name, {"spec": spec}, NS)

    ready = await _until_ready(rig, name, edit, 2)
    planned = await _upgrade_started(rig.client, name) - wall
    partial = await _reconnected(rig.client)
    cpu = _cpu_seconds(rig.operator.process.pid) - cpu
    writes, simulation = _writes(rig, mark)
    return Edit(ready, planned, writes, simulation, cpu, partial, wall)


def _writes(rig: Rig, mark: int) -> tuple[list[RequestRecord], int]:
    """The operator's writes in the sandbox's request log since ``mark``, and how many the
    simulated cluster made."""
    writes = [r for r in list(rig.sandbox.requests)[mark:] if r.method in WRITES]
    ours = [r for r in writes if r.user != SIMULATION]
    return ours, len(writes) - len(ours)


def _sandbox_cpu(edit: UntilReady, created: UntilReady) -> dict[str, float]:
    return {
        "sandbox_cpu_s": round(edit.sandbox_cpu, 2),
        "peer_sandbox_cpu_s": round(created.sandbox_cpu, 2),
        "sandbox_cpu_ratio": round(edit.sandbox_cpu / created.sandbox_cpu, 2),
        "sandbox_busy": round(edit.sandbox_cpu / edit.seconds, 2),
        "peer_sandbox_busy": round(created.sandbox_cpu / created.seconds, 2),
    }


async def _template_edit(pes: int, tmp: Path) -> dict[str, Any]:
    async with operator_rig(pes, tmp) as rig:
        created = await _create(rig, synthetic_job("roll", tmp, pes))
        before = await pe_pods(rig.client, "roll")
        edit = await _edit(rig, "roll", {"processingElement": {"runtimeTraceLevel": "DEBUG"}})
        after = await pe_pods(rig.client, "roll")
    replaced = sum(1 for i in after if after[i][0] != before[i][0])
    assert {i: n for i, (_, n) in after.items()} == {i: n + 1 for i, (_, n) in before.items()}
    return {
        "create_to_ready_s": round(created.seconds, 2),
        "edit_to_ready_s": round(edit.ready.seconds, 2),
        "ratio": round(edit.ready.seconds / created.seconds, 2),
        **_sandbox_cpu(edit.ready, created),
        "replaced": replaced,
        **edit.figures(replaced),
        "load_average": round(os.getloadavg()[0], 2),
    }


async def _bundle_upgrade(
    pes: int, tmp: Path, every: int = REBUILT_EVERY, one_batch: bool = False, pod_start: float = 0.0
) -> dict[str, Any]:
    """Rebuild every ``every``-th operator (``one_batch``: every replaced PE at once; ``pod_start``:
    the seconds a pod's containers take to start)."""
    v1 = synthetic_job("roll", tmp, pes)
    (tmp / "v2").mkdir()
    rebuilt = frozenset(range(1, pes + 1, every))  # operators 1..pes are the chains'
    v2 = synthetic_job("roll", tmp / "v2", pes, rebuilt=rebuilt)
    spec: dict[str, Any] = {"bundle": v2["spec"]["bundle"], **({"maxUnavailable": pes} if one_batch else {})}
    # room for the floor's pods too
    async with operator_rig(pes + len(rebuilt), tmp, start_delay=pod_start) as rig:
        await _create(rig, v1)
        before, specs = await pe_pods(rig.client, "roll"), await _pe_specs(rig.client, "roll")
        edit = await _edit(rig, "roll", spec)
        after, specs_after = await pe_pods(rig.client, "roll"), await _pe_specs(rig.client, "roll")
        replaced = {i for i in after if after[i] != before[i]}
        mark = len(rig.sandbox.requests)
        created = await _create(rig, synthetic_job("floor", tmp, len(replaced)))
        peer_writes, peer_simulation_writes = _writes(rig, mark)
    changed = {i for i in specs if specs[i]["contentId"] != specs_after[i]["contentId"]}
    assert sorted(specs_after) == sorted(specs)  # no PE added or removed
    assert 0 < len(changed) <= len(rebuilt)  # a PE holds one or two operators
    assert replaced == changed  # only the PEs whose content changed (the rest keep pod and launch)
    assert all(after[i][1] == before[i][1] + 1 for i in replaced)
    planning = _until_first_child(edit.writes, "roll")
    peer_planning = _until_first_child(peer_writes, "floor")
    return {
        "rebuilt_operators": len(rebuilt),
        "upgrade_to_ready_s": round(edit.ready.seconds, 2),
        "create_same_count_s": round(created.seconds, 2),
        "ratio": round(edit.ready.seconds / created.seconds, 2),
        **_sandbox_cpu(edit.ready, created),
        # the ratio split where each figure writes its first child: the upgrade re-plans the whole
        # job before it, its peer plans as many PEs as were replaced
        "edit_to_first_child_written_s": round(planning, 2),
        "peer_to_first_child_written_s": round(peer_planning, 2),
        "ratio_from_first_child_written": round(
            (edit.ready.seconds - planning) / (created.seconds - peer_planning), 2
        ),
        "replaced": len(replaced),
        "unchanged": len(after) - len(replaced),
        **edit.figures(len(replaced)),
        # as the edit's: until every PE has reported full connectivity (`_create`)
        "peer_api_writes_per_pe": round(len(peer_writes) / len(replaced), 2),
        "peer_simulation_writes_per_pe": round(peer_simulation_writes / len(replaced), 2),
        "load_average": round(os.getloadavg()[0], 2),
    }


# name -> (the edit measured, its job's PEs when the benchmark is enabled)
CASES: dict[str, tuple[Callable[[int, Path], Any], int]] = {
    "template-edit": (_template_edit, 1000),
    "bundle-upgrade-10pct": (_bundle_upgrade, 1000),
    "bundle-upgrade-all-of-100": (functools.partial(_bundle_upgrade, every=1, one_batch=True), 100),
    "bundle-upgrade-10pct-1s-pod-start": (functools.partial(_bundle_upgrade, pod_start=POD_START), 1000),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rollout(benchmark: Any, tmp_path: Path, case: str) -> None:
    require_operator()
    run_case, size = CASES[case]
    pes, runs = (10, 1) if benchmark.disabled else (size, RUNS)
    results: list[dict[str, Any]] = []

    def measure() -> None:
        for run in range(runs):
            directory = tmp_path / f"run{run}"
            directory.mkdir()
            results.append(asyncio.run(run_case(pes, directory)))
            print(f"\n{case}, {pes} PEs, run {run + 1}: {results[-1]}")

    benchmark.pedantic(measure, rounds=1, iterations=1)
    numbers = [k for k, v in results[0].items() if isinstance(v, int | float)]
    summary = {k: spread([r[k] for r in results]) for k in numbers}
    benchmark.extra_info.update(summary)
    print(f"\n{case}, {pes} PEs, {runs} runs (min / median / max): {summary}")
