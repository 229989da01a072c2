"""Plans and graphs for the console's tests: real bundles (skipped without the shared test data)
and generated applications, plus the SVG read back into what a user sees."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lxml import etree

from repo_paths import real_adl
from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.plan import Plan, plan_application
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.console.graph import JobGraph, graph_from_plan

SVG = "{http://www.w3.org/2000/svg}"


def real_plan(bundle: str, fusion: Fusion | None = None, widths: Sequence[tuple[str, int]] = ()) -> Plan:
    app = parse_adl(real_adl(bundle))
    return plan_application(
        app,
        fusion or Fusion(),
        job_name="job",
        widths=[ParallelRegionWidth(alias=a, width=w) for a, w in widths],
    )


def synthetic_plan(
    spec: SyntheticSpec, fusion: Fusion | None = None, widths: Sequence[tuple[str, int]] = ()
) -> Plan:
    return plan_application(
        parse_adl(synthetic_adl(spec)),
        fusion or Fusion(),
        job_name="job",
        widths=[ParallelRegionWidth(alias=a, width=w) for a, w in widths],
    )


def synthetic_graph(
    spec: SyntheticSpec, fusion: Fusion | None = None, widths: Sequence[tuple[str, int]] = ()
) -> JobGraph:
    return graph_from_plan(synthetic_plan(spec, fusion, widths))


@dataclass(frozen=True)
class Drawn:
    """What an SVG shows, by its data- attributes."""

    pes: dict[str, dict[str, str]]  # data-pe → attributes
    operators: dict[str, dict[str, str]]  # data-operator → attributes
    regions: dict[str, dict[str, str]]
    channels: list[str]
    edges: list[str]
    imports: list[str]
    exports: list[str]


def drawn(svg: str | bytes) -> Drawn:
    root = etree.fromstring(svg.encode() if isinstance(svg, str) else svg)
    groups = list(root.iter(f"{SVG}g"))

    def having(attr: str) -> list[dict[str, str]]:
        return [dict(g.attrib) for g in groups if attr in g.attrib]

    return Drawn(
        pes={a["data-pe"]: a for a in having("data-pe") if "data-operator" not in a},
        operators={a["data-operator"]: a for a in having("data-operator")},
        regions={a["data-region"]: a for a in having("data-region")},
        channels=[a["data-channel"] for a in having("data-channel") if "data-operator" not in a],
        edges=[a["data-edge"] for a in having("data-edge")],
        imports=[a["data-import"] for a in having("data-import")],
        exports=[a["data-export"] for a in having("data-export")],
    )
