"""The live console against the sandbox: views from the informers, pushes, and who sees what."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from console_support import console, first_push, get_json
from operator_support import free_port, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox
from tokens import ROLE_BINDINGS, ROLES, token_for

API_PORT = free_port()  # where the simulated PEs report their connectivity
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def _all_ok(url: str) -> dict[str, Any]:
    for _ in range(300):
        status, job = await get_json(f"{url}/api/jobs/default/demo")
        if status == 200 and job["pes"] and all(p["health"] == "ok" for p in job["pes"]):
            return dict(job)
        await asyncio.sleep(0.1)
    raise AssertionError(f"the PEs never all became ok: {job}")


async def _health_changes(url: str, pe: str, kill: Any) -> list[tuple[float, str]]:
    """The health of ``pe`` pushed on the job's stream after ``kill()``, with seconds since it."""
    seen: list[tuple[float, str]] = []
    timeout = aiohttp.ClientTimeout(total=30)
    path = f"{url}/api/stream/jobs/default/demo"
    async with aiohttp.ClientSession(timeout=timeout) as session, session.get(path) as stream:
        assert stream.headers["Content-Type"] == "text/event-stream"
        killed_at = 0.0
        async for line in stream.content:
            if not line.startswith(b"data: "):
                continue
            health = orjson.loads(line[6:])["snapshot"]["health"][pe]
            if not killed_at:
                assert health == "ok"
                await kill()
                killed_at = time.monotonic()
                continue
            seen.append((time.monotonic() - killed_at, health))
            if health == "ok" and any(h != "ok" for _, h in seen):
                return seen
    return seen


# start_delay: the relaunched pod stays Pending a while, as a real one pulls and starts.
@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", start_delay=1.0)
async def test_views_come_from_the_caches_and_a_killed_pod_is_pushed_within_a_second(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2, regions=1, width=2))
    async with (
        operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT),
        console(sandbox, tmp_path / "cache") as live,
    ):
        await client.create(JOBS, job_manifest("demo", bundle, fusion={"manual": 3}))
        await wait_for_phase(client, "demo", "Running")
        job = await _all_ok(live.url)
        assert job["job"]["phase"] == "Running"
        assert job["job"]["pes"] == len(job["pes"]) == 3
        assert [r["alias"] for r in job["parallelRegions"]]
        assert job["parallelRegions"][0]["width"] == 2
        status, jobs = await get_json(f"{live.url}/api/jobs")
        assert status == 200
        assert [(j["namespace"], j["name"], j["phase"]) for j in jobs["jobs"]] == [
            ("default", "demo", "Running")
        ]

        pe = job["pes"][0]
        status, detail = await get_json(f"{live.url}/api/jobs/default/demo/pes/{pe['id']}")
        assert status == 200
        assert detail["pe"]["pod"] == pe["pod"]
        assert detail["pe"]["node"].startswith("node")
        assert detail["pe"]["contentId"]
        assert detail["pe"]["launchCount"] >= 1

        async def kill() -> None:
            async with aiohttp.ClientSession() as session:
                body = {"action": "killPod", "namespace": "default", "pod": pe["pod"]}
                async with session.post(f"{sandbox.url}/_sandbox/cluster", json=body) as answer:
                    assert answer.status == 200, await answer.text()

        seen = await _health_changes(live.url, str(pe["id"]), kill)
        first_bad = next((at, h) for at, h in seen if h != "ok")
        assert first_bad[1] in ("failed", "starting"), seen
        assert first_bad[0] < 1.0, seen  # pushed within a second, no reload
        assert seen[-1][1] == "ok", seen  # and green again once the PE controller relaunched it

        status, detail = await get_json(f"{live.url}/api/jobs/default/demo/pes/{pe['id']}")
        assert detail["pe"]["launchCount"] >= 2
        status, events = await get_json(f"{live.url}/api/namespaces/default/events")
        assert status == 200
        assert any(e["object"] == "Job/demo" for e in events["events"])
        async with aiohttp.ClientSession() as session, session.get(f"{live.url}/jobs/default/demo") as page:
            html = await page.text()
        assert page.status == 200
        assert html.count("data-pe-row=") == 3


async def _namespace(client: KubeClient, name: str) -> None:
    await client.create_if_absent(NAMESPACES, {"metadata": {"name": name}})


async def _may_list_jobs(client: KubeClient, account: str, namespace: str) -> None:
    role = {
        "metadata": {"name": "job-reader"},
        "rules": [{"apiGroups": ["streams.ibm.com"], "resources": ["streamsjobs"], "verbs": ["get", "list"]}],
    }
    await client.create(ROLES, role, namespace)
    binding = {
        "metadata": {"name": f"job-reader-{account}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}],
    }
    await client.create(ROLE_BINDINGS, binding, namespace)


@pytest.mark.sandbox(nodes=1, simulate=False)
async def test_a_token_sees_only_the_namespaces_it_may_list_jobs_in(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=1))
    await _namespace(client, "secret")
    await client.create(JOBS, job_manifest("visible", bundle))
    hidden = job_manifest("hidden", bundle)
    hidden["metadata"]["namespace"] = "secret"
    await client.create(JOBS, hidden, "secret")
    await _may_list_jobs(client, "reader", "default")
    reader = await token_for(client, "reader")

    async with console(sandbox, tmp_path / "cache", auth="token") as live:
        # No token, or one the API server refuses: nothing at all.
        assert (await get_json(f"{live.url}/api/jobs"))[0] == 401
        status, refused = await get_json(f"{live.url}/api/jobs", token="forged")
        assert (status, refused["reason"]) == (401, "Unauthorized")
        assert "refused" in refused["message"]
        async with aiohttp.ClientSession() as session, session.get(f"{live.url}/jobs") as page:
            assert page.status == 401
            assert 'name="token"' in await page.text()

        status, jobs = await get_json(f"{live.url}/api/jobs", token=reader)
        assert status == 200
        assert [(j["namespace"], j["name"]) for j in jobs["jobs"]] == [("default", "visible")]
        assert (await get_json(f"{live.url}/api/jobs/default/visible", token=reader))[0] == 200
        for path in (
            "/api/jobs/secret/hidden",
            "/api/namespaces/secret/events",
            "/api/stream/jobs/secret/hidden",
        ):
            status, answer = await (first_push if "stream" in path else get_json)(live.url + path, reader)
            assert (status, answer["reason"]) == (404, "NotFound"), path
            assert "hidden" not in str(answer.get("snapshot", "")), path
        headers = {"Authorization": f"Bearer {reader}"}
        async with (
            aiohttp.ClientSession(headers=headers) as s,
            s.get(f"{live.url}/jobs/secret/hidden") as page,
        ):
            assert page.status == 404
        status, pushed = await first_push(f"{live.url}/api/stream/jobs", reader)
        assert status == 200
        assert [j["name"] for j in pushed["snapshot"]["jobs"]] == ["visible"]
        assert "secret" not in orjson.dumps(pushed).decode()

        # The cookie the login form sets works like the header (EventSource sends cookies only).
        jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP host
        form = {"token": reader}
        async with aiohttp.ClientSession(cookie_jar=jar) as s, s.post(f"{live.url}/login", data=form) as page:
            assert page.status == 200
            assert "visible" in await page.text()
            assert "hidden" not in await page.text()
