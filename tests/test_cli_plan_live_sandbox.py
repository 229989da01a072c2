"""`streams-k8s plan NEW --against stj/NAME`: the preview of an edit against the Job as it runs,
through a kubeconfig (the CLI as its own process, as a user runs it next to kubectl), on a
resized job: what it says is what the operator then does, by pod UID and launch count."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from k8s_support import eventually_async
from operator_process import free_port
from operator_support import job_manifest, operator
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.kubeconfig import write_kubeconfig
from test_controller_job_edits_sandbox import applied, client, pe_pods, pe_specs, region_widths

__all__ = ["client"]  # the fixture, shared with the edit tests

CLI = Path(sys.executable).with_name("streams-k8s")


async def plan(*args: str) -> tuple[int, str, str]:
    """`streams-k8s plan ARGS`: exit status, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        str(CLI), "plan", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return int(process.returncode or 0), out.decode(), err.decode()


async def live_preview(sandbox: Sandbox, new: Path, name: str = "live") -> dict[str, Any]:
    kubeconfig = str(sandbox.kubeconfig_path)
    code, out, err = await plan(
        str(new), "--against", f"stj/{name}", "--kubeconfig", kubeconfig, "-o", "json"
    )
    assert code == 0, err
    found: dict[str, Any] = orjson.loads(out)
    return found


def write(path: Path, manifest: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(manifest))
    return path


async def apply_and_compare(
    client: KubeClient, preview: dict[str, Any], spec: dict[str, Any], generation: int
) -> None:
    """Apply the edit; exactly the PEs the preview replaces get a new pod (launch count + 1), the
    kept and updated ones keep theirs, and the added and removed ones are those."""
    before = await pe_pods(client, "live")
    await client.patch(JOBS, "live", {"spec": spec}, "default")
    await applied(client, "live", generation)
    after = await pe_pods(client, "live")
    replaced = {r["id"] for r in preview["replaced"]}
    assert {i for i in set(before) & set(after) if after[i] != before[i]} == replaced
    assert all(after[i][1] == before[i][1] + 1 for i in replaced)
    assert {i for i in after if after[i] == before.get(i)} == {*preview["kept"], *preview["updated"]}
    assert (sorted(set(after) - set(before)), sorted(set(before) - set(after))) == (
        preview["added"],
        preview["removed"],
    )


@pytest.mark.sandbox(nodes=2, token="t")
async def test_the_live_preview_of_a_resized_job_is_what_the_operator_then_does(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, regions=1, width=2))
    manifest = job_manifest("live", bundle, fusion={"legacy": True})
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, manifest)
        await applied(client, "live", 1)

        # A pod setting: every PE replaced for its pod template, none added or removed.
        traced = {**manifest["spec"], "processingElement": {"runtimeTraceLevel": "TRACE"}}
        new = write(tmp_path / "new.yaml", {**manifest, "spec": traced})
        found = await live_preview(sandbox, new)
        assert sorted(r["id"] for r in found["replaced"]) == sorted(await pe_specs(client, "live"))
        assert {tuple(r["reasons"]) for r in found["replaced"]} == {("pod template",)}
        await apply_and_compare(client, found, traced, 2)

        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        scale = {"spec": {"replicas": 3}}  # `kubectl scale stpr/NAME --replicas=3`
        name = region["metadata"]["name"]
        await client.patch(PARALLEL_REGIONS, name, scale, "default", subresource="scale")

        async def resized() -> bool:
            pods, specs = await pe_pods(client, "live"), await pe_specs(client, "live")
            return await region_widths(client, "live") == [(3, 3)] and sorted(pods) == sorted(specs)

        await eventually_async(resized, within=30)
        await applied(client, "live", 2)
        running = await pe_specs(client, "live")

        # A bundle (new code for one operator) on the resized job: the running spec with it, at the
        # width the job runs at (which no manifest says); only the PEs whose content changes go.
        (tmp_path / "v2").mkdir()
        rebuilt = SyntheticSpec(chains=1, length=2, regions=1, width=2, rebuilt=frozenset({1}))
        v2 = write_sab(tmp_path / "v2" / "app.sab", rebuilt)
        found = await live_preview(sandbox, v2)
        assert found["replaced"]
        assert {tuple(r["reasons"]) for r in found["replaced"]} == {("content",)}
        assert sorted([*found["kept"], *(r["id"] for r in found["replaced"])]) == sorted(running)
        code, out, _ = await plan(str(v2), "--against", str(new), "-o", "json")
        assert code == 0
        offline = orjson.loads(out)  # the width the spec says: one channel fewer
        assert len(offline["kept"]) + len(offline["replaced"]) < len(running)
        bundle = {"bundle": {"name": "app.sab", "file": {"path": str(v2)}}}
        await apply_and_compare(client, found, bundle, 3)
        assert await region_widths(client, "live") == [(3, 3)]

        # A bundle that does not parse: one line, nothing runs differently.
        broken = tmp_path / "broken.sab"
        broken.write_bytes(b"not a zip")
        code, out, err = await plan(
            str(broken), "--against", "stj/live", "--kubeconfig", str(sandbox.kubeconfig_path)
        )
        assert (code, out) == (1, "")
        assert err.startswith("error: bundle broken.sab"), err
        assert len(err.splitlines()) == 1, err


@pytest.mark.sandbox(nodes=1, token="t")
async def test_the_live_form_fails_in_one_line_without_the_job_access_or_a_server(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=1))
    await client.create(JOBS, job_manifest("idle", sab))  # no operator: it never runs
    wrong = write_kubeconfig(tmp_path / "wrong", sandbox.url, "not-the-token")
    nowhere = write_kubeconfig(tmp_path / "nowhere", f"http://127.0.0.1:{free_port()}", None)
    cases = [
        (sandbox.kubeconfig_path, "stj/nope", "error: Job default/nope does not exist"),
        (sandbox.kubeconfig_path, "stj/idle", "error: Job default/idle runs nothing yet"),
        (wrong, "stj/live", "error: no access to Job default/live: 401"),
        (nowhere, "streamsjobs.streams.ibm.com/live", "error: cannot reach the API server"),
        (tmp_path / "absent", "stj/live", "error: cannot load the kubeconfig"),
    ]
    for kubeconfig, against, message in cases:
        code, out, err = await plan(str(sab), "--against", against, "--kubeconfig", str(kubeconfig))
        assert (code, out) == (1, ""), err
        assert err.startswith(message), err
        assert len(err.splitlines()) == 1, err
