"""Edits of a running Job applied through the sandbox: exactly the pods whose settings changed are
replaced (by pod UID and launch count), controller-only settings restart nothing, an edit that
cannot be applied changes nothing that runs, and the kstatus conditions tools wait on follow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from job_inventory import pe_pods
from k8s_support import eventually_async
from kubectl_support import KUBECTL, MISSING, Kubectl
from operator_support import condition, first_status, job_manifest, job_status, operator, wait_for_phase
from streams_k8s.api.contract import JOB_LABEL, NAME_TABLE_KEY, PE_LABEL, SVC_LABEL
from streams_k8s.api.job import Job
from streams_k8s.app.plan_diff import PlanDiff, Why
from streams_k8s.app.synthetic import Exported, SyntheticSpec, write_sab
from streams_k8s.controller.jobs.upgrade_diff import preview as upgrade_preview
from streams_k8s.controller.kinds import EXPORTS, JOBS, PARALLEL_REGIONS, PES
from streams_k8s.controller.planning import read_application
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS, SERVICES
from streams_k8s.naming import NameTable
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def reasons(client: KubeClient, name: str) -> list[str]:
    items, _ = await client.list_all(EVENTS, "default")
    return [e["reason"] for e in items if e.get("regarding", {}).get("name") == name]


async def recorded(client: KubeClient, name: str, wanted: set[str]) -> None:
    """Wait for the Job's Events of these reasons: Events go out on their own queue, so they may
    land after the status that the test waited for."""

    async def found() -> bool:
        return wanted <= set(await reasons(client, name))

    await eventually_async(found, within=10)


async def applied(client: KubeClient, name: str, generation: int) -> dict[str, Any]:
    """The status once ``generation`` runs with every pod ready."""
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        seen.clear()
        seen.update(await job_status(client, name))
        ready = next((c for c in seen.get("conditions") or () if c["type"] == "Ready"), {})
        return seen.get("appliedGeneration") == generation and ready.get("status") == "True"

    try:
        await eventually_async(reached, within=60)
    except TimeoutError:
        raise AssertionError(f"generation {generation} of {name} never ran ready; status {seen}") from None
    return seen


@pytest.mark.sandbox(nodes=2)
async def test_pod_setting_edits_replace_exactly_the_pods_they_change_a_batch_at_a_time(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=3, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("edit", bundle, fusion={"manual": 3}, maxUnavailable=1))
        status = await applied(client, "edit", 1)
        assert condition(status, "Reconciling")["status"] == "False"
        assert condition(status, "Stalled")["status"] == "False"
        before = await pe_pods(client, "edit")
        assert sorted(before) == [0, 1, 2]

        # A pod setting of every PE: every pod replaced, launch count + 1, one PE at a time.
        since = (await client.get(JOBS, "edit", "default"))["metadata"]["resourceVersion"]
        await client.patch(
            JOBS, "edit", {"spec": {"processingElement": {"runtimeTraceLevel": "TRACE"}}}, "default"
        )
        upgrading = await first_status(client, "edit", lambda s: s.get("phase") == "Upgrading", since)
        assert upgrading["observedGeneration"] == 2
        assert upgrading["upgrade"]["targetGeneration"] == 2
        assert upgrading["upgrade"]["replaced"] == [0, 1, 2]
        # the offline preview of the same edit names the same PEs
        old = job_manifest("edit", bundle, fusion={"manual": 3}, maxUnavailable=1)
        new = {**old, "spec": {**old["spec"], "processingElement": {"runtimeTraceLevel": "TRACE"}}}
        preview = upgrade_preview(
            Job.model_validate(old), read_application(str(bundle), "app.sab"), Job.model_validate(new),
            read_application(str(bundle), "app.sab"), job_id=upgrading["id"], nodes=upgrading["plannedNodes"],
        )[1].pes  # fmt: skip
        assert sorted(preview.replaced) == upgrading["upgrade"]["replaced"]
        assert (preview.kept, preview.added, preview.removed) == ([], [], [])
        assert condition(upgrading, "Reconciling")["status"] == "True"
        assert condition(upgrading, "Ready")["status"] == "False"
        status = await applied(client, "edit", 2)
        assert status["phase"] == "Running"
        assert "upgrade" not in status
        assert status["appliedSpec"]["processingElement"]["runtimeTraceLevel"] == "TRACE"
        after = await pe_pods(client, "edit")
        assert {i: after[i][1] for i in after} == {i: before[i][1] + 1 for i in before}
        assert not {uid for uid, _ in after.values()} & {uid for uid, _ in before.values()}
        for pe_id in after:
            pe = await client.get(PES, f"edit-{pe_id}", "default")
            assert pe["spec"]["runtimeTraceLevel"] == "TRACE"
        await recorded(client, "edit", {"UpgradeStarted", "UpgradeSucceeded"})

        # A setting that steers only the controller: PE specs follow, no pod is replaced.
        await client.patch(
            JOBS, "edit", {"spec": {"processingElement": {"restartCompletedPod": True}}}, "default"
        )
        await applied(client, "edit", 3)
        assert await pe_pods(client, "edit") == after
        assert (await client.get(PES, "edit-0", "default"))["spec"]["restartCompletedPod"] is True

        # An edit that cannot be applied: nothing that runs changes; Stalled says why.
        await client.patch(
            JOBS, "edit", {"spec": {"bundle": {"file": {"path": str(tmp_path / "gone.sab")}}}}, "default"
        )

        async def refused() -> bool:
            found = await job_status(client, "edit")
            stalled = next((c for c in found.get("conditions") or () if c["type"] == "Stalled"), {})
            return found.get("observedGeneration") == 4 and stalled.get("status") == "True"

        await eventually_async(refused, within=20)
        status = await job_status(client, "edit")
        assert (status["phase"], status["appliedGeneration"]) == ("Running", 3)
        assert condition(status, "SpecApplied")["reason"] == "EditRefused"
        assert "gone.sab" in condition(status, "Stalled")["message"]
        assert "EditRefused" in await reasons(client, "edit")
        assert await pe_pods(client, "edit") == after

        # The next edit is applied (from the last valid spec's children).
        await client.patch(JOBS, "edit", {"spec": {"bundle": {"file": {"path": str(bundle)}}}}, "default")
        status = await applied(client, "edit", 5)
        assert condition(status, "Stalled")["status"] == "False"
        assert await pe_pods(client, "edit") == after


@pytest.mark.skipif(KUBECTL is None, reason=MISSING)
@pytest.mark.sandbox(nodes=1)
async def test_kubectl_waits_for_an_edit_to_be_ready_and_shows_the_applied_generation(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    kubectl = Kubectl(sandbox.kubeconfig_path, tmp_path)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("waited", bundle))
        await kubectl.run("wait", "--for=condition=Ready", "stj/waited", "--timeout=60s")
        await client.patch(
            JOBS, "waited", {"spec": {"processingElement": {"appTraceLevel": "DEBUG"}}}, "default"
        )
        await kubectl.run("wait", "--for=condition=Ready", "stj/waited", "--timeout=60s")
        status = await job_status(client, "waited")
        assert status["appliedGeneration"] == 2
        _, out, _ = await kubectl.run("get", "stj", "waited")
        header, row = out.splitlines()
        assert header.split()[:6] == ["NAME", "STATUS", "PES", "READY", "APPLIED", "GENERATION"]
        assert row.split()[1] == "Running"
        assert row.split()[4:6] == ["2", "2"]


async def children_kept(client: KubeClient, job: str) -> dict[str, list[str]]:
    """Names of the job's PEs, ConfigMaps and Services."""
    found = {}
    for resource in (PES, CONFIGMAPS, SERVICES):
        items, _ = await client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job}")
        found[resource.plural] = sorted(i["metadata"]["name"] for i in items)
    return found


@pytest.mark.sandbox(nodes=1)
async def test_suspend_removes_every_pod_keeps_the_rest_and_resume_and_nonces_relaunch(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("pause", bundle, fusion={"manual": 2}))
        status = await applied(client, "pause", 1)
        job_id, kept, before = (
            status["id"],
            await children_kept(client, "pause"),
            await pe_pods(client, "pause"),
        )

        await client.patch(JOBS, "pause", {"spec": {"state": "Suspended"}}, "default")
        suspended = await wait_for_phase(client, "pause", "Suspended")
        await eventually_async(lambda: _no_pods(client, "pause"), within=20)
        assert (suspended["id"], suspended["appliedGeneration"]) == (job_id, 2)
        assert condition(suspended, "Ready")["status"] == "False"
        assert await children_kept(client, "pause") == kept
        assert {(await client.get(PES, f"pause-{i}", "default"))["status"]["phase"] for i in before} == {
            "Suspended"
        }

        await client.patch(JOBS, "pause", {"spec": {"state": "Running"}}, "default")
        status = await applied(client, "pause", 3)
        assert status["id"] == job_id
        resumed = await pe_pods(client, "pause")
        assert {i: n for i, (_, n) in resumed.items()} == {i: n + 1 for i, (_, n) in before.items()}

        # The Job's restart nonce restarts every pod; a PE's own restarts that pod alone.
        await client.patch(JOBS, "pause", {"spec": {"restartNonce": "one"}}, "default")
        await applied(client, "pause", 4)
        restarted = await pe_pods(client, "pause")
        assert {i: n for i, (_, n) in restarted.items()} == {i: n + 1 for i, (_, n) in resumed.items()}
        await client.patch(PES, "pause-0", {"spec": {"restartNonce": "just-me"}}, "default")

        async def relaunched() -> bool:
            return (await pe_pods(client, "pause")).get(0, ("", 0))[1] == restarted[0][1] + 1

        await eventually_async(relaunched, within=20)
        assert (await pe_pods(client, "pause"))[1] == restarted[1]


async def _no_pods(client: KubeClient, job: str) -> bool:
    items, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    return not items


@pytest.mark.sandbox(nodes=1)
async def test_an_edit_that_never_runs_is_rolled_back_and_a_failed_rollback_stops_in_failed(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    spec = {"fusion": {"manual": 2}, "stableAfterSeconds": 0, "submissionTimeOutInSeconds": 4}
    huge = {"spec": {"processingElement": {"resources": {"requests": {"cpu": "500"}}}}}  # fits no node
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("back", bundle, **spec))
        await applied(client, "back", 1)

        async def stable() -> bool:
            return (await job_status(client, "back")).get("lastStableGeneration") == 1

        await eventually_async(stable, within=20)
        await client.patch(JOBS, "back", huge, "default")
        status = await wait_for_phase(client, "back", "RolledBack", within=40)
        assert status["appliedGeneration"] == 1
        assert condition(status, "Stalled")["reason"] == "RolledBack"
        assert condition(status, "Ready")["message"] == "generation 1 runs; generation 2 is not applied"
        assert "did not reach Running" in condition(status, "SpecApplied")["message"]
        await recorded(client, "back", {"RollingBack", "RolledBack"})
        events, _ = await client.list_all(EVENTS, "default")
        (note,) = [e["note"] for e in events if e["reason"] == "RolledBack"]
        assert "(1 PEs replaced," in note  # the edit had patched its first batch, one PE
        await eventually_async(lambda: _pods_ready(client, "back", 2), within=20)
        assert (await client.get(PES, "back-0", "default"))["spec"]["resources"]["requests"]["cpu"] != "500"
        assert (await job_status(client, "back"))["phase"] == "RolledBack"  # the edit is not retried

        # The next edit fails the same way, and its rollback cannot run either: the node is made
        # full first, so however fast the rollback starts, its pods find no room.
        await client.patch_status(NODES, "node-0", {"allocatable": {"cpu": "1m"}})
        await client.patch(JOBS, "back", {"spec": {**huge["spec"], "restartNonce": "again"}}, "default")
        status = await wait_for_phase(client, "back", "Failed", within=60)
        assert "the rollback did not reach Running" in status["message"]
        await recorded(client, "back", {"RollbackFailed"})
        await asyncio.sleep(3)  # and it stays there: no second rollback
        assert (await job_status(client, "back"))["phase"] == "Failed"
        assert (await reasons(client, "back")).count("RollingBack") == 2


async def _pods_ready(client: KubeClient, job: str, count: int) -> bool:
    items, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    ready = [
        p
        for p in items
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions") or ()
        )
    ]
    return len(ready) == count


@pytest.mark.sandbox(nodes=2)
async def test_a_bundle_upgrade_keeps_pe_ids_replaces_only_changed_content_and_exports_follow(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v2 of the application (the same bundle name, from another place) adds a chain (new
    operators, a new Export) and drops v1's export: PEs whose operators and content stay keep their
    ids and pods; the name table names every PE whose pod runs; the job's Exports are v2's."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    v1 = write_sab(
        tmp_path / "v1" / "app.sab",
        SyntheticSpec(chains=2, length=2, fan_in=False, exports=(Exported("old"),)),
    )
    v2 = write_sab(
        tmp_path / "v2" / "app.sab",
        SyntheticSpec(chains=3, length=2, fan_in=False, exports=(Exported(), Exported("new"))),
    )
    spec = {"fusion": {"legacy": True}}
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("up", v1, **spec))
        await applied(client, "up", 1)
        before, pes_before = await pe_pods(client, "up"), await pe_specs(client, "up")
        old_manifest, new_manifest = job_manifest("up", v1, **spec), job_manifest("up", v2, **spec)
        expected = upgrade_preview(
            Job.model_validate(old_manifest), read_application(str(v1), "app.sab"),
            Job.model_validate(new_manifest), read_application(str(v2), "app.sab"), job_id=0, nodes=2,
        )[1].pes  # fmt: skip
        await client.patch(JOBS, "up", {"spec": {"bundle": new_manifest["spec"]["bundle"]}}, "default")
        status = await applied(client, "up", 2)

        after, pes_after = await pe_pods(client, "up"), await pe_specs(client, "up")
        assert status["processingElements"] == len(pes_after)
        assert sorted(pes_after) == sorted(
            [*expected.kept, *expected.updated, *expected.replaced, *expected.added]
        )
        assert expected.added
        assert expected.kept  # the chain v2 leaves alone
        for pe_id in expected.kept:
            assert pes_after[pe_id]["operators"] == pes_before[pe_id]["operators"]
            assert after[pe_id] == before[pe_id]  # same pod: same uid, same launch
        for pe_id in expected.replaced:
            assert after[pe_id][1] == before[pe_id][1] + 1
        table = NameTable.parse((await client.get(CONFIGMAPS, "up", "default"))["data"][NAME_TABLE_KEY])
        receiving = {i for i, pe in pes_after.items() if pe.get("inputPorts")}
        assert {label.pe_id for label in table.values()} == receiving  # every PE with an input port
        # and the table was already this one when each new pod was made
        new_pods = [*expected.replaced, *expected.added]
        for pe_id, created in (await pods_created(sandbox, client, "up")).items():
            if pe_id in new_pods:
                assert name_table_at(sandbox, "up", created) == dict(table), f"PE {pe_id}'s pod"
        exports, _ = await client.list_all(EXPORTS, "default", label_selector=f"{JOB_LABEL}=up")
        names = {e["spec"]["stream"].get("name") for e in exports}
        assert "new" in names
        assert "old" not in names


async def pods_created(sandbox: Sandbox, client: KubeClient, job: str) -> dict[int, int]:
    """The resourceVersion each PE's current pod was created at, by PE id."""
    items, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    return {
        int(p["metadata"]["labels"][PE_LABEL]): sandbox.history("pods", p["metadata"]["name"], "default")[
            0
        ].rv
        for p in items
        if not p["metadata"].get("deletionTimestamp")
    }


def name_table_at(sandbox: Sandbox, job: str, version: int) -> dict[Any, Any]:
    """The job's name table as it was just before resourceVersion ``version``."""
    texts = [
        e.obj["data"][NAME_TABLE_KEY]
        for e in sandbox.history("configmaps", job, "default")
        if e.rv < version and e.type != "DELETED"
    ]
    return dict(NameTable.parse(texts[-1]))


async def pe_specs(client: KubeClient, job: str) -> dict[int, dict[str, Any]]:
    items, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}={job}")
    return {int(p["spec"]["id"]): p["spec"] for p in items}


async def regions_of(client: KubeClient, job: str) -> list[dict[str, Any]]:
    items, _ = await client.list_all(PARALLEL_REGIONS, "default", label_selector=f"{JOB_LABEL}={job}")
    return items


async def region_widths(client: KubeClient, job: str) -> list[tuple[int, int | None]]:
    """(spec.width, status.width) of the job's ParallelRegions."""
    return [(r["spec"]["width"], (r.get("status") or {}).get("width")) for r in await regions_of(client, job)]


@pytest.mark.sandbox(nodes=2)
async def test_a_resized_job_keeps_its_widths_through_an_edit_until_the_spec_changes_them(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("kept", bundle, fusion={"legacy": True}))
        await applied(client, "kept", 1)
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name, alias = region["metadata"]["name"], region["spec"]["alias"]
        at_two = await pe_pods(client, "kept")

        # `kubectl scale stpr/NAME --replicas=3`
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"replicas": 3}}, "default", subresource="scale")

        async def resized() -> bool:
            pods = await pe_pods(client, "kept")
            return await region_widths(client, "kept") == [(3, 3)] and len(pods) > len(at_two)

        await eventually_async(resized, within=30)

        async def all_ready() -> bool:
            return await _pods_ready(client, "kept", len(await pe_specs(client, "kept")))

        await eventually_async(all_ready, within=30)
        at_three, specs = await pe_pods(client, "kept"), await pe_specs(client, "kept")

        # A pod-setting edit: every PE of the width applied replaced, none added or removed.
        trace = {"spec": {"processingElement": {"runtimeTraceLevel": "TRACE"}}}
        await client.patch(JOBS, "kept", trace, "default")
        status = await applied(client, "kept", 2)
        assert await region_widths(client, "kept") == [(3, 3)]
        after = await pe_pods(client, "kept")
        assert sorted(after) == sorted(at_three)
        assert status["processingElements"] == len(at_three)
        assert {i: n for i, (_, n) in after.items()} == {i: n + 1 for i, (_, n) in at_three.items()}
        assert {i: s["operators"] for i, s in (await pe_specs(client, "kept")).items()} == {
            i: s["operators"] for i, s in specs.items()
        }
        await asyncio.sleep(2)  # and the width stays applied (no resize back to the spec's)
        assert await region_widths(client, "kept") == [(3, 3)]
        assert await pe_pods(client, "kept") == after

        # The spec's own width edit is what changes it: back to 2, the third channel's PEs go.
        await client.patch(
            JOBS, "kept", {"spec": {"parallelRegions": [{"alias": alias, "width": 2}]}}, "default"
        )
        status = await applied(client, "kept", 3)
        assert await region_widths(client, "kept") == [(2, 2)]
        narrowed = await pe_pods(client, "kept")
        assert sorted(narrowed) == sorted(at_two)
        assert status["processingElements"] == len(at_two)
        kept = [i for i in narrowed if narrowed[i] == after[i]]
        assert kept  # the channels that stay keep their pods
        for i in set(narrowed) - set(kept):
            assert narrowed[i][1] == after[i][1] + 1


async def edit_replaces_what_the_preview_says(
    client: KubeClient, bundle: Path, old: dict[str, Any], new: dict[str, Any], generation: int
) -> PlanDiff:
    """Apply the edit from manifest ``old`` to ``new`` on the running job; check, by pod UID and launch
    count, that exactly the PEs the preview replaces are, and return the preview. PEs are matched by
    their operators: PE ids depend on the job's history of edits, which the preview does not know."""
    name = old["metadata"]["name"]
    pods, specs, status = (
        await pe_pods(client, name),
        await pe_specs(client, name),
        await job_status(client, name),
    )
    app = read_application(str(bundle), bundle.name)
    plan, upgrade = upgrade_preview(
        Job.model_validate(old),
        app,
        Job.model_validate(new),
        app,
        job_id=status["id"],
        nodes=status["plannedNodes"],
    )
    diff = upgrade.pes
    operators = {pe.id: tuple(pe.operators) for pe in plan.pes}
    kept = {operators[i] for i in [*diff.kept, *diff.updated]}
    replaced, added = {operators[i] for i in diff.replaced}, {operators[i] for i in diff.added}
    before = {tuple(s["operators"]): i for i, s in specs.items()}
    await client.patch(JOBS, name, {"spec": new["spec"]}, "default")
    status = await applied(client, name, generation)
    after, specs_after = await pe_pods(client, name), await pe_specs(client, name)
    now = {tuple(s["operators"]): i for i, s in specs_after.items()}
    assert set(now) == kept | replaced | added
    assert sorted(after) == sorted(specs_after)
    assert status["processingElements"] == len(after)
    assert len(set(before) - set(now)) == len(diff.removed)
    for ops in kept:  # the same PE, the same pod
        assert (now[ops], after[now[ops]]) == (before[ops], pods[before[ops]])
        assert specs_after[now[ops]]["contentId"] == specs[before[ops]]["contentId"]
    for ops in replaced:  # the same PE, a new pod
        pe_id = now[ops]
        assert pe_id == before[ops]
        assert after[pe_id][0] != pods[pe_id][0]
        assert after[pe_id][1] == pods[pe_id][1] + 1
    for ops in added:
        assert ops not in before
        assert after[now[ops]][1] == 1
    return diff


@pytest.mark.sandbox(nodes=2)
async def test_plan_changing_edits_replace_exactly_the_pes_whose_content_changes(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits of submission-time values, parallelRegions, fusion and threadingModel re-plan the running job:
    PEs of operators whose content stays keep their pods, changed ones are replaced (launch + 1),
    channels come and go, and the ParallelRegions follow."""
    spec = SyntheticSpec(chains=2, length=2, regions=2, width_values=True, required_values=True)
    bundle = write_sab(tmp_path / "app.sab", spec)
    manifest = job_manifest(
        "replan", bundle, fusion={"legacy": True}, submissionTimeValues={"width0": "2", "width1": "2"}
    )
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, manifest)
        await applied(client, "replan", 1)

        # A width's submission-time value: region 0 gets a third channel; the rest is as it was.
        wider = {
            **manifest,
            "spec": {**manifest["spec"], "submissionTimeValues": {"width0": "3", "width1": "2"}},
        }
        diff = await edit_replaces_what_the_preview_says(client, bundle, manifest, wider, 2)
        assert diff.added
        assert diff.kept
        assert not diff.removed
        assert sorted(w for w, _ in await region_widths(client, "replan")) == [2, 3]

        # parallelRegions (wins over the value): region 1 narrowed to 1, its second channel removed.
        alias = sorted(r["spec"]["alias"] for r in await regions_of(client, "replan"))[
            1
        ]  # region 1's (width1)
        narrower = {**wider, "spec": {**wider["spec"], "parallelRegions": [{"alias": alias, "width": 1}]}}
        diff = await edit_replaces_what_the_preview_says(client, bundle, wider, narrower, 3)
        assert diff.removed
        assert diff.kept
        assert not diff.added
        assert sorted(await region_widths(client, "replan")) == [(1, 1), (3, 3)]

        # Fusion: the operators regrouped into two PEs (new operator sets: new PEs, the old ones go).
        fused = {
            **narrower,
            "spec": {**narrower["spec"], "fusion": {"legacy": None, "manual": 2}},
        }  # null: merge-patch removes it
        diff = await edit_replaces_what_the_preview_says(client, bundle, narrower, fused, 4)
        assert len(diff.added) == 2
        assert len(diff.removed) == 8

        # A dedicated thread for every operator (fused ones get injected threaded ports): every PE's
        # content changes, each replaced, none added or removed.
        threaded = {**fused, "spec": {**fused["spec"], "threadingModel": {"dedicated": True}}}
        diff = await edit_replaces_what_the_preview_says(client, bundle, fused, threaded, 5)
        assert len(diff.replaced) == 2
        assert (diff.added, diff.removed) == ([], [])
        assert all(why == [Why.CONTENT] for why in diff.replaced.values())


@pytest.mark.sandbox(nodes=2)
async def test_pe_ids_an_edit_gave_survive_an_operator_restart(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A channel added by an edit gets the next PE id, which a fresh plan of the same spec numbers
    otherwise: after a restart the operator plans the job from the PEs it runs, so the next edit
    replaces each PE with its own operators."""
    spec = SyntheticSpec(chains=2, length=2, regions=2, width_values=True, required_values=True)
    bundle = write_sab(tmp_path / "app.sab", spec)
    values = {"width0": "2", "width1": "2"}
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(
            JOBS, job_manifest("ids", bundle, fusion={"legacy": True}, submissionTimeValues=values)
        )
        await applied(client, "ids", 1)
        await client.patch(JOBS, "ids", {"spec": {"submissionTimeValues": {"width0": "3"}}}, "default")
        await applied(client, "ids", 2)
    operators = {i: s["operators"] for i, s in (await pe_specs(client, "ids")).items()}
    pods = await pe_pods(client, "ids")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        trace = {"spec": {"processingElement": {"runtimeTraceLevel": "TRACE"}}}
        await client.patch(JOBS, "ids", trace, "default")
        await applied(client, "ids", 3)
        assert {i: s["operators"] for i, s in (await pe_specs(client, "ids")).items()} == operators
        after = await pe_pods(client, "ids")
        assert {i: n for i, (_, n) in after.items()} == {i: n + 1 for i, (_, n) in pods.items()}
