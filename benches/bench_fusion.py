"""Fusion benchmarks: 10,000-operator fusion into 100 PEs, whole plan, re-fusion, and METIS side by side.

Run: ``pytest benches/bench_fusion.py --benchmark-enable -s`` (figures in benches/README.md).
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from streams_k8s._native import fuse
from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.fusion import FusionInputs
from streams_k8s.app.plan import plan_application, refuse_with_widths
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.app.topology import Topology

# 100 chains x 100 Functors + source/sink, 20 parallel regions of width 4: 10,062 topology nodes
BIG = SyntheticSpec(
    chains=100, length=100, regions=20, width=4, pools=2, colocate_pairs=True, consistent_chains=5
)


def _inputs(topo: Topology) -> tuple[list[Any], list[tuple[int, int]]]:
    order = sorted(topo.nodes.values(), key=lambda n: n.index)
    position = {n.index: i for i, n in enumerate(order)}
    inputs, alike = FusionInputs(), {}
    return [inputs.spec(topo, n, alike) for n in order], [
        (position[e.src], position[e.dst]) for e in topo.edges
    ]


@pytest.fixture(scope="module")
def big_plan() -> Any:
    app = parse_adl(synthetic_adl(BIG))
    return plan_application(app, Fusion(manual=100), job_name="bench")


def test_native_fusion_10k_into_100(benchmark: Any, big_plan: Any) -> None:
    nodes, edges = _inputs(big_plan.topology)
    assert len(nodes) >= 10_000
    pes, _ = benchmark(lambda: fuse(nodes, edges, manual=100))
    assert len(pes) >= 100


def test_whole_plan_10k(benchmark: Any) -> None:
    adl = synthetic_adl(BIG)

    def run() -> Any:
        return plan_application(parse_adl(adl), Fusion(manual=100), job_name="bench")

    tracemalloc.start()
    plan = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\nplan: {len(plan.topology.nodes)} nodes, {len(plan.pes)} PEs, peak traced memory {peak / 2**20:.1f} MiB"  # noqa: E501
    )
    benchmark.pedantic(run, rounds=3, iterations=1)


def test_refusion_after_width_change_10k(benchmark: Any, big_plan: Any) -> None:
    region = big_plan.topology.app.parallel_regions[0].name
    change = [ParallelRegionWidth(alias=region, width=5)]
    _, diff = refuse_with_widths(big_plan, change)
    print(f"\nre-fusion diff: {diff.summary()}")
    benchmark.pedantic(lambda: refuse_with_widths(big_plan, change), rounds=15, iterations=1)


def _cut(parts: list[int], edges: list[tuple[int, int]]) -> int:
    return sum(1 for a, b in edges if parts[a] != parts[b])


@pytest.mark.parametrize("operators", [500, 10_000, 100_000])
def test_against_metis(operators: int) -> None:
    pymetis = pytest.importorskip("pymetis")
    chains = max(5, operators // 100)
    spec = SyntheticSpec(
        chains=chains, length=max(1, (operators - 2) // chains), regions=chains // 5, width=3
    )
    topo = plan_topology_only(spec)
    nodes, edges = _inputs(topo)
    k = max(2, len(nodes) // 100)
    t0 = time.perf_counter()
    pes, _ = fuse(nodes, edges, manual=k)
    ours = time.perf_counter() - t0
    part = [0] * len(nodes)
    for i, pe in enumerate(pes):
        for n in pe:
            part[n] = i
    adjacency: list[list[int]] = [[] for _ in nodes]
    for a, b in edges:
        adjacency[a].append(b)
        adjacency[b].append(a)
    t0 = time.perf_counter()
    _, metis_parts = pymetis.part_graph(k, adjacency=adjacency)
    theirs = time.perf_counter() - t0
    ours_cut, metis_cut = _cut(part, edges), _cut(list(metis_parts), edges)
    print(
        f"\n{len(nodes)} nodes, {len(edges)} edges, k={k}: ours {ours * 1000:.1f} ms cut {ours_cut} ({len(pes)} PEs); "  # noqa: E501
        f"METIS {theirs * 1000:.1f} ms cut {metis_cut}; time ratio {ours / theirs:.2f}, "
        f"cut ratio {ours_cut / max(metis_cut, 1):.2f}"
    )
    assert len(pes) == k


def plan_topology_only(spec: SyntheticSpec) -> Topology:
    from streams_k8s.app.submission import resolve_values, resolve_widths
    from streams_k8s.app.topology import build_topology

    app = parse_adl(synthetic_adl(spec))
    return build_topology(app, resolve_widths(app, resolve_values(app, {})))
