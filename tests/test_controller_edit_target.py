"""An edit's target (`jobs.target.Target`) without a cluster: which PEs a pass looks at, and what it
counts as coming up."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from k8s_support import hand_fed_informer
from streams_k8s.api.contract import (
    CONTENT_ID_ANNOTATION,
    JOB_LABEL,
    PE_LABEL,
    POD_TEMPLATE_ANNOTATION,
    SVC_LABEL,
    SVC_PE,
)
from streams_k8s.api.job import Job
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.controller.children.desired import Desired, Rendered, desired_objects
from streams_k8s.controller.jobs.counts import JobCounts
from streams_k8s.controller.jobs.plans import KeptPlan
from streams_k8s.controller.jobs.target import Target
from streams_k8s.controller.kinds import PES
from streams_k8s.controller.planning import plan_job, validate_job
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import ObjectKey

UID = "0f7e2b0c-1111-2222-3333-444455556666"
STAMP = "Sun Nov 29 10:00:00 UTC 2026"


def _job() -> Job:
    return validate_job(
        {
            "apiVersion": "streams.ibm.com/v1",
            "kind": "Job",
            "metadata": {"name": "unit", "namespace": "ns", "uid": UID},
            "spec": {"bundle": {"name": "app.sab"}, "fusion": {"manual": 6}},
        }
    )


def _pod(pe: Desired, ready: bool) -> dict[str, Any]:
    spec = pe.body["spec"]
    return {
        "metadata": {
            "name": f"{pe.name}-pod",
            "namespace": "ns",
            "labels": {JOB_LABEL: "unit", SVC_LABEL: SVC_PE, PE_LABEL: str(spec["id"])},
            "annotations": {
                CONTENT_ID_ANNOTATION: spec["contentId"],
                POD_TEMPLATE_ANNOTATION: pe.pod_template,
            },
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_an_edits_first_pass_looks_at_the_pes_it_changes_and_counts_kept_ones_coming_up() -> None:
    """The PEs an edit keeps are looked at from its second pass on, so its first writes wait only
    for those it changes; the first pass still counts a kept PE with no ready pod as coming up (the
    first batch stays within maxUnavailable), and the second finds what drifted on a kept PE."""
    app = SyntheticSpec(chains=3, length=2)
    job = _job()
    plan = plan_job(job, parse_adl(synthetic_adl(app)), job_id=3, nodes=3)
    running = desired_objects(job, UID, plan, generation=1, stamp=STAMP)
    rebuilt = parse_adl(synthetic_adl(replace(app, rebuilt=frozenset({1}))))
    new_plan = plan_job(job, rebuilt, job_id=3, nodes=3, ids_from={pe.id: pe.operators for pe in plan.pes})
    wanted = desired_objects(
        job, UID, new_plan, generation=2, stamp=STAMP, earlier=Rendered(job.spec, plan, running)
    )
    target = Target(job, KeptPlan(2, 3, new_plan, wanted), "digest", plan)
    content = {pe.id: pe.content_id for pe in plan.pes}
    changed = sorted(pe.id for pe in new_plan.pes if content[pe.id] != pe.content_id)
    kept = [pe.id for pe in new_plan.pes if pe.id not in changed]
    assert changed
    assert len(kept) >= 2

    # caches filled by hand, as an informer would (the job counts read them when made)
    pe_cache, pod_cache = hand_fed_informer(PES), hand_fed_informer(PODS)
    pes, pods = pe_cache.store, pod_cache.store
    pods.index_label(JOB_LABEL)
    unready, drifted = f"unit-{kept[0]}", f"unit-{kept[1]}"
    for child in running:
        if child.resource != PES:
            continue
        body = {**child.body, "metadata": {**child.body["metadata"], "resourceVersion": "1"}}
        if child.name == drifted:  # set on the live PE since: the target's spec is not
            body = {**body, "spec": {**body["spec"], "runtimeTraceLevel": "DEBUG"}}
        pes.put(ObjectKey("ns", child.name), body)
        pods.put(ObjectKey("ns", f"{child.name}-pod"), _pod(child, ready=child.name != unready))

    ready = JobCounts(pe_cache, pod_cache).ready_pes(ObjectKey("ns", "unit"))
    target.defer(kept)
    quiet, disruptive, replaced, in_flight = target.survey(pes, pods, "ns", "unit", ready)
    assert (quiet, disruptive) == ([], [f"unit-{i}" for i in changed])
    assert replaced == set(disruptive)
    assert in_flight == 1  # the kept PE whose pod is not ready

    quiet, disruptive, _, in_flight = target.survey(pes, pods, "ns", "unit", ready)
    assert sorted(quiet + disruptive) == sorted(
        [drifted, *(f"unit-{i}" for i in changed)]
    )  # none patched yet
    assert in_flight == 1
