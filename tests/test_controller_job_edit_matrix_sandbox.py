"""Every field of README.md's "Editing a running Job" table, edited on one running job in turn:
each edit replaces, by pod UID and launch count, exactly the pods the table says (every PE's for a
pod setting, none for a setting of the controllers or one the PE template overrides), PEs left
alone keep their pods, and the Job is Ready at the edit's generation. A guard test parses the
table, so a field added to the table or the spec without a case here fails."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import test_controller_job_edits_sandbox as edits
from job_inventory import pe_pods
from k8s_support import eventually_async
from operator_support import job_manifest, operator, wait_for_phase
from repo_paths import REPO
from streams_k8s.api.contract import transport_secret_name
from streams_k8s.api.job import Job, JobSpec
from streams_k8s.api.processing_element import ProcessingElementTemplate
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.children.transport_secret import secret_transport
from streams_k8s.controller.jobs.upgrade_diff import preview as upgrade_preview
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.controller.planning import read_application
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import SECRETS
from streams_k8s.sandbox import Sandbox

PES_WANTED = 3
ALL = frozenset(range(PES_WANTED))
NONE: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class Case:
    field: str  # as the README table names it
    spec: dict[str, Any]  # the merge patch of the Job's spec
    replaced: frozenset[int]  # the PEs whose pods the edit replaces
    pe_spec: dict[str, Any] | None = None  # what every PE object's spec then holds (default: the patch's)


def _pe(field: str, value: Any, replaced: frozenset[int] = ALL, **pe_spec: Any) -> Case:
    return Case(
        f"processingElement.{field}", {"processingElement": {field: value}}, replaced, pe_spec or None
    )


def _job(field: str, value: Any, replaced: frozenset[int], **pe_spec: Any) -> Case:
    return Case(field, {field: value}, replaced, pe_spec)


# In order, on one job (each case starts from what the ones before left).
CASES = (
    # pod settings: every PE's pod replaced
    _pe("runtimeTraceLevel", "TRACE"),
    _pe("appTraceLevel", "DEBUG"),
    _pe("initialProbeDelayInSeconds", 5),
    _pe("probeFailureThreshold", 3),
    _pe("probeIntervalInSeconds", 4),
    _pe("allowPtrace", True),
    _pe("runWithValgrind", True),
    _pe("buildType", "debug"),
    _pe("image", "registry.example/streams/pe:7.2"),
    _job("imagePullPolicy", "Always", ALL, imagePullPolicy="Always"),
    _job("imagePullSecret", "job-pull", ALL, imagePullSecret="job-pull"),
    _pe("imagePullPolicy", "Never"),
    _pe("imagePullSecret", "pe-pull"),
    # the PE template overrides them now: nothing changes in any pod
    _job("imagePullPolicy", "IfNotPresent", NONE, imagePullPolicy="Never"),
    _job("imagePullSecret", "job-pull-2", NONE, imagePullSecret="pe-pull"),
    _pe("dataPath", "/var/streams/data"),
    _pe("dataVolumeClaim", {"name": "streams-data"}),
    _pe("checkpointRepository", {"fileSystem": {"path": "/var/streams/checkpoints"}}),
    _pe("appPropertiesSecret", "app-properties"),
    _pe("restrictedPropertiesSecret", "restricted-properties"),
    _pe("transportSecurityType", "TLSv1.2"),
    _job("transportCertificateValidityInDays", 7, NONE),  # the certificate is kept (checked below)
    _pe("resources", {"requests": {"cpu": "20m", "memory": "64Mi"}}),
    _job("resources", {"requests": {"cpu": "90m"}}, ALL, resources={"requests": {"cpu": "30m"}}),
    _pe("resources", {"requests": {"cpu": "40m"}}, NONE, resources={"requests": {"cpu": "30m"}}),
    _job("resources", None, ALL, resources={"requests": {"cpu": "40m", "memory": "64Mi"}}),  # the template
    _pe("image", None, ALL, image=None),  # unset: the operator's default image
    # settings of the controllers: the PE objects follow, no pod restarts
    _pe("restartFailedPod", False, NONE),
    _pe("restartCompletedPod", True, NONE),
    _pe("restartDeletedPod", True, NONE),
    _pe("deleteFailedPod", False, NONE),
    _job("upgradeMode", "checkpoint-first", NONE),
    _job("checkpointTimeoutSeconds", 30, NONE),
    _job("maxUnavailable", 1, NONE),
    _job("submissionTimeOutInSeconds", 120, NONE),
    _job("rollback", False, NONE),
    _job("stableAfterSeconds", 5, NONE),
    # every PE restarted on demand
    _job("restartNonce", "first", ALL, jobRestartNonce="first"),
)

# Fields whose edits other tests check by pod UID and launch count (test function by field).
PLAN_CHANGING = {
    "bundle": "test_a_bundle_upgrade_keeps_pe_ids_replaces_only_changed_content_and_exports_follow",
    "fusion": "test_plan_changing_edits_replace_exactly_the_pes_whose_content_changes",
    "threadingModel": "test_plan_changing_edits_replace_exactly_the_pes_whose_content_changes",
    "submissionTimeValues": "test_plan_changing_edits_replace_exactly_the_pes_whose_content_changes",
    "parallelRegions": "test_plan_changing_edits_replace_exactly_the_pes_whose_content_changes",
}
# Checked by the edit test below, apart from the table of cases.
OWN_STEPS = ("state", "spec.restartNonce")


def readme_fields() -> list[str]:
    """The fields the first column of the README's table of edits names, in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Editing a running Job", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| field")]
    found: list[str] = []
    for row in rows:
        cell = row.split(" | ", 1)[0]
        for token in re.findall(r"`([^`]+)`", cell):
            name = token.split(":", 1)[0].strip()
            if re.fullmatch(r"[a-z][A-Za-z]*(\.[a-z][A-Za-z]*)*", name):
                found.append(name)
    return found


def test_every_field_of_the_readme_table_has_an_edit_case_and_every_spec_field_a_row() -> None:
    documented = readme_fields()
    assert len(documented) == len(set(documented)), "a field is named twice in the README table"
    tested = {c.field for c in CASES} | set(PLAN_CHANGING) | set(OWN_STEPS)
    assert set(documented) - tested == set(), "README fields without an edit case"
    assert tested - set(documented) == set(), "edit cases of fields the README table does not name"
    for test in set(PLAN_CHANGING.values()):
        assert callable(getattr(edits, test, None)), test
    template = {f"processingElement.{f.alias}" for f in ProcessingElementTemplate.model_fields.values()}
    spec = {f.alias for f in JobSpec.model_fields.values() if f.alias != "processingElement"}
    assert (template | spec) - set(documented) == set(), "Job spec fields the README table lacks"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def transport_certificate(client: KubeClient, job: str) -> str | None:
    transport = secret_transport(await client.get(SECRETS, transport_secret_name(job), "default"))
    return transport[0] if transport is not None else None


@pytest.mark.sandbox(nodes=2)
async def test_each_field_edited_on_a_running_job_replaces_exactly_the_pods_the_table_says(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=PES_WANTED, length=2))
    for secret in ("app-properties", "restricted-properties"):
        body = {"metadata": {"name": secret, "namespace": "default"}, "stringData": {"k": "v"}}
        await client.create(SECRETS, body)
    manifest = job_manifest("matrix", bundle, fusion={"manual": PES_WANTED}, maxUnavailable=PES_WANTED)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, manifest)
        await edits.applied(client, "matrix", 1)
        pods = await pe_pods(client, "matrix")
        assert set(pods) == ALL
        generation, certificate = 1, None
        for case in CASES:
            assert await pe_pods(client, "matrix") == pods, f"pods changed after the edit before {case}"
            old = await client.get(JOBS, "matrix", "default")
            await client.patch(JOBS, "matrix", {"spec": case.spec}, "default")
            generation += 1
            status = await edits.applied(client, "matrix", generation)
            assert previewed(old, status, bundle) == case.replaced, f"{case.field}: the preview differs"
            assert status["phase"] == "Running", case
            after = await pe_pods(client, "matrix")
            assert set(after) == ALL, case
            for pe_id in ALL:
                uid, launch = pods[pe_id]
                if pe_id in case.replaced:
                    assert after[pe_id][0] != uid, f"{case.field}: PE {pe_id}'s pod was kept"
                    assert after[pe_id][1] == launch + 1, f"{case.field}: PE {pe_id} launched again"
                else:
                    assert after[pe_id] == (uid, launch), f"{case.field}: PE {pe_id}'s pod was replaced"
            wanted = case.pe_spec if case.pe_spec is not None else case.spec.get("processingElement", {})
            for pe_id in ALL:
                pe = (await client.get(PES, f"matrix-{pe_id}", "default"))["spec"]
                assert {k: pe.get(k) for k in wanted} == wanted, case.field
            if case.field == "processingElement.transportSecurityType":
                certificate = await transport_certificate(client, "matrix")
                assert certificate
            if case.field == "transportCertificateValidityInDays":
                assert await transport_certificate(client, "matrix") == certificate
            pods = after

        # A PE object's own restart nonce: that PE's pod alone, the Job's generation as it was.
        await client.patch(PES, "matrix-1", {"spec": {"restartNonce": "just-one"}}, "default")

        async def relaunched() -> bool:
            return (await pe_pods(client, "matrix")).get(1, ("", 0))[1] == pods[1][1] + 1

        await eventually_async(relaunched, within=20)
        await edits.applied(client, "matrix", generation)
        after = await pe_pods(client, "matrix")
        assert {i: after[i] for i in (0, 2)} == {i: pods[i] for i in (0, 2)}
        pods = after

        # The bundle under another name (the same application): the same PEs, every pod replaced
        # (they run the bundle by its name); then pullPolicy Always fetching the same content: none.
        renamed = tmp_path / "renamed.sab"
        renamed.write_bytes(bundle.read_bytes())
        for bundle_spec, replaced in (
            ({"name": renamed.name, "file": {"path": str(renamed)}}, ALL),
            ({"pullPolicy": "Always"}, NONE),
        ):
            await client.patch(JOBS, "matrix", {"spec": {"bundle": bundle_spec}}, "default")
            generation += 1
            await edits.applied(client, "matrix", generation)
            after = await pe_pods(client, "matrix")
            assert {i for i in ALL if after[i] != pods[i]} == replaced, bundle_spec
            assert {i: n for i, (_, n) in after.items()} == {
                i: n + (i in replaced) for i, (_, n) in pods.items()
            }
            pods = after
        assert (await client.get(PES, "matrix-0", "default"))["spec"]["sabName"] == renamed.name

        # state: suspended, no pod; resumed, every PE launched again.
        old = await client.get(JOBS, "matrix", "default")
        await client.patch(JOBS, "matrix", {"spec": {"state": "Suspended"}}, "default")
        suspended = await wait_for_phase(client, "matrix", "Suspended")
        assert suspended["appliedGeneration"] == generation + 1
        assert previewed(old, suspended, bundle) == ALL  # the pods go
        await eventually_async(lambda: edits._no_pods(client, "matrix"), within=20)
        old = await client.get(JOBS, "matrix", "default")
        await client.patch(JOBS, "matrix", {"spec": {"state": "Running"}}, "default")
        status = await edits.applied(client, "matrix", generation + 2)
        assert previewed(old, status, bundle) == ALL
        resumed = await pe_pods(client, "matrix")
        assert {i: n for i, (_, n) in resumed.items()} == {i: n + 1 for i, (_, n) in pods.items()}


def previewed(old: dict[str, Any], status: dict[str, Any], bundle: Path) -> frozenset[int]:
    """The PEs `plan --against` says the edit from Job ``old`` to the spec ``status`` applied replaces."""
    app = read_application(str(bundle), bundle.name)
    _, diff = upgrade_preview(
        Job.from_wire({**old, "spec": old["status"]["appliedSpec"]}),
        app,
        Job.from_wire({**old, "spec": status["appliedSpec"]}),
        app,
        job_id=status["id"],
        nodes=status["plannedNodes"],
    )
    return frozenset(diff.pes.replaced)
