"""An edit resumed after a restart plans the same PEs, with the same ids, as when it started
(`upgrade_diff.resumed_ids`), though the applied spec's plan made again numbers the PEs otherwise;
a rollback gives back the PEs the edit it undoes removed with their ids (`upgrade_diff.given_back`)."""

from __future__ import annotations

from pathlib import Path

from streams_k8s.api.job import Job
from streams_k8s.app.model import Application
from streams_k8s.app.plan import Plan
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.jobs.upgrade_diff import given_back, pe_operators, plan_edit, resumed_ids
from streams_k8s.controller.planning import plan_job, read_application


def _job(bundle: Path, width0: str) -> Job:
    spec = {
        "bundle": {"name": bundle.name, "file": {"path": str(bundle)}},
        "fusion": {"manual": 5},
        "submissionTimeValues": {"width0": width0, "width1": "2"},
    }
    metadata = {"name": "j", "namespace": "default"}
    return Job.model_validate({"kind": "Job", "metadata": metadata, "spec": spec})


def _edited(tmp_path: Path, before: str, after: str) -> tuple[Application, Job, Job, Plan, Plan]:
    """(app, old job, edited job, the old job's plan, the edit's plan): width0 from before to after."""
    spec = SyntheticSpec(chains=2, length=3, regions=2, width_values=True, required_values=True)
    bundle = write_sab(tmp_path / "app.sab", spec)
    app = read_application(str(bundle), bundle.name)
    old, new = _job(bundle, before), _job(bundle, after)
    running = plan_job(old, app, job_id=0, nodes=2)
    return app, old, new, running, plan_edit(new, app, job_id=0, nodes=2, running=running, applied=old.spec)


def test_a_resumed_width_edit_keeps_the_ids_it_started_with(tmp_path: Path) -> None:
    app, old, new, running, started = _edited(tmp_path, "2", "3")
    next_pe_id = max(pe.id for pe in running.pes) + 1
    assert any(pe.id >= next_pe_id for pe in started.pes)  # the edit adds PEs
    # restarted with the edit's PEs made (and the removed ones deleted): the applied spec's plan
    # made again from them numbers the PEs the edit removed after the ones it added
    again = plan_job(old, app, job_id=0, nodes=2, ids_from=pe_operators(started))
    naive = plan_edit(new, app, job_id=0, nodes=2, running=again, applied=old.spec)
    assert pe_operators(naive) != pe_operators(started)  # what a restart planned before
    ids = resumed_ids(pe_operators(started), next_pe_id)
    resumed = plan_edit(new, app, job_id=0, nodes=2, running=again, applied=old.spec, ids=ids)
    assert pe_operators(resumed) == pe_operators(started)
    # restarted before it made any PE: the same ids too
    ids = resumed_ids(pe_operators(running), next_pe_id)
    resumed = plan_edit(new, app, job_id=0, nodes=2, running=running, applied=old.spec, ids=ids)
    assert pe_operators(resumed) == pe_operators(started)


def test_a_rollback_resumed_after_a_restart_gives_back_the_removed_pes_their_ids(tmp_path: Path) -> None:
    app, old, new, stable, edit = _edited(tmp_path, "3", "2")
    removed = sorted(set(pe_operators(stable)) - set(pe_operators(edit)))
    assert removed  # the edit removes PEs, which the rollback makes again
    # restarted before the rollback made them: the applied spec's plan made again numbers them anew
    live = pe_operators(edit)
    again = plan_job(old, app, job_id=0, nodes=2, ids_from=live)
    naive = plan_edit(old, app, job_id=0, nodes=2, running=again, applied=new.spec)
    assert pe_operators(naive) != pe_operators(stable)
    above = max([max(live) + 1, max(pe_operators(stable)) + 1])
    ids = {**resumed_ids(live, above), **given_back(pe_operators(again), live, removed)}
    back = plan_edit(old, app, job_id=0, nodes=2, running=again, applied=new.spec, ids=ids)
    assert pe_operators(back) == pe_operators(stable)
