"""`streams-k8s streams <verb>` (the `kubectl streams` plugin's group) as its own process, as a user
with a token runs it next to kubectl, against the sandbox and the operator: a local bundle uploaded
and run in one command, each verb on the job, who may upload, and an upload outliving the operator."""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from k8s_support import eventually_async
from operator_support import SUBMITTED, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.bundles.uploads import UPLOADER_ANNOTATION, chunk_name
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS
from streams_k8s.sandbox import Sandbox
from tokens import ROLE_BINDINGS, ROLES, kubeconfig_with_token, token_for

CLI = Path(sys.executable).with_name("streams-k8s")
# What a user who runs jobs may do in the namespace (as the `edit` ClusterRole grants).
USER_RULES = [
    {
        "apiGroups": ["streams.ibm.com"],
        "resources": ["streamsjobs", "streamspes", "streamsprs", "streamsprs/scale", "streamscrs"],
        "verbs": ["*"],
    },
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
]
READER_RULES = [{"apiGroups": ["streams.ibm.com"], "resources": ["*"], "verbs": ["get", "list"]}]


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def user(sandbox: Sandbox, client: KubeClient, name: str, rules: list[Any], directory: Path) -> Path:
    """A kubeconfig of the ServiceAccount ``name``, allowed ``rules`` in namespace default."""
    await client.create(ROLES, {"metadata": {"name": name}, "rules": rules}, "default")
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
    }
    await client.create(ROLE_BINDINGS, binding, "default")
    return kubeconfig_with_token(sandbox.kubeconfig_path, await token_for(client, name), directory)


async def streams(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    """`streams-k8s streams ARGS --kubeconfig KUBECONFIG`: exit status, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        str(CLI),
        "streams",
        *args,
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    return int(process.returncode or 0), out.decode(), err.decode()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.sandbox(nodes=2)
async def test_a_local_bundle_runs_in_one_command_and_each_verb_acts_on_its_job(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = SyntheticSpec(chains=1, length=2, regions=1, width_values=True)
    sab = write_sab(tmp_path / "Word_Count.sab", app)
    alice = await user(sandbox, client, "alice", USER_RULES, tmp_path)
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        code, out, err = await streams(
            alice, "submitjob", str(sab), "-P", "width0=2", "--operator-url", running.api
        )
        assert code == 0, err
        assert out == "streamsjob.streams.ibm.com/word-count created\n"
        assert f"bundle Word_Count.sab uploaded (sha256:{sha256(sab)[:12]}" in err
        job = await client.get(JOBS, "word-count", "default")
        assert job["spec"]["bundle"] == {
            "name": "Word_Count.sab",
            "pullPolicy": "IfNotPresent",
            "upload": {"sha256": sha256(sab)},
        }
        assert job["spec"]["submissionTimeValues"] == {"width0": "2"}
        status = await wait_for_phase(client, "word-count", "Running", within=60)
        assert status["bundleDigest"] == sha256(sab)  # the uploaded content is what runs
        kept = await client.get(CONFIGMAPS, chunk_name(sha256(sab), 0), "default")
        assert kept["metadata"]["annotations"][UPLOADER_ANNOTATION] == "system:serviceaccount:default:alice"

        code, out, err = await streams(alice, "lsjobs")
        assert code == 0, err
        header, line = out.splitlines()
        assert header.split() == ["NAME", "ID", "PHASE", "HEALTH", "PES", "AGE"]
        assert line.split()[:3] == ["word-count", "0", "Running"]
        await eventually_async(lambda: _pes_running(client), within=30)
        code, out, _ = await streams(alice, "lsjobs", "-o", "json")
        (row,) = orjson.loads(out)["jobs"]
        assert (row["name"], row["pes"], row["bundle"]) == (
            "word-count",
            status["processingElements"],
            sab.name,
        )
        # every pod runs; the simulated runtime reports no connections up: partially healthy
        assert row["health"] == "partiallyHealthy"
        code, out, _ = await streams(alice, "lsjobs", "-o", "wide")
        assert out.splitlines()[0].split()[6:] == ["APPLICATION", "GENERATION", "BUNDLE", "MESSAGE"]
        assert out.splitlines()[1].split()[6] == status["applicationName"]
        code, out, _ = await streams(alice, "lspes", "-j", "word-count", "-o", "wide")
        assert len(out.splitlines()) == 1 + status["processingElements"]
        assert out.splitlines()[0].split()[-1] == "OPERATORS"

        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        alias = region["spec"]["alias"]
        code, out, err = await streams(alice, "updateoperators", "0", "--parallelRegionWidth", f"{alias}=3")
        assert code == 0, err
        assert (await client.get(PARALLEL_REGIONS, region["metadata"]["name"], "default"))["spec"][
            "width"
        ] == 3
        code, _, err = await streams(
            alice, "updateoperators", "word-count", "--parallelRegionWidth", "nope=2"
        )
        assert (code, err) == (
            1,
            f"error: job word-count has no parallel region 'nope' (its regions: {alias})\n",
        )

        code, out, err = await streams(alice, "capturestate", "word-count")
        assert code == 0, err
        state = orjson.loads(out)
        assert state["job"]["metadata"]["name"] == "word-count"
        assert {"processingElements", "parallelRegions", "pods", "metrics", "health"} <= state.keys()
        assert state["metrics"]["parallelRegions"][alias]["width"] == 3

        await eventually_async(lambda: _running_pods(client), within=30)
        code, out, err = await streams(
            alice, "canceljob", "word-count", "--collectlogs", str(tmp_path / "logs")
        )
        assert code == 0, err
        assert out == "streamsjob.streams.ibm.com/word-count deleted\n"
        logs = sorted((tmp_path / "logs" / "word-count").iterdir())
        assert logs
        assert all(path.suffix == ".log" for path in logs)
        with pytest.raises(ApiError) as gone:
            await client.get(JOBS, "word-count", "default")
        assert gone.value.not_found


async def _pes_running(client: KubeClient) -> bool:
    pes, _ = await client.list_all(PES, "default")
    return all((p.get("status") or {}).get("phase") == "Running" for p in pes)


async def _running_pods(client: KubeClient) -> bool:
    pods, _ = await client.list_all(PODS, "default")
    return bool(pods)


@pytest.mark.sandbox(nodes=1)
async def test_a_user_who_may_not_create_jobs_cannot_upload_a_bundle(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=1))
    bob = await user(sandbox, client, "bob", READER_RULES, tmp_path)
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        code, out, err = await streams(bob, "submitjob", str(sab), "--operator-url", running.api)
        assert (code, out) == (1, "")
        assert err.startswith("error: the operator refused the upload (403): ")
        assert "may not create streamsjobs.streams.ibm.com in namespace default" in err
        assert len(err.splitlines()) == 1
        with pytest.raises(ApiError):
            await client.get(CONFIGMAPS, chunk_name(sha256(sab), 0), "default")
        assert (await client.list_all(JOBS, "default"))[0] == []

        url = f"{running.api}/api/bundles/default/app.sab?sha256={sha256(sab)}"
        async with aiohttp.ClientSession() as anonymous:
            async with anonymous.put(url, data=sab.read_bytes()) as answer:
                assert answer.status == 401
            bad = f"{running.api}/api/bundles/default/app.sab?sha256={'0' * 64}"
            alice = await token_for(client, "alice")
            await user(sandbox, client, "alice", USER_RULES, tmp_path)
            headers = {"Authorization": f"Bearer {alice}"}
            async with anonymous.put(bad, data=sab.read_bytes(), headers=headers) as answer:
                body = await answer.json()
                assert (answer.status, body["reason"]) == (400, "DigestMismatch")


@pytest.mark.sandbox(nodes=1)
async def test_an_uploaded_bundle_outlives_the_operator_and_its_cache(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    alice = await user(sandbox, client, "alice", USER_RULES, tmp_path)
    async with operator(sandbox, monkeypatch, tmp_path / "first") as running:
        code, _, err = await streams(
            alice, "submitjob", str(sab), "--jobname", "one", "--operator-url", running.api
        )
        assert code == 0, err
        await wait_for_phase(client, "one", *SUBMITTED)
    # A new replica, its bundle cache empty: a Job naming the upload gets its content from the API server.
    async with operator(sandbox, monkeypatch, tmp_path / "second"):
        manifest = job_manifest("two", sab)
        manifest["spec"]["bundle"] = {"name": sab.name, "upload": {"sha256": sha256(sab)}}
        await client.create(JOBS, manifest)
        status = await wait_for_phase(client, "two", *SUBMITTED)
        assert status["bundleDigest"] == sha256(sab)
        never = job_manifest("three", sab)
        never["spec"]["bundle"] = {"name": sab.name, "upload": {"sha256": "1" * 64}}
        await client.create(JOBS, never)
        await eventually_async(lambda: _failed_with(client, "three", "BundleNotUploaded"), within=20)


async def _failed_with(client: KubeClient, name: str, reason: str) -> bool:
    status = (await client.get(JOBS, name, "default")).get("status") or {}
    return any(c.get("reason") == reason for c in status.get("conditions") or ())


@pytest.mark.sandbox(nodes=1, simulate=False)
async def test_errors_are_one_line_and_a_non_zero_exit(sandbox: Sandbox, tmp_path: Path) -> None:
    kubeconfig = sandbox.kubeconfig_path
    for args, message in [
        (("canceljob", "nope"), "error: deleting Job default/nope: does not exist\n"),
        (("capturestate", "nope"), "error: Job default/nope does not exist\n"),
        (("lspes", "-j", "7"), "error: Job default/7 does not exist\n"),
        (("canceljob", "7"), "error: no job of namespace default has id 7\n"),
        (("updateoperators", "x", "--parallelRegionWidth", "r=0"), "error: --parallelRegionWidth r=0: "),
        (("submitjob", str(tmp_path / "missing.sab")), "error: cannot read "),
    ]:
        code, out, err = await streams(kubeconfig, *args)
        assert (code, out) == (1, ""), args
        assert err.startswith(message), (args, err)
        assert err.count("\n") == 1, (args, err)
    code, out, err = await streams(kubeconfig, "lsjobs")
    assert (code, out, err) == (0, "", "No jobs found in default namespace.\n")


def test_preview_prints_the_job_a_bundle_and_an_overlay_make(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    overlay = tmp_path / "overlay.json"
    overlay.write_text(
        '{"jobConfigOverlays": [{"jobConfig": {"jobName": "nightly", "submissionParameters": '
        '[{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}, '
        '"deploymentConfig": {"fusionScheme": "manual", "fusionTargetPeCount": 2}}]}'
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: x, "
        "user: u, namespace: team}}]\nclusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    code, out, err = asyncio.run(
        streams(kubeconfig, "submitjob", str(sab), "-g", str(overlay), "-P", "b=3", "--preview")
    )
    assert code == 0, err
    job = yaml.safe_load(out)
    assert job["metadata"] == {
        "name": "nightly",
        "namespace": "team",
    }  # the overlay's name, the context's namespace
    assert job["spec"]["bundle"] == {"name": "app.sab", "upload": {"sha256": sha256(sab)}}
    assert job["spec"]["submissionTimeValues"] == {"a": "1", "b": "3"}  # -P over the overlay
    assert job["spec"]["fusion"] == {"manual": 2}
    overlay.write_text('{"jobConfigOverlays": [{"deploymentConfig": {"placementScheme": "x"}}]}')
    code, out, err = asyncio.run(streams(kubeconfig, "submitjob", str(sab), "-g", str(overlay), "--preview"))
    assert (code, out) == (1, "")
    assert err.startswith("error: deploymentConfig.placementScheme: kube-scheduler places the PE pods")
