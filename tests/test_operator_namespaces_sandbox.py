"""One operator watching a list of namespaces (`--namespace team-a,team-b`): the Jobs of each are
run there and kept apart (the same job name and id in both reach each namespace's own job through
the instance API), and a Job in a namespace it does not watch is left untouched."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from k8s_support import eventually_async
from operator_support import SUBMITTED, Running, as_pe, job_manifest, operator
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
WATCHED = ("team-a", "team-b")
UNWATCHED = "team-c"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        for namespace in (*WATCHED, UNWATCHED):
            await c.create(NAMESPACES, {"metadata": {"name": namespace}})
        yield c


async def status(client: KubeClient, name: str, namespace: str) -> dict[str, Any]:
    return dict((await client.get(JOBS, name, namespace)).get("status") or {})


@pytest.fixture
async def running(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Running]:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache", namespace=",".join(WATCHED)) as run:
        for namespace in (*WATCHED, UNWATCHED):
            job = job_manifest("app", bundle, fusion={"manual": 2})
            job["metadata"]["namespace"] = namespace
            await client.create(JOBS, job)
        for namespace in WATCHED:

            async def submitted(namespace: str = namespace) -> bool:
                return (await status(client, "app", namespace)).get("phase") in SUBMITTED

            await eventually_async(submitted, within=30)
        yield run


@pytest.mark.sandbox(nodes=1)
async def test_each_watched_namespace_runs_its_own_job(running: Running, client: KubeClient) -> None:
    for namespace in WATCHED:
        assert (await status(client, "app", namespace))["id"] == 0  # ids are per namespace
        pes, _ = await client.list_all(PES, namespace)
        assert sorted(p["metadata"]["name"] for p in pes) == ["app-0", "app-1"]
    # the namespace it does not watch: its Job as created, nothing made of it
    assert await status(client, "app", UNWATCHED) == {}
    assert (await client.list_all(PES, UNWATCHED))[0] == []


@pytest.mark.sandbox(nodes=1)
async def test_the_instance_api_keeps_the_namespaces_apart(running: Running, client: KubeClient) -> None:
    by_id = f"{running.api}/api/state/job/by-id/0/name"
    url = f"{running.api}/api/state/job/app/pe/1/connectivity"
    async with as_pe(client, "app", 1, "team-a") as http:
        # PE pods call streams-api.<their namespace>: team-a's job, though team-b has one as named
        async with http.get(by_id, headers={"Host": "streams-api.team-a:10000"}) as response:
            assert (response.status, await response.text()) == (200, "app")
        headers = {"Host": "streams-api.team-a", "Content-Type": "application/json"}
        async with http.put(url, data=orjson.dumps("Partial"), headers=headers) as response:
            assert response.status == 204
        # a caller of no namespace: the name is in both
        async with http.get(by_id) as response:
            body = await response.json()
            assert (response.status, body["reason"]) == (409, "Ambiguous")
            assert "team-a, team-b" in body["message"]
        # a namespace it does not watch names no job
        async with http.get(by_id, headers={"Host": f"streams-api.{UNWATCHED}"}) as response:
            assert response.status == 409
    assert (await client.get(PES, "app-1", "team-a"))["status"]["connectivity"] == "Partial"
    assert (await client.get(PES, "app-1", "team-b")).get("status", {}).get("connectivity") != "Partial"
    # team-a's PE pod may not write on team-b's job
    async with as_pe(client, "app", 1, "team-a") as http:
        headers = {"Host": "streams-api.team-b", "Content-Type": "application/json"}
        async with http.put(url, data=orjson.dumps("Full"), headers=headers) as response:
            assert response.status == 403
