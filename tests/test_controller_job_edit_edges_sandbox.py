"""Known edges of editing a running job, each once a defect: on a job resized through its
ParallelRegion, an edit compares the regions, Exports and Imports it writes with those of the widths
that run (not the spec's), so what the user or the coordinator set on a region the edit leaves as it
was is kept; a bundle edit deletes the ParallelRegions, ConsistentRegions and coordinator of what it
drops; an operator stopped after the commit recorded the new widths but before the Job's status
said so finishes the same edit (the same PE ids); one stopped in the middle of a rollback finishes
it with the PEs that ran before the undone edit (the same ids, none twice); a rollback puts back
the Exports the undone edit wrote; an edit made as soon as the one before runs rolls back to that
one, not further."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import test_controller_job_edits_sandbox as edits
from job_inventory import pe_pods
from k8s_support import eventually_async
from operator_support import job_manifest, job_status, operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.app.synthetic import Exported, SyntheticSpec, write_sab
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    EXPORTS,
    JOBS,
    PARALLEL_REGIONS,
)
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox
from test_controller_checkpoints_sandbox import SANDBOX, ConsistentJob, consistent_job
from test_controller_job_edits_sandbox import pe_specs, region_widths
from test_controller_job_upgrade_modes_sandbox import TRACE, applied


@SANDBOX
async def test_an_edit_of_a_resized_job_keeps_what_was_set_on_a_region_it_leaves_as_it_was(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A consistent region around a parallel region: resized to 3, its ConsistentRegion holds the
    third channel's PEs; the user makes it periodic; a pod-setting edit keeps it periodic."""
    spec = SyntheticSpec(chains=1, length=3, consistent_chains=1, regions=1, width=2)
    bundle = write_sab(tmp_path / "app.sab", spec)
    async with consistent_job(sandbox, monkeypatch, tmp_path, bundle, fusion={"legacy": True}) as job:
        (region,) = (await job.client.list_all(PARALLEL_REGIONS, "default"))[0]
        at_two = await pe_pods(job.client, job.name)
        (cr,) = await job.regions()
        in_region = len(cr["spec"]["pesInRegion"])
        scale = {"spec": {"replicas": 3}}
        await job.client.patch(
            PARALLEL_REGIONS, region["metadata"]["name"], scale, "default", subresource="scale"
        )

        async def resized() -> bool:
            (cr,) = await job.regions()
            pes = await pe_specs(job.client, job.name)
            return (
                await region_widths(job.client, job.name) == [(3, 3)]
                and len(pes) > len(at_two)
                and len(cr["spec"]["pesInRegion"]) == in_region + 1  # the third channel's PE
            )

        await eventually_async(resized, within=30)
        await eventually_async(lambda: job.all_in("PROCESSING"), within=30)
        await job.periodic(0.5)
        await eventually_async(lambda: job.all_in("PROCESSING"), within=30)
        (cr,) = await job.regions()
        set_by_user = {k: cr["spec"][k] for k in ("trigger", "period")}

        await job.client.patch(JOBS, job.name, TRACE, "default")
        await eventually_async(lambda: applied(job, 2), within=60)
        (cr,) = await job.regions()
        assert {k: cr["spec"].get(k) for k in set_by_user} == set_by_user
        assert await region_widths(job.client, job.name) == [(3, 3)]


@SANDBOX
async def test_a_bundle_edit_deletes_the_regions_and_coordinator_of_what_it_drops(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """v1 has a parallel region inside a consistent region, v2 neither: after the edit the job has
    no ParallelRegion, ConsistentRegion or ConsistentRegionOperator left."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    v1 = write_sab(
        tmp_path / "v1" / "app.sab", SyntheticSpec(chains=2, length=3, consistent_chains=1, regions=1)
    )
    v2 = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=2, length=3))
    async with consistent_job(sandbox, monkeypatch, tmp_path, v1, fusion={"legacy": True}) as job:
        assert await _children(job, PARALLEL_REGIONS)
        assert await _children(job, CONSISTENT_REGION_OPERATORS)
        await job.client.patch(JOBS, job.name, {"spec": {"bundle": {"file": {"path": str(v2)}}}}, "default")
        await eventually_async(lambda: applied(job, 2), within=60)

        async def dropped() -> bool:
            kinds = (PARALLEL_REGIONS, CONSISTENT_REGIONS, CONSISTENT_REGION_OPERATORS)
            return not any([await _children(job, kind) for kind in kinds])

        await eventually_async(dropped, within=10)


async def _children(job: ConsistentJob, resource: Resource) -> list[str]:
    items, _ = await job.client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job.name}")
    return [i["metadata"]["name"] for i in items if not i["metadata"].get("deletionTimestamp")]


def _fused_by_hand(tmp_path: Path, name: str) -> dict[str, Any]:
    """A job of two parallel regions of width 2 (set by submission-time values) fused into 5 PEs:
    a region's new channel joins PEs of other operators."""
    spec = SyntheticSpec(chains=2, length=3, regions=2, width_values=True, required_values=True)
    bundle = write_sab(tmp_path / "app.sab", spec)
    values = {"width0": "2", "width1": "2"}
    return job_manifest(name, bundle, fusion={"manual": 5}, submissionTimeValues=values)


@pytest.mark.sandbox(nodes=2)
async def test_an_operator_stopped_between_the_width_record_and_the_commit_finishes_the_same_edit(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A width edit of a job fused into a fixed number of PEs (the new channel's operators join
    existing PEs, and PEs get new ids): the ParallelRegion already says the new width when the Job's
    status commit fails and the operator stops. The next operator finishes that edit with the PEs
    it made (same ids, operators and pods), instead of planning the edit again from the new widths."""
    manifest = _fused_by_hand(tmp_path, "crash")
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await client.create(JOBS, manifest)
            await edits.applied(client, "crash", 1)
            await client.patch(JOBS, "crash", {"spec": {"submissionTimeValues": {"width0": "3"}}}, "default")

            async def prepared() -> bool:  # written ahead, regions prepared: next is the PEs
                return bool(((await job_status(client, "crash")).get("upgrade") or {}).get("checkpoint"))

            await eventually_async(prepared, within=30)
            sandbox.faults.fail(500, None, verb="patch", resource="streamsjobs")  # no status write lands

            async def width_recorded() -> bool:
                return sorted(await region_widths(client, "crash")) == [(2, 2), (3, 3)]

            await eventually_async(width_recorded, within=60)
            made = {i: s["operators"] for i, s in (await pe_specs(client, "crash")).items()}
            pods = await pe_pods(client, "crash")
        sandbox.faults.clear()
        assert "upgrade" in await job_status(client, "crash")  # stopped mid-commit
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            status = await edits.applied(client, "crash", 2)
            assert {i: s["operators"] for i, s in (await pe_specs(client, "crash")).items()} == made
            assert await pe_pods(client, "crash") == pods
            assert status["processingElements"] == len(made)
            assert sorted(await region_widths(client, "crash")) == [(2, 2), (3, 3)]


@pytest.mark.sandbox(nodes=2)
async def test_a_resized_region_keeps_its_width_through_edit_after_edit_and_a_restart(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Scaled to 3, a region stays at 3 through one pod-setting edit, a second, and one after an
    operator restart; an edit that names the width itself (here the width it had) sets it."""
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, regions=1, width=2))
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await client.create(JOBS, job_manifest("wide", bundle, fusion={"legacy": True}))
            await edits.applied(client, "wide", 1)
            (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
            name, alias = region["metadata"]["name"], region["spec"]["alias"]
            scale = {"spec": {"replicas": 3}}
            await client.patch(PARALLEL_REGIONS, name, scale, "default", subresource="scale")

            async def at_three() -> bool:
                return await region_widths(client, "wide") == [(3, 3)]

            await eventually_async(at_three, within=30)
            for generation, level in ((2, "DEBUG"), (3, "TRACE")):
                trace = {"spec": {"processingElement": {"runtimeTraceLevel": level}}}
                await client.patch(JOBS, "wide", trace, "default")
                await edits.applied(client, "wide", generation)
                assert await region_widths(client, "wide") == [(3, 3)], f"generation {generation}"
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await client.patch(
                JOBS, "wide", {"spec": {"processingElement": {"appTraceLevel": "WARN"}}}, "default"
            )
            await edits.applied(client, "wide", 4)
            assert await region_widths(client, "wide") == [(3, 3)]
            await client.patch(
                JOBS, "wide", {"spec": {"parallelRegions": [{"alias": alias, "width": 2}]}}, "default"
            )
            await edits.applied(client, "wide", 5)
            assert await region_widths(client, "wide") == [(2, 2)]


@pytest.mark.sandbox(nodes=2)
async def test_a_resized_job_fused_by_hand_keeps_its_pes_through_a_restart_and_an_edit(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Manual fusion groups a region's new channel with other operators: a restarted operator
    made that PE a second time (numbering the job's PEs at the spec's widths), and a pod-setting
    edit re-fused the job from scratch, replacing PEs whose content it did not change."""
    manifest = _fused_by_hand(tmp_path, "hand")
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await client.create(JOBS, manifest)
            await edits.applied(client, "hand", 1)
            region = (await edits.regions_of(client, "hand"))[0]
            scale = {"spec": {"replicas": 3}}
            await client.patch(
                PARALLEL_REGIONS, region["metadata"]["name"], scale, "default", subresource="scale"
            )

            async def resized() -> bool:
                return sorted(await region_widths(client, "hand")) == [(2, 2), (3, 3)]

            await eventually_async(resized, within=30)
            await edits.applied(client, "hand", 1)
            resized_pes = {i: sorted(s["operators"]) for i, s in (await pe_specs(client, "hand")).items()}
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await client.patch(JOBS, "hand", TRACE, "default")
            await edits.applied(client, "hand", 2)
            edited = {i: sorted(s["operators"]) for i, s in (await pe_specs(client, "hand")).items()}
            assert edited == resized_pes


@pytest.mark.sandbox(nodes=2)
async def test_a_rollback_resumed_after_a_restart_gives_back_the_stable_pes_with_their_ids(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A resized job is upgraded to a bundle that drops a chain, with pods that fit no node: the
    edit removes the dropped chain's PEs, times out and is rolled back; the operator stops before
    the rollback has made them again (PE creates refused). The next operator finishes the rollback
    with the PEs that ran before the edit, the same ids and operators: the rollback's record says
    which ids it gives back, and what the undone edit started from."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    v1 = write_sab(tmp_path / "v1" / "app.sab", SyntheticSpec(chains=2, length=3, regions=1))
    v2 = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=1, length=3, regions=1))
    manifest = job_manifest("rb", v1, fusion={"legacy": True}, stableAfterSeconds=0)
    edit = {
        "bundle": {"file": {"path": str(v2)}},
        "processingElement": {"resources": {"requests": {"cpu": "500"}}},  # fits no node
        "submissionTimeOutInSeconds": 4,
    }
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await client.create(JOBS, manifest)
            await edits.applied(client, "rb", 1)
            (region,) = await edits.regions_of(client, "rb")
            scale = {"spec": {"replicas": 3}}
            await client.patch(
                PARALLEL_REGIONS, region["metadata"]["name"], scale, "default", subresource="scale"
            )

            async def resized() -> bool:
                return await region_widths(client, "rb") == [(3, 3)]

            await eventually_async(resized, within=30)
            await edits.applied(client, "rb", 1)

            async def stable() -> bool:
                return (await job_status(client, "rb")).get("lastStableGeneration") == 1

            await eventually_async(stable, within=20)
            ran = {i: s["operators"] for i, s in (await pe_specs(client, "rb")).items()}
            await client.patch(JOBS, "rb", {"spec": edit}, "default")

            async def removed() -> bool:
                return not set(ran) <= set(await pe_specs(client, "rb"))

            await eventually_async(removed, within=20)
            sandbox.faults.fail(500, None, verb="create", resource="streamspes")  # not made again
            await wait_for_phase(client, "rb", "RollingBack", within=30)
        sandbox.faults.clear()
        assert (await job_status(client, "rb"))["phase"] == "RollingBack"  # stopped mid-rollback
        assert not set(ran) <= set(await pe_specs(client, "rb"))
        async with operator(sandbox, monkeypatch, tmp_path / "cache"):
            await wait_for_phase(client, "rb", "RolledBack", within=60)
            await eventually_async(lambda: edits._pods_ready(client, "rb", len(ran)), within=30)
            assert {i: s["operators"] for i, s in (await pe_specs(client, "rb")).items()} == ran
            assert await region_widths(client, "rb") == [(3, 3)]


async def export_names(client: KubeClient, job: str) -> list[str | None]:
    items, _ = await client.list_all(EXPORTS, "default", label_selector=f"{JOB_LABEL}={job}")
    return sorted(e["spec"]["stream"].get("name") for e in items)


@pytest.mark.sandbox(nodes=1)
async def test_a_rollback_puts_back_the_exports_the_undone_edit_wrote(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """v2 exports its stream under another name, with pods that fit no node: the edit writes v2's
    Export, times out and is rolled back; the rollback writes v1's Export again (it once kept v2's,
    taking it for one the runtime had edited, as v1's own plan had not changed it)."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    v1 = write_sab(tmp_path / "v1" / "app.sab", SyntheticSpec(chains=1, length=2, exports=(Exported("old"),)))
    v2 = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=1, length=2, exports=(Exported("new"),)))
    edit = {
        "bundle": {"file": {"path": str(v2)}},
        "processingElement": {"resources": {"requests": {"cpu": "500"}}},  # fits no node
        "submissionTimeOutInSeconds": 4,
    }
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        operator(sandbox, monkeypatch, tmp_path / "cache"),
    ):
        await client.create(JOBS, job_manifest("rb", v1, fusion={"legacy": True}, stableAfterSeconds=0))
        await edits.applied(client, "rb", 1)

        async def stable() -> bool:
            return (await job_status(client, "rb")).get("lastStableGeneration") == 1

        await eventually_async(stable, within=20)
        assert await export_names(client, "rb") == ["old"]
        await client.patch(JOBS, "rb", {"spec": edit}, "default")

        async def written() -> bool:
            return await export_names(client, "rb") == ["new"]

        await eventually_async(written, within=20)
        await wait_for_phase(client, "rb", "RolledBack", within=30)
        assert await export_names(client, "rb") == ["old"]


@pytest.mark.sandbox(nodes=1)
async def test_an_edit_made_as_soon_as_the_one_before_runs_rolls_back_to_that_one(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With ``stableAfterSeconds: 0`` a generation is stable once it runs; an edit that arrives
    before the pass that would record it must not skip it: the edit's rollback applied the
    generation before it (v1, undoing the upgrade to v2 that had run)."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    v1 = write_sab(tmp_path / "v1" / "app.sab", SyntheticSpec(chains=1, length=2))
    v2 = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=2, length=2))
    manifest = job_manifest(
        "rb", v1, fusion={"legacy": True}, stableAfterSeconds=0, submissionTimeOutInSeconds=4
    )
    async with (
        await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
        operator(sandbox, monkeypatch, tmp_path / "cache"),
    ):
        await client.create(JOBS, manifest)
        await edits.applied(client, "rb", 1)
        await client.patch(JOBS, "rb", {"spec": {"bundle": {"file": {"path": str(v2)}}}}, "default")

        async def runs_v2() -> bool:
            return (await job_status(client, "rb")).get("appliedGeneration") == 2

        await eventually_async(runs_v2, within=30, every=0.001)
        never_runs = {"processingElement": {"resources": {"requests": {"cpu": "500"}}}}  # fits no node
        await client.patch(JOBS, "rb", {"spec": never_runs}, "default")
        status = await wait_for_phase(client, "rb", "RolledBack", within=30)
        assert (status["lastStableGeneration"], status["appliedGeneration"]) == (2, 2)
        assert status["appliedSpec"]["bundle"]["file"]["path"] == str(v2)
