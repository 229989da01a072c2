"""What a job's reconcile reads instead of walking every child, pod and PE of the job: the counts
kept from the pod and PE events (`jobs.counts`) and the children changed since the last check
(`children.changes`). Fed with watch events the way the informer applies them."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_support import hand_fed_informer
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL, SVC_PE
from streams_k8s.controller.children.changes import ChildChanges
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.jobs.counts import JobCounts
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS
from streams_k8s.k8s.objects import ObjectKey

JOB = ObjectKey("default", "app")
_versions = iter(range(1, 1_000_000))


def event(inf: Informer, kind: str, obj: dict[str, Any]) -> None:
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    inf.apply_event({"type": kind, "object": obj})


def pod(name: str, pe: int, ready: bool) -> dict[str, Any]:
    labels = {JOB_LABEL: "app", PE_LABEL: str(pe), SVC_LABEL: SVC_PE}
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    status = {"phase": "Running" if ready else "Pending", "conditions": conditions}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "status": status}


def pe(pe_id: int, **status: str) -> dict[str, Any]:
    labels = {JOB_LABEL: "app"}
    meta = {"name": f"app-{pe_id}", "namespace": "default", "labels": labels}
    return {"metadata": meta, "spec": {"id": pe_id}, "status": status}


def test_ready_pods_count_each_pe_once_and_follow_every_change() -> None:
    pes, pods = hand_fed_informer(PES), hand_fed_informer(PODS)
    counts = JobCounts(pes, pods)
    event(pods, "ADDED", pod("app-0-a", 0, ready=False))
    assert counts.pods_ready(JOB) == 0
    event(pods, "MODIFIED", pod("app-0-a", 0, ready=True))
    event(pods, "ADDED", pod("app-0-b", 0, ready=True))  # a second launch of PE 0, briefly both ready
    event(pods, "ADDED", pod("app-1-a", 1, ready=True))
    assert counts.pods_ready(JOB) == 2
    event(pods, "DELETED", pod("app-0-a", 0, ready=False))  # the final state differs from what counted
    assert counts.pods_ready(JOB) == 2
    event(pods, "DELETED", pod("app-0-b", 0, ready=True))
    event(pods, "DELETED", pod("app-1-a", 1, ready=True))
    assert counts.pods_ready(JOB) == 0
    assert counts.retained() == 0


def test_running_and_stopped_pes_follow_their_status() -> None:
    pes, pods = hand_fed_informer(PES), hand_fed_informer(PODS)
    counts = JobCounts(pes, pods)
    event(pes, "ADDED", pe(0, connectivity="Full"))
    event(pes, "ADDED", pe(1, connectivity="Partial"))
    assert (counts.pes_running(JOB), counts.pes_stopped(JOB)) == (1, [])
    event(pes, "MODIFIED", pe(0, connectivity="Full", phase="Deleted"))  # stopped: its report is stale
    assert counts.pes_running(JOB) == 0
    assert [p["metadata"]["name"] for p in counts.pes_stopped(JOB)] == ["app-0"]
    event(pes, "DELETED", pe(0))
    event(pes, "DELETED", pe(1))
    assert (counts.pes_running(JOB), counts.pes_stopped(JOB), counts.retained()) == (0, [], 0)


def config_map(name: str, data: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "labels": {JOB_LABEL: "app"}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": data}}


def test_a_check_sees_all_children_once_then_only_those_with_an_event_since() -> None:
    jobs, cms = hand_fed_informer(JOBS), hand_fed_informer(CONFIGMAPS)
    event(jobs, "ADDED", {"metadata": {"name": "app", "namespace": "default"}})
    changes = ChildChanges(jobs, {CONFIGMAPS: cms})
    children = [Desired(CONFIGMAPS, config_map(f"app-{i}", "x")) for i in range(3)]
    for child in children:
        event(cms, "ADDED", config_map(child.name, "x"))
    with changes.to_check(JOB, children) as pending:
        assert pending == children  # the plan's first check
    with changes.to_check(JOB, children) as pending:
        assert pending == []
    event(cms, "MODIFIED", config_map("app-1", "y"))
    event(cms, "DELETED", config_map("app-2", "x"))
    seen: set[str] = set()

    def failing_check() -> None:
        with changes.to_check(JOB, children) as pending:
            seen.update(c.name for c in pending)
            raise RuntimeError("the check failed")

    with pytest.raises(RuntimeError):
        failing_check()
    assert seen == {"app-1", "app-2"}
    with changes.to_check(JOB, children) as pending:  # kept for the next check
        assert {c.name for c in pending} == {"app-1", "app-2"}
    changes.forget(JOB)
    assert len(changes) == 0


def test_a_new_plan_checks_what_it_renders_anew_and_the_pes_the_cache_lacks() -> None:
    """A change's target reuses the children it leaves (the same `Desired`): its check takes the
    others, those with an event since and the PEs missing (one the last check left deleted, as
    `keep` leaves a PE that is not restartable)."""
    jobs, cms, pes = hand_fed_informer(JOBS), hand_fed_informer(CONFIGMAPS), hand_fed_informer(PES)
    event(jobs, "ADDED", {"metadata": {"name": "app", "namespace": "default"}})
    changes = ChildChanges(jobs, {CONFIGMAPS: cms, PES: pes})
    children = [Desired(CONFIGMAPS, config_map(f"app-{i}", "x")) for i in range(3)]
    children += [Desired(PES, pe(i)) for i in (3, 4)]
    for child in children[:4]:
        live = {**child.body, "metadata": dict(child.body["metadata"])}
        event(cms if child.resource == CONFIGMAPS else pes, "ADDED", live)
    with changes.to_check(JOB, children) as pending:
        assert pending == children  # the PE app-4 is left missing
    event(cms, "MODIFIED", config_map("app-1", "y"))
    rendered_anew = Desired(CONFIGMAPS, config_map("app-2", "z"))
    target = [children[0], children[1], rendered_anew, *children[3:]]
    with changes.to_check(JOB, target) as pending:
        assert [c.name for c in pending] == ["app-1", "app-2", "app-4"]
    with changes.to_check(JOB, target) as pending:
        assert pending == []  # then only those with an event since
    with changes.to_check(JOB, list(children)) as pending:  # back: app-2 as the last check did not see it
        assert [c.name for c in pending] == ["app-2", "app-4"]
