"""The autoscaler reads a job's logical graph from its PEs' AADLs: operators in topological order,
what feeds each (a merge after a parallel region, a fan-in of several chains), region aliases."""

from __future__ import annotations

import pytest

from streams_k8s.api.job import Fusion
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.plan import plan_application
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.controller.autoscaling.estimates import OperatorShape
from streams_k8s.controller.autoscaling.topology import TopologyError, job_topology


@pytest.mark.parametrize("pes", [1, 3, 8])
def test_the_graph_is_the_same_however_the_job_is_fused(pes: int) -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=2, regions=1, width=3)))
    plan = plan_application(app, Fusion(manual=pes), job_name="job", job_id=1)
    aliases = {r.index: r.alias for r in plan.parallel_regions}
    graph = job_topology([pe.aadl for pe in plan.pes], aliases)
    assert graph == [
        OperatorShape("Source"),
        OperatorShape("C0_0", ("Source",)),
        OperatorShape("C1_0", ("Source",)),
        OperatorShape("C0_1", ("C0_0",), aliases[0]),
        OperatorShape("C1_1", ("C1_0",)),
        OperatorShape("Sink", ("C0_1", "C1_1")),
    ]


def test_an_instance_no_pe_runs_is_named() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=1, length=2)))
    plan = plan_application(app, Fusion(legacy=True), job_name="job", job_id=1)
    with pytest.raises(TopologyError, match="which no PE of the job runs"):
        job_topology([pe.aadl for pe in plan.pes[1:]], {})
