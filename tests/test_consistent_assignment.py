"""Which jobs a coordinator pod runs: dedicated (one job) and the scheduler-placed shared pool."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streams_k8s.api.consistent_region import VReplicaPlacement
from streams_k8s.consistent.assignment import PlacedJobs, SingleJob, runner_of
from streams_k8s.consistent.coordinator_objects import job_of_host, pod_observation
from streams_k8s.consistent.health import PodObservation
from streams_k8s.k8s.objects import ObjectKey

PODS = [f"streams-cr-{i}" for i in range(12)]


def operator(job: str, placements: dict[str, int], *, mode: str = "shared", **meta: Any) -> dict[str, Any]:
    wire = [{"podName": pod, "vreplicas": n} for pod, n in placements.items()]
    return {
        "metadata": {"name": f"{job}-consistent-region-operator", "namespace": "ns", **meta},
        "spec": {"jobName": job, "numRegions": sum(placements.values()) or 1, "mode": mode},
        "status": {"placements": wire},
    }


def placed(**pods: int) -> list[VReplicaPlacement]:
    return [VReplicaPlacement(pod_name=pod.replace("_", "-"), vreplicas=n) for pod, n in pods.items()]


def test_a_dedicated_pod_runs_its_job_only() -> None:
    single = SingleJob("ns", "a")
    assert single.owns(ObjectKey("ns", "a"))
    assert not single.owns(ObjectKey("other", "a"))
    assert not single.owns(ObjectKey("ns", "b"))


def test_the_runner_holds_most_of_the_regions_ties_to_the_lowest_ordinal() -> None:
    assert runner_of(placed(pool_0=1, pool_1=3)) == "pool-1"
    assert runner_of(placed(pool_2=2, pool_1=2, pool_3=1)) == "pool-1"
    assert runner_of(placed(pool_10=2, pool_9=2)) == "pool-9"  # by ordinal, not by name
    assert runner_of([]) is None


@given(st.dictionaries(st.sampled_from(PODS), st.integers(1, 5), min_size=1))
def test_the_runner_does_not_depend_on_the_order_of_the_placements(held: dict[str, int]) -> None:
    placements = [VReplicaPlacement(pod_name=pod, vreplicas=n) for pod, n in held.items()]
    runner = runner_of(placements)
    assert runner_of(list(reversed(placements))) == runner
    assert runner is not None
    assert held[runner] == max(held.values())


def test_a_pod_owns_the_jobs_it_runs_and_hears_when_that_changes() -> None:
    jobs = PlacedJobs("pool-1")
    changes: list[int] = []
    jobs.subscribe(lambda: changes.append(1))
    a = operator("a", {"pool-0": 1, "pool-1": 2})
    jobs.observe(None, a)
    assert jobs.owns(ObjectKey("ns", "a"))
    assert changes == [1]
    jobs.observe(None, operator("b", {"pool-0": 2}))
    assert not jobs.owns(ObjectKey("ns", "b"))
    assert changes == [1]
    moved = operator("a", {"pool-0": 3})  # evicted from pool-1
    jobs.observe(a, moved)
    assert not jobs.owns(ObjectKey("ns", "a"))
    assert jobs.runner(ObjectKey("ns", "a")) == "pool-0"
    assert changes == [1, 1]
    jobs.observe(moved, None)
    assert jobs.runner(ObjectKey("ns", "a")) is None


def test_unplaced_dedicated_and_deleting_jobs_run_nowhere() -> None:
    jobs = PlacedJobs("pool-0")
    jobs.observe(None, operator("new", {}))
    jobs.observe(None, operator("dedicated", {"pool-0": 1}, mode="dedicated"))
    jobs.observe(None, operator("going", {"pool-0": 1}, deletionTimestamp="2026-01-01T00:00:00Z"))
    bad = operator("bad", {"pool-0": 1})
    bad["status"]["placements"].append({"podName": "", "vreplicas": "x"})  # skipped, not fatal
    jobs.observe(None, bad)
    assert [job for job in ("new", "dedicated", "going", "bad") if jobs.owns(ObjectKey("ns", job))] == ["bad"]


def test_the_job_is_read_from_the_api_service_host() -> None:
    assert job_of_host("streams-my-job-consistentregion-api.team-a:10000") == ObjectKey("team-a", "my-job")
    assert job_of_host("streams-j-consistentregion-api.ns.svc.cluster.local") == ObjectKey("ns", "j")
    assert job_of_host("127.0.0.1:10000") is None
    assert job_of_host("streams--consistentregion-api.ns") is None
    assert job_of_host("streams-j-consistentregion-api") is None  # no namespace


def test_pod_observations_come_from_the_pe_labels_owner_and_phase() -> None:
    pod = {
        "metadata": {
            "labels": {"streams.ibm.com/pe": "4", "streams.ibm.com/launch-count": "2"},
            "ownerReferences": [{"uid": "pe-uid", "controller": True}],
        },
        "status": {"phase": "Running"},
    }
    assert pod_observation(pod) == PodObservation(4, 2, "pe-uid", "Running")
    assert pod_observation({"metadata": {"labels": {"streams.ibm.com/pe": "x"}}}) is None
