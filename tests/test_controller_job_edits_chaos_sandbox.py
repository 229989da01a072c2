"""Chaos during an edit: the operator process is SIGKILLed at random points while an edit of a
running job is applied, then restarted; the job converges to the edited spec with every PE on the
new content and settings, one pod per PE, each replaced once per edit (launch count + edits), and
no orphan. And the same through the whole lifecycle: bundle upgrades that change, add and remove
PEs and Exports, suspends, resumes and upgrades that never run (rolled back)."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from k8s_support import eventually_async
from operator_process import OperatorProcess, require_operator
from operator_support import job_manifest, job_status
from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, JOB_LABEL, LAUNCH_COUNT_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import Exported, SyntheticSpec, write_sab
from streams_k8s.controller.children.desired import desired_objects
from streams_k8s.controller.kinds import EXPORTS, JOBS, PES
from streams_k8s.controller.planning import plan_job, read_application, validate_job
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SERVICES
from streams_k8s.sandbox import Sandbox

KILLS = int(os.environ.get("STREAMS_K8S_CHAOS_KILLS", "12"))
PES_WANTED = 48


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def launches(client: KubeClient) -> dict[int, list[int]]:
    """Launch counts of the live PE pods, by PE id."""
    pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}=chaos,{SVC_LABEL}=pe")
    found: dict[int, list[int]] = {}
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp"):
            labels = pod["metadata"]["labels"]
            found.setdefault(int(labels[PE_LABEL]), []).append(int(labels[LAUNCH_COUNT_LABEL]))
    return found


async def version(client: KubeClient) -> str:
    return str((await client.get(JOBS, "chaos", "default"))["metadata"]["resourceVersion"])


async def progressed(client: KubeClient, seen: str, generation: int) -> bool:
    """The Job changed since ``seen``, or ``generation`` runs (nothing more to write)."""
    return await version(client) != seen or await settled(client, generation)


async def settled(client: KubeClient, generation: int) -> bool:
    status = await job_status(client, "chaos")
    ready = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), {})
    return status.get("appliedGeneration") == generation and ready.get("status") == "True"


@pytest.mark.sandbox(nodes=3)
async def test_killed_anywhere_during_an_edit_the_job_converges_to_it_without_duplicates(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    require_operator()
    bundle = write_sab(tmp_path / "chaos.sab", SyntheticSpec(chains=24, length=2))
    manifest = job_manifest("chaos", bundle, fusion={"manual": PES_WANTED}, maxUnavailable=1)
    rng = random.Random(20261124)
    with OperatorProcess(sandbox.kubeconfig_path, tmp_path / "operator.log") as operator:
        await client.create(JOBS, manifest)
        await eventually_async(lambda: settled(client, 1), within=120)
        before = await launches(client)
        assert sorted(before) == list(range(PES_WANTED))
        # Edits one after the other (each restarts every pod once), so that every kill lands in one.
        edits, mid_edit = 0, 0
        for _ in range(KILLS):
            status = await job_status(client, "chaos")
            if status.get("appliedGeneration") == 1 + edits:
                edits += 1
                edit = {
                    "spec": {"restartNonce": str(edits), "processingElement": {"runtimeTraceLevel": "DEBUG"}}
                }
                await client.patch(JOBS, "chaos", edit, "default")
            seen = await version(client)
            # once this incarnation has written something (startup takes a second or more, longer
            # under load), anywhere in what follows
            await eventually_async(lambda: progressed(client, seen, 1 + edits), within=20)  # noqa: B023
            await asyncio.sleep(rng.uniform(0.0, 0.4))
            operator.kill()
            mid_edit += "upgrade" in await job_status(client, "chaos")
            operator.start()
        assert mid_edit >= KILLS // 2, f"only {mid_edit} kills came while an edit was applied"
        await eventually_async(lambda: settled(client, 1 + edits), within=180)

    after = await launches(client)
    assert {i: len(found) for i, found in after.items()} == dict.fromkeys(range(PES_WANTED), 1)
    assert {i: found[0] for i, found in after.items()} == {i: found[0] + edits for i, found in before.items()}
    pes, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}=chaos")
    assert {p["spec"]["runtimeTraceLevel"] for p in pes} == {"DEBUG"}
    assert len(pes) == PES_WANTED
    maps, _ = await client.list_all(CONFIGMAPS, "default", label_selector=f"{JOB_LABEL}=chaos")
    content = {p["metadata"]["name"]: p["spec"]["contentId"] for p in pes}
    for cm in maps:
        if cm["metadata"]["name"] != "chaos":
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == content[cm["metadata"]["name"]]
    status = await job_status(client, "chaos")
    assert "upgrade" not in status
    assert status["phase"] == "Running"


# v0 to v3: 3 to 6 chains (legacy fusion: a PE per operator), some operators rebuilt, Exports
# renamed, added and dropped
BUNDLES = (
    SyntheticSpec(chains=4, length=2, fan_in=False, exports=(Exported("a"),)),
    SyntheticSpec(
        chains=5, length=2, fan_in=False, rebuilt=frozenset({1, 5}), exports=(Exported(), Exported("b"))
    ),
    SyntheticSpec(chains=3, length=2, fan_in=False, rebuilt=frozenset({2, 4})),
    SyntheticSpec(chains=6, length=2, fan_in=False, exports=(Exported("a"), Exported(), Exported("c"))),
)
NEVER_RUNS = {"requests": {"cpu": "500"}}  # fits no node: the upgrade times out and is rolled back
# Long enough for a rollback to finish through the kills, so it does not end in Failed.
EDIT_TIMEOUT = 15


def _settled_on(status: dict[str, Any], generation: int) -> bool:
    """No edit under way, and ``generation`` applied, or rolled back."""
    if "upgrade" in status:
        return False
    applied = next((c for c in status.get("conditions") or () if c["type"] == "SpecApplied"), {})
    if applied.get("observedGeneration") == generation and applied.get("reason") == "RolledBack":
        return True
    return bool(status.get("appliedGeneration") == generation)


def _lifecycle_edit(
    rng: random.Random, sabs: list[Path], status: dict[str, Any], bad_left: int
) -> tuple[str, dict[str, Any]]:
    """The next edit: a bundle upgrade (perhaps one that never runs), a suspend or a resume."""
    if (status.get("appliedSpec") or {}).get("state") == "Suspended":
        return "resume", {"state": "Running"}
    kind = rng.choice(["upgrade", "upgrade", "suspend", *(["never runs"] if bad_left else [])])
    if kind == "suspend":
        return kind, {"state": "Suspended"}
    sab = rng.choice(sabs)
    resources = NEVER_RUNS if kind == "never runs" else None
    return kind, {"bundle": {"file": {"path": str(sab)}}, "processingElement": {"resources": resources}}


async def _lifecycle_problems(client: KubeClient, status: dict[str, Any]) -> list[str]:
    """What in the job's objects is not what its applied spec plans: one pod per PE (none while
    suspended) on the PE's content, which its ConfigMap holds; no pod, ConfigMap or Service
    without its PE; the PEs' operators and the Exports those of the applied spec's plan."""
    selector = f"{JOB_LABEL}=chaos"
    pes = {
        p["metadata"]["name"]: p for p in (await client.list_all(PES, "default", label_selector=selector))[0]
    }
    pods, _ = await client.list_all(PODS, "default", label_selector=f"{selector},{SVC_LABEL}=pe")
    maps, _ = await client.list_all(CONFIGMAPS, "default", label_selector=selector)
    services, _ = await client.list_all(SERVICES, "default", label_selector=selector)
    exports, _ = await client.list_all(EXPORTS, "default", label_selector=selector)
    problems = []
    running: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp"):
            running.setdefault(f"chaos-{pod['metadata']['labels'][PE_LABEL]}", []).append(pod)
    suspended = status["appliedSpec"].get("state") == "Suspended"
    for name, pe in pes.items():
        content = pe["spec"]["contentId"]
        if len(running.get(name, [])) != (0 if suspended else 1):
            problems.append(f"{name}: {len(running.get(name, []))} pods")
        if any(p["metadata"]["annotations"][CONTENT_ID_ANNOTATION] != content for p in running.get(name, [])):
            problems.append(f"{name}: a pod on other content than its PE's")
    owned = {  # by the PE they belong to (the job's own ConfigMap, its name table, aside)
        "pods": set(running),
        "ConfigMaps": {o["metadata"]["name"] for o in maps} - {"chaos"},
        "Services": {o["metadata"]["name"] for o in services},
    }
    for kind, names in owned.items():
        if names != set(pes):
            problems.append(f"{kind} without their PE, or PEs without theirs: {sorted(names ^ set(pes))}")
    for cm in maps:
        pe = pes.get(cm["metadata"]["name"])
        if pe is not None and cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] != pe["spec"]["contentId"]:
            problems.append(f"{cm['metadata']['name']}: its ConfigMap holds other content than its PE")
    job = await client.get(JOBS, "chaos", "default")
    applied = validate_job({**job, "spec": status["appliedSpec"]})
    bundle = applied.spec.bundle
    assert bundle.file is not None
    plan = plan_job(
        applied, read_application(bundle.file.path, bundle.name), job_id=int(status["id"]), nodes=None
    )
    planned = desired_objects(applied, job["metadata"]["uid"], plan, generation=1, stamp="-")
    operators = sorted(str(sorted(c.body["spec"]["operators"])) for c in planned if c.resource == PES)
    if sorted(str(sorted(pe["spec"]["operators"])) for pe in pes.values()) != operators:
        problems.append("the PEs' operators are not those of the applied spec's plan")
    streams = sorted(str(c.body["spec"]["stream"].get("name")) for c in planned if c.resource == EXPORTS)
    if sorted(str(e["spec"]["stream"].get("name")) for e in exports) != streams:
        problems.append(
            f"Exports {sorted(str(e['spec']['stream'].get('name')) for e in exports)}, planned {streams}"
        )
    return problems


@pytest.mark.sandbox(nodes=3, start_delay=0.5)
async def test_killed_anywhere_in_upgrades_suspends_resumes_and_rollbacks_the_job_converges(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    """The operator SIGKILLed once it has written something, at a random moment after, through
    a series of edits made one after the other: bundle upgrades, suspends, resumes and an upgrade
    whose pods fit no node (rolled back). Pods take 0.5 s to start, so that the kills land in the
    edits. Once the last edit has settled, the job is what its applied spec plans, with no PE on
    mixed content, no duplicate and no orphan."""
    require_operator()
    sabs = []
    for i, spec in enumerate(BUNDLES):
        (tmp_path / f"v{i}").mkdir()
        sabs.append(write_sab(tmp_path / f"v{i}" / "chaos.sab", spec))
    manifest = job_manifest(
        "chaos",
        sabs[0],
        fusion={"legacy": True},
        maxUnavailable=3,
        stableAfterSeconds=0,
        submissionTimeOutInSeconds=EDIT_TIMEOUT,
    )
    rng = random.Random(20261125)
    kinds: list[str] = []
    with OperatorProcess(sandbox.kubeconfig_path, tmp_path / "operator.log") as operator:
        await client.create(JOBS, manifest)
        await eventually_async(lambda: settled(client, 1), within=120)
        generation, mid_edit = 1, 0
        for _ in range(KILLS):
            status = await job_status(client, "chaos")
            if _settled_on(status, generation):
                kind, edit = _lifecycle_edit(rng, sabs, status, bad_left=1 - kinds.count("never runs"))
                edited = await client.patch(JOBS, "chaos", {"spec": edit}, "default")
                if edited["metadata"]["generation"] != generation:
                    generation = edited["metadata"]["generation"]
                    kinds.append(kind)
            seen = await version(client)

            async def progressed() -> bool:
                status = await job_status(client, "chaos")
                return await version(client) != seen or _settled_on(status, generation)  # noqa: B023

            await eventually_async(progressed, within=30)
            await asyncio.sleep(rng.uniform(0.0, 0.4))
            operator.kill()
            mid_edit += "upgrade" in await job_status(client, "chaos")
            operator.start()
        assert mid_edit >= KILLS // 2, f"only {mid_edit} kills came while an edit was applied ({kinds})"

        async def last_settled() -> bool:
            status = await job_status(client, "chaos")
            pods = next((c for c in status.get("conditions") or () if c["type"] == "PodsReady"), {})
            return _settled_on(status, generation) and (
                status.get("phase") == "Suspended" or pods.get("status") == "True"
            )

        await eventually_async(last_settled, within=180)
        status = await job_status(client, "chaos")
        assert status["phase"] in {"Running", "Suspended", "RolledBack"}, status
        problems: list[str] = []

        async def consistent() -> bool:  # the last pods of a suspend may still be terminating
            problems[:] = await _lifecycle_problems(client, status)
            return not problems

        try:
            await eventually_async(consistent, within=10)
        except TimeoutError:
            raise AssertionError(f"after {kinds}: {problems}") from None
