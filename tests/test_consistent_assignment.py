"""Which jobs a coordinator pod runs: dedicated (one job) and the rendezvous-hashed shared pool."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streams_k8s.consistent.assignment import RendezvousPool, SingleJob, owner_of
from streams_k8s.consistent.coordinator import job_of_host, pod_observation
from streams_k8s.consistent.health import PodObservation
from streams_k8s.k8s.objects import ObjectKey

JOBS = [ObjectKey("ns", f"job{i}") for i in range(200)]
PODS = [f"streams-cr-{i}" for i in range(4)]


def pool_pod(name: str, ready: bool = True) -> dict[str, Any]:
    status = "True" if ready else "False"
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": status}]}}


def test_a_dedicated_pod_runs_its_job_only() -> None:
    single = SingleJob("ns", "a")
    assert single.owns(ObjectKey("ns", "a"))
    assert not single.owns(ObjectKey("other", "a"))
    assert not single.owns(ObjectKey("ns", "b"))


def test_every_job_has_exactly_one_owner_and_the_jobs_spread() -> None:
    pools = {name: RendezvousPool(name) for name in PODS}
    for pool in pools.values():
        for name in PODS:
            pool.observe(None, pool_pod(name))
    counts = dict.fromkeys(PODS, 0)
    for job in JOBS:
        owners = [name for name, pool in pools.items() if pool.owns(job)]
        assert len(owners) == 1
        counts[owners[0]] += 1
    assert min(counts.values()) >= len(JOBS) // len(PODS) // 2  # no pod is left idle or swamped


def test_losing_a_pod_moves_only_its_jobs_and_tells_the_listeners() -> None:
    pool = RendezvousPool(PODS[0])
    changes: list[int] = []
    pool.subscribe(lambda: changes.append(1))
    for name in PODS:
        pool.observe(None, pool_pod(name))
    before = {job: owner_of(job, pool.members) for job in JOBS}
    pool.observe(pool_pod(PODS[3]), None)
    after = {job: owner_of(job, pool.members) for job in JOBS}
    moved = {job for job in JOBS if before[job] != after[job]}
    assert moved == {job for job in JOBS if before[job] == PODS[3]}
    assert changes
    pool.observe(None, pool_pod(PODS[2], ready=False))  # not Ready: no longer a member
    assert PODS[2] not in pool.members


def test_a_pod_runs_nothing_until_it_is_ready_and_nothing_once_terminating() -> None:
    pool = RendezvousPool(PODS[0])
    assert not any(pool.owns(job) for job in JOBS)  # its own pod not seen yet
    pool.observe(None, pool_pod(PODS[0]))
    assert all(pool.owns(job) for job in JOBS)  # alone in the pool
    terminating = pool_pod(PODS[0])
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pool.observe(pool_pod(PODS[0]), terminating)
    assert not any(pool.owns(job) for job in JOBS)


@given(st.lists(st.sampled_from(PODS), min_size=1, unique=True), st.text(min_size=1, max_size=20))
def test_the_owner_does_not_depend_on_the_order_pods_are_seen(pods: list[str], job: str) -> None:
    key = ObjectKey("ns", job)
    assert owner_of(key, pods) == owner_of(key, list(reversed(pods)))


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
