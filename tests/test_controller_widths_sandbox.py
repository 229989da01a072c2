"""Parallel-region width changes of a running job, over the REST API and the /scale subresource."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from k8s_support import eventually_async
from operator_support import SUBMITTED, as_pe, free_port, job_manifest, operator, wait_for_phase
from streams_k8s.api.contract import (
    APP_LABEL,
    CONTENT_ID_ANNOTATION,
    GENERATION_LABEL,
    JOB_LABEL,
    NAME_TABLE_KEY,
    PE_LABEL,
    SVC_LABEL,
)
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, HOSTPOOLS, JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SERVICES
from streams_k8s.k8s.objects import Object
from streams_k8s.naming import NameTable
from streams_k8s.sandbox import Sandbox

API_PORT = free_port()

ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def pes_of(client: KubeClient, job: str) -> dict[int, dict[str, Any]]:
    items, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}={job}")
    return {int(p["spec"]["id"]): p for p in items}


async def pods_of(client: KubeClient, job: str) -> dict[int, str]:
    items, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    return {int(p["metadata"]["labels"][PE_LABEL]): p["metadata"]["uid"] for p in items}


async def region_status(client: KubeClient, name: str) -> dict[str, Any]:
    return dict((await client.get(PARALLEL_REGIONS, name, "default")).get("status") or {})


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}")
async def test_width_changes_refuse_the_job_and_keep_unchanged_pods(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT) as running:
        await client.create(JOBS, job_manifest("wide", bundle))
        await wait_for_phase(client, "wide", *SUBMITTED)
        await wait_for_phase(client, "wide", "Running")
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name, alias = region["metadata"]["name"], region["spec"]["alias"]
        await eventually_async(lambda: _has_width(client, name, 2), within=10)
        assert (await region_status(client, name))["selector"] == f"{JOB_LABEL}=wide,{SVC_LABEL}=pe"

        before = await pes_of(client, "wide")
        pods_before = await pods_of(client, "wide")
        url = f"{running.api}/api/state/job/wide/pr/{alias}/width"
        async with as_pe(client, "wide", 0) as http:  # the runtime's call, from a PE of the job
            for bad, status in ((0, 400), ("3", 400), (True, 400), (1001, 400)):
                async with http.put(url, json=bad) as answer:
                    assert answer.status == status
                    assert (await answer.json())["reason"] == "BadRequest"
            async with http.put(f"{running.api}/api/state/job/wide/pr/nope/width", json=3) as answer:
                assert answer.status == 404
            async with http.put(url, json=4) as answer:
                assert answer.status == 204, await answer.text()
            async with http.get(f"{running.api}/api/state/job/wide/pr/nope/width") as answer:
                assert (answer.status, (await answer.json())["reason"]) == (404, "NotFound")

        await eventually_async(lambda: _has_width(client, name, 4), within=20)
        async with aiohttp.ClientSession() as http, http.get(url) as answer:
            assert (answer.status, await answer.json()) == (200, 4)
        job = await client.get(JOBS, "wide", "default")
        assert job["status"]["generationId"] == 1
        after = await pes_of(client, "wide")
        assert job["status"]["processingElements"] == len(after) > len(before)
        unchanged = [
            i
            for i in before
            if i in after and before[i]["spec"]["contentId"] == after[i]["spec"]["contentId"]
        ]
        changed = [i for i in before if i in after and i not in unchanged]
        added = [i for i in after if i not in before]
        assert unchanged
        assert added
        for i in added:  # added PEs: their ConfigMap with the AADL, at the new generation
            cm = await client.get(CONFIGMAPS, f"wide-{i}", "default")
            assert cm["metadata"]["labels"][GENERATION_LABEL] == "1"
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == after[i]["spec"]["contentId"]
        for i in changed:
            cm = await client.get(CONFIGMAPS, f"wide-{i}", "default")
            assert cm["metadata"]["annotations"][CONTENT_ID_ANNOTATION] == after[i]["spec"]["contentId"]
        pods_after = await pods_of(client, "wide")
        assert {i: pods_after[i] for i in unchanged} == {i: pods_before[i] for i in unchanged}
        table = NameTable.parse((await client.get(CONFIGMAPS, "wide", "default"))["data"][NAME_TABLE_KEY])
        assert {label.pe_id for label in table.values()} >= set(added)

        # /scale (what `kubectl scale stpr/<name> --replicas=N` does): back to 2, nothing left over
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"replicas": 2}}, "default", subresource="scale")
        await eventually_async(lambda: _has_width(client, name, 2), within=20)
        assert (await client.get(JOBS, "wide", "default"))["status"]["generationId"] == 2
        assert sorted(await pes_of(client, "wide")) == sorted(before)


async def _has_width(client: KubeClient, name: str, width: int) -> bool:
    status = await region_status(client, name)
    return status.get("width") == width and any(
        c["type"] == "Resized" and c["status"] == "True" for c in status.get("conditions") or ()
    )


async def _resizing_as_the_release_before_wrote_it(
    client: KubeClient, region: Object, generation: int
) -> None:
    """The write-ahead of a width change (to 3) as the release before kept it: the region's
    condition alone, naming the job generation the change becomes."""
    intent = {
        "type": "Resized",
        "status": "False",
        "reason": "Resizing",
        "message": f"to width 3 as job generation {generation}",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": region["metadata"]["generation"],
    }
    name = region["metadata"]["name"]
    await client.patch_status(PARALLEL_REGIONS, name, {"conditions": [intent]}, "default")


@pytest.mark.sandbox(nodes=1)
async def test_a_change_recorded_before_a_restart_is_finished_with_its_generation(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=3, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("again", bundle))
        await wait_for_phase(client, "again", *SUBMITTED)
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]
        await eventually_async(lambda: _has_width(client, name, 2), within=10)
    # The operator died right after its write-ahead: the edit and the intent are recorded.
    edited = await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": 3}}, "default")
    status = await region_status(client, name)
    await _resizing_as_the_release_before_wrote_it(client, edited, 7)
    assert status["width"] == 2
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await eventually_async(lambda: _has_width(client, name, 3), within=20)
        assert (await client.get(JOBS, "again", "default"))["status"]["generationId"] == 7


@pytest.mark.sandbox(nodes=1)
async def test_a_width_change_the_release_before_left_under_way_is_finished(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator of the release before wrote a width change ahead in the region's condition alone
    (Resized=False, Resizing, "as job generation N"), then the Job's generationId, and was upgraded
    before it wrote the children: this one finishes the change, as job generation N, through its
    own change record, touching only the PEs the change touches."""
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("upgraded", bundle, fusion={"legacy": True}))
        await wait_for_phase(client, "upgraded", "Running")
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]
        await eventually_async(lambda: _has_width(client, name, 2), within=10)
    before, pods_before = await pes_of(client, "upgraded"), await pods_of(client, "upgraded")
    edited = await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": 3}}, "default")
    await _resizing_as_the_release_before_wrote_it(client, edited, 5)
    await client.patch_status(JOBS, "upgraded", {"generationId": 5}, "default")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await eventually_async(lambda: _has_width(client, name, 3), within=20)
        await wait_for_phase(client, "upgraded", "Running")
        status = (await client.get(JOBS, "upgraded", "default"))["status"]
        assert (status["generationId"], status.get("upgrade")) == (5, None)
        after, pods_after = await pes_of(client, "upgraded"), await pods_of(client, "upgraded")
        assert status["processingElements"] == len(after) > len(before)
        unchanged = [i for i in before if before[i]["spec"]["contentId"] == after[i]["spec"]["contentId"]]
        assert len(unchanged) < len(before)  # the change touched some
        assert unchanged
        assert {i: pods_after[i] for i in unchanged} == {i: pods_before[i] for i in unchanged}


@pytest.mark.sandbox(nodes=2)
async def test_replicated_host_pools_follow_the_width_and_bad_widths_are_refused(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = SyntheticSpec(chains=1, length=3, regions=1, width=2, pools=1, replicate_pools=True)
    bundle = write_sab(tmp_path / "app.sab", spec)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("pools", bundle))
        await wait_for_phase(client, "pools", *SUBMITTED)
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]

        async def pool_names() -> set[str]:
            items, _ = await client.list_all(HOSTPOOLS, "default", label_selector=f"{JOB_LABEL}=pools")
            return {p["spec"]["name"] for p in items}

        assert {"pool0_0_0", "pool0_0_1"} <= await pool_names()
        with pytest.raises(ApiError) as refused:  # kubectl edit to 0: the schema says no
            await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": 0}}, "default")
        assert refused.value.status == 422
        await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": 3}}, "default")
        await eventually_async(lambda: _has_width(client, name, 3), within=20)

        async def third_pool() -> bool:
            return "pool0_0_2" in await pool_names()

        await eventually_async(third_pool, within=10)


async def served_addresses(client: KubeClient, job: str) -> dict[int, set[str]]:
    """PE id → the addresses its Service's Endpoints list as ready (what its DNS name resolves to)."""
    services, _ = await client.list_all(
        SERVICES, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe"
    )
    served = {}
    for service in services:
        try:
            endpoints = await client.get(ENDPOINTS, service["metadata"]["name"], "default")
        except ApiError as err:
            if not err.not_found:
                raise
            endpoints = {}
        served[int(service["metadata"]["labels"][PE_LABEL])] = {
            a["ip"] for subset in endpoints.get("subsets") or () for a in subset.get("addresses") or ()
        }
    return served


async def ready_pod_addresses(client: KubeClient, job: str) -> dict[int, set[str]]:
    pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    ready: dict[int, set[str]] = {}
    for pod in pods:
        conditions = (pod.get("status") or {}).get("conditions") or ()
        if pod["metadata"].get("deletionTimestamp") or not any(
            c["type"] == "Ready" and c["status"] == "True" for c in conditions
        ):
            continue
        ready.setdefault(int(pod["metadata"]["labels"][PE_LABEL]), set()).add(pod["status"]["podIP"])
    return ready


async def every_service_serves_its_pe(client: KubeClient, job: str) -> bool:
    pes = set(await pes_of(client, job))
    served, pods = await served_addresses(client, job), await ready_pod_addresses(client, job)
    return set(served) == pes == set(pods) and all(served[pe] and served[pe] == pods[pe] for pe in pes)


@pytest.mark.sandbox(nodes=2)
async def test_after_width_changes_every_pe_service_selects_its_pes_pod(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1, width=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("served", bundle, fusion={"manual": 3}))
        await wait_for_phase(client, "served", "Running")
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]
        await eventually_async(lambda: every_service_serves_its_pe(client, "served"), within=10)
        for width, generation in ((3, 1), (2, 2)):  # PEs changed, added, removed, then back
            await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": width}}, "default")
            await eventually_async(lambda w=width: _has_width(client, name, w), within=20)
            job = await client.get(JOBS, "served", "default")
            assert job["status"]["generationId"] == generation
            await wait_for_phase(client, "served", "Running")
            # Endpoints list exactly the ready pod of each PE: its DNS name resolves to it.
            await eventually_async(lambda: every_service_serves_its_pe(client, "served"), within=20)


@pytest.mark.sandbox(nodes=1)
async def test_services_an_earlier_operator_made_are_healed_keeping_user_ports(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=3))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("healed", bundle, fusion={"manual": 2}))
        await wait_for_phase(client, "healed", "Running")
        service = await client.get(SERVICES, "healed-0", "default")
        planned = service["spec"]["selector"]
        # What the operator before this fix left: the generation in the selector (and a width
        # change since, so it names a generation no pod has), plus a user endpoint port.
        stale = {APP_LABEL: "streams", JOB_LABEL: "healed", GENERATION_LABEL: "4", PE_LABEL: "0"}
        user_port = {"name": "usr-web", "port": 8080, "targetPort": 8080, "protocol": "TCP"}
        body = {**service, "spec": {**service["spec"], "selector": stale}}
        body["spec"]["ports"] = [*service["spec"]["ports"], user_port]
        await client.replace(SERVICES, body)

        async def healed() -> bool:
            spec = (await client.get(SERVICES, "healed-0", "default"))["spec"]
            return spec["selector"] == planned and user_port["name"] in {p["name"] for p in spec["ports"]}

        await eventually_async(healed, within=10)
        assert GENERATION_LABEL not in planned
        await eventually_async(lambda: every_service_serves_its_pe(client, "healed"), within=10)


@pytest.mark.sandbox(nodes=2)
async def test_a_narrowed_region_leaves_nothing_of_its_dropped_channel_in_the_consistent_region(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parallel region inside a consistent region, widened to 3 then narrowed back to 2: the
    ConsistentRegion names the operators that run, as at width 2 (its start and trigger operators
    once named the third channel's, which the coordinator would take a drain from), and a region
    the change leaves as it was keeps what the user set on it."""
    spec = SyntheticSpec(chains=2, length=3, consistent_chains=2, regions=1, width=2)
    bundle = write_sab(tmp_path / "app.sab", spec)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("cr", bundle, fusion={"legacy": True}))
        await wait_for_phase(client, "cr", "Running")
        (region,) = (await client.list_all(PARALLEL_REGIONS, "default"))[0]
        name = region["metadata"]["name"]
        at_two = {r["metadata"]["name"]: r["spec"] for r in await _consistent_regions(client)}
        for width in (3, 2):
            await client.patch(PARALLEL_REGIONS, name, {"spec": {"width": width}}, "default")
            await eventually_async(lambda w=width: _has_width(client, name, w), within=20)
            await wait_for_phase(client, "cr", "Running")
            if width == 3:  # the user makes the region the change leaves alone periodic
                widened = {r["metadata"]["name"]: r["spec"] for r in await _consistent_regions(client)}
                (alone,) = [n for n, s in widened.items() if s == at_two[n]]
                periodic = {"spec": {"trigger": "periodic", "period": 5.0}}
                await client.patch(CONSISTENT_REGIONS, alone, periodic, "default")
                at_two[alone] = {**at_two[alone], **periodic["spec"]}
        assert {r["metadata"]["name"]: r["spec"] for r in await _consistent_regions(client)} == at_two


async def _consistent_regions(client: KubeClient) -> list[dict[str, Any]]:
    items, _ = await client.list_all(CONSISTENT_REGIONS, "default", label_selector=f"{JOB_LABEL}=cr")
    return items
