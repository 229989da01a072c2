"""Planning a Job: its spec checked, its bundle read, its plan made and its placement checked.

The controller's façade over the application pipeline (`streams_k8s.app`): `validate_job` turns
the user's manifest into a `Job` or one clear `JobFailure` naming the field;
`read_application` reads the bundle's ADL; `plan_job` runs the pipeline (ADL → topology → fusion
→ PEs), `replan_job` the same from the plan a job runs (an edit); `check_placement` refuses host
constraints the cluster cannot satisfy. What the plan becomes in Kubernetes objects is
`children.desired`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from streams_k8s.api.job import Job, job_name_problem
from streams_k8s.app.adl import AdlError, parse_adl
from streams_k8s.app.bundle import BundleError, read_bundle
from streams_k8s.app.model import Application
from streams_k8s.app.plan import PLANNING_ERRORS, Plan, plan_application
from streams_k8s.app.replan import Replan, replan
from streams_k8s.controller.placement.constraints import (
    NodeInfo,
    PlacedPe,
    PlacementError,
    PlacementPlan,
    plan_placement,
)


@dataclass(frozen=True, slots=True)
class JobFailure(Exception):
    """Why what the job controller does for a Job cannot go on (a submission, an edit, a width
    change, a checkpoint before a rollout): the status condition it sets (type, reason) and a
    message naming what to fix.

    `retryable`: the cause may go away without a change to the Job (see `jobs.submission`).
    """

    condition: str
    reason: str
    message: str
    retryable: bool = False

    def __str__(self) -> str:
        return self.message


def validate_job(obj: dict[str, Any]) -> Job:
    """The Job model of a manifest, or `JobFailure(Valid, ...)` naming the first bad field."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    if (problem := job_name_problem(name)) is not None:  # the CRD refuses it too, once re-applied
        raise JobFailure("Valid", "InvalidName", f"metadata.name: {problem}")
    try:
        job = Job.from_wire(obj)
    except ValidationError as err:
        first = err.errors()[0]
        location = ".".join(str(p) for p in first["loc"]) or "(object)"
        message = str(first["msg"]).removeprefix("Value error, ")
        more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
        raise JobFailure("Valid", "InvalidSpec", f"{location}: {message}{more}") from None
    return job


def read_application(path: str, what: str) -> Application:
    """The parsed ADL of the bundle at ``path``; `JobFailure(Planned, ...)` if unreadable."""
    try:
        return parse_adl(read_bundle(path).adl, what=what)
    except (BundleError, AdlError, OSError) as err:
        raise JobFailure("Planned", "InvalidBundle", f"bundle {what}: {err}") from None


def _settings(job: Job, job_id: int, nodes: int | None, ids_from: Mapping[int, Sequence[str]] | None) -> Any:
    """What the plan takes from the Job, as the planner's keyword arguments."""
    spec = job.spec
    return {
        "job_name": str(job.metadata.name),
        "job_id": job_id,
        "submission_values": spec.submission_time_values,
        "widths": spec.parallel_regions,
        "resources": spec.processing_element.resources,
        "nodes": nodes,
        "threading": spec.threading_model,
        "ids_from": ids_from,
    }


def plan_job(
    job: Job,
    app: Application,
    *,
    job_id: int,
    nodes: int | None,
    ids_from: Mapping[int, Sequence[str]] | None = None,
) -> Plan:
    """The pipeline's plan of ``app`` for ``job``; `JobFailure(Planned, ...)` if it cannot be.
    ``ids_from``: operator names by PE id (the PEs a job runs), whose ids are kept where operators are."""
    try:
        return plan_application(app, job.spec.fusion, **_settings(job, job_id, nodes, ids_from))
    except PLANNING_ERRORS as err:
        raise JobFailure("Planned", "PlanningFailed", str(err)) from None


def replan_job(
    job: Job,
    app: Application,
    running: Plan,
    *,
    job_id: int,
    nodes: int | None,
    ids_from: Mapping[int, Sequence[str]] | None = None,
) -> Replan:
    """`plan_job`'s plan, made from the plan the job runs (``running``) where the edit keeps the
    application's shape (`app.replan`): only the PEs the edit touches are rendered again."""
    try:
        return replan(running, app, job.spec.fusion, **_settings(job, job_id, nodes, ids_from))
    except PLANNING_ERRORS as err:
        raise JobFailure("Planned", "PlanningFailed", str(err)) from None


def check_placement(job: Job, plan: Plan, nodes: Iterable[NodeInfo]) -> PlacementPlan:
    """Host placement on the cluster now; `JobFailure(Planned, PlacementFailed)` if impossible."""
    try:
        return plan_placement(
            namespace=str(job.metadata.namespace),
            job=str(job.metadata.name),
            pools=plan.host_pools,
            pes=[PlacedPe(pe.id, pe.placement) for pe in plan.pes],
            nodes=nodes,
        )
    except PlacementError as err:
        raise JobFailure("Planned", "PlacementFailed", str(err), err.depends_on_nodes) from None
