"""A bundle upgrade rolled out through the sandbox, read back from the API server's own history of
every pod: the PEs whose content changed are replaced a batch (``maxUnavailable``) at a time, the
replacements of a batch together; no PE ever has two live pods; every other PE keeps its pod; a
PE deleted while the upgrade runs is made again and waited for before the upgrade is done."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from job_inventory import pe_pods
from k8s_support import eventually_async
from operator_support import first_status, job_manifest, job_status, operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.jobs.counts import pod_ready
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox

PES_IN_JOB = 12
BATCH = 2  # maxUnavailable


@dataclass(frozen=True)
class PodChange:
    rv: int
    pe: int
    pod: str
    live: bool  # not being deleted, not gone
    ready: bool


def pod_changes(sandbox: Sandbox, job: str) -> list[PodChange]:
    """Every change of every PE pod of ``job`` the API server made, in resourceVersion order."""
    names = {
        json.loads(r.body)["metadata"]["name"]
        for r in sandbox.requests
        if r.method == "POST" and r.info is not None and r.info.resource == "pods" and r.status == 201
    }
    changes = []
    for name in names:
        for event in sandbox.history("pods", name, "default"):
            labels = event.obj["metadata"].get("labels") or {}
            if labels.get(JOB_LABEL) != job or labels.get(SVC_LABEL) != "pe":
                continue
            live = event.type != "DELETED" and not event.obj["metadata"].get("deletionTimestamp")
            changes.append(
                PodChange(event.rv, int(labels[PE_LABEL]), name, live, live and pod_ready(event.obj))
            )
    return sorted(changes, key=lambda c: c.rv)


def most_live_pods(changes: list[PodChange], pes: set[int]) -> int:
    """The most live pods one PE of ``pes`` had at any moment."""
    live: dict[int, set[str]] = {}
    most = 0
    for change in (c for c in changes if c.pe in pes):
        pods = live.setdefault(change.pe, set())
        (pods.add if change.live else pods.discard)(change.pod)
        most = max(most, len(pods))
    return most


def most_unready_at_once(changes: list[PodChange], pes: set[int], after: int) -> int:
    """The most PEs of ``pes`` without a ready pod at one moment, from resourceVersion ``after``."""
    ready: dict[int, set[str]] = {}
    most = 0
    for change in changes:
        pods = ready.setdefault(change.pe, set())
        (pods.add if change.ready else pods.discard)(change.pod)
        if change.rv > after:
            most = max(most, sum(1 for pe in pes if not ready.get(pe)))
    return most


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def content_ids(client: KubeClient, job: str) -> dict[int, str]:
    items, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}={job}")
    return {int(p["spec"]["id"]): p["spec"]["contentId"] for p in items}


async def relaunch_events(client: KubeClient) -> int:
    items, _ = await client.list_all(EVENTS, "default")
    return sum(1 for e in items if e.get("reason") == "Relaunching")


# Pods start a moment after they are bound, so the upgrade is still rolling when a PE is deleted.
@pytest.mark.sandbox(nodes=2, start_delay=0.5)
async def test_a_bundle_upgrade_replaces_changed_pes_a_batch_together_never_two_pods_for_one_pe(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    spec = SyntheticSpec(chains=4, length=3)
    v1 = write_sab(tmp_path / "v1" / "app.sab", spec)
    v2 = write_sab(
        tmp_path / "v2" / "app.sab", SyntheticSpec(chains=4, length=3, rebuilt=frozenset({1, 4, 7, 10}))
    )
    manifest = job_manifest("roll", v1, fusion={"manual": PES_IN_JOB}, maxUnavailable=BATCH)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, manifest)
        await wait_for_phase(client, "roll", "Running")
        before, contents = await pe_pods(client, "roll"), await content_ids(client, "roll")
        relaunched_before = await relaunch_events(client)
        table_before = (await client.get(CONFIGMAPS, "roll", "default"))["metadata"]["resourceVersion"]
        edited_at = max(c.rv for c in pod_changes(sandbox, "roll"))
        since = (await client.get(JOBS, "roll", "default"))["metadata"]["resourceVersion"]
        await client.patch(JOBS, "roll", {"spec": {"bundle": {"file": {"path": str(v2)}}}}, "default")
        upgrading = await first_status(client, "roll", lambda s: s.get("phase") == "Upgrading", since)
        replaced = set(upgrading["upgrade"]["replaced"])
        kept = sorted(set(before) - replaced)
        # A PE the edit keeps is deleted while the upgrade runs: it is made again, and the upgrade
        # is done only once it runs.
        deleted = kept[-1]
        await client.delete(PES, f"roll-{deleted}", "default")

        async def upgraded() -> bool:
            status = await job_status(client, "roll")
            ready = [c for c in status.get("conditions") or () if c["type"] == "Ready"]
            return status.get("appliedGeneration") == 2 and [c["status"] for c in ready] == ["True"]

        await eventually_async(upgraded, within=60)
        after = await pe_pods(client, "roll")
        changes = pod_changes(sandbox, "roll")
        table_after = (await client.get(CONFIGMAPS, "roll", "default"))["metadata"]["resourceVersion"]
        changed = {i for i, content in (await content_ids(client, "roll")).items() if content != contents[i]}

    assert changed == replaced  # only the PEs whose content changed
    assert 2 < len(changed) < PES_IN_JOB  # a PE holds one or two of the rebuilt operators
    for pe in changed:  # replaced: a new pod, launch count + 1
        assert after[pe][0] != before[pe][0]
        assert after[pe][1] == before[pe][1] + 1
    for pe in kept:
        if pe != deleted:
            assert after[pe] == before[pe]  # the same pod: same uid, same launch
    assert after[deleted][0] != before[deleted][0]  # the PE made again has a pod of its own
    assert await relaunch_events(client) - relaunched_before == len(changed)
    # the PE ports are as they were: the name table is not written again (to move its date line)
    assert table_after == table_before
    # (the PE deleted by hand is left out: the garbage collector removes its pod in its own time)
    assert most_live_pods(changes, set(before) - {deleted}) == 1
    # the replaced PEs went a batch at a time, the PEs of a batch together
    assert most_unready_at_once(changes, changed, after=edited_at) == BATCH
    # the upgrade waited for the PE made again: its pod was ready before the job said Ready
    ready_again = min(c.rv for c in changes if c.pe == deleted and c.ready and c.rv > edited_at)
    applied_at = min(
        e.rv
        for e in sandbox.history("streamsjobs", "roll", "default", group="streams.ibm.com")
        if (e.obj.get("status") or {}).get("appliedGeneration") == 2
    )
    assert ready_again < applied_at
