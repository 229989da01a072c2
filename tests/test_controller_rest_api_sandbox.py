"""The instance REST API over HTTP: the PE runtime's calls (from its PE pods' addresses), who may
write, user endpoints, bad input, OpenAPI."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from openapi_schema_validator import OAS31Validator

from k8s_support import eventually_async
from operator_support import SUBMITTED, Running, as_pe, job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import SERVICES
from streams_k8s.sandbox import Sandbox
from tokens import allow_job_updates, token_for


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def running(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Running]:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as run:
        await client.create(JOBS, job_manifest("rest", bundle, fusion={"manual": 2}))
        await wait_for_phase(client, "rest", *SUBMITTED)
        yield run


@pytest.fixture
async def http(running: Running, client: KubeClient) -> AsyncIterator[aiohttp.ClientSession]:
    """Calls from PE 0's pod."""
    async with as_pe(client, "rest", 0) as session:
        yield session


async def call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    body: Any = None,
    raw: bytes | None = None,
    token: str | None = None,
) -> tuple[int, str, Any]:
    data = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with http.request(method, url, data=data, headers=headers) as response:
        text = await response.text()
        kind = response.content_type
        return response.status, kind, orjson.loads(text) if kind == "application/json" and text else text


async def served(http: aiohttp.ClientSession, url: str, value: str) -> None:
    """Wait until the operator answers a GET of ``url`` with ``value`` (its PE cache shows it)."""

    async def shows() -> bool:
        return bool((await call(http, "GET", url))[2] == value)

    await eventually_async(shows, within=5)


@pytest.mark.sandbox(nodes=1)
async def test_the_runtime_calls(running: Running, client: KubeClient) -> None:
    async with as_pe(client, "rest", 1) as http:
        status, kind, body = await call(http, "GET", f"{running.api}/api/state/job/by-id/0/name")
        assert (status, kind, body) == (200, "text/plain", "rest")

        url = f"{running.api}/api/state/job/rest/pe/1/connectivity"
        assert (await call(http, "PUT", url, "Partial"))[0] == 204
        pe = await client.get(PES, "rest-1", "default")
        assert pe["status"]["connectivity"] == "Partial"
        await served(http, url, "Partial")


@pytest.mark.sandbox(nodes=1)
async def test_a_pes_reports_land_in_the_order_they_arrive(
    sandbox: Sandbox, running: Running, client: KubeClient
) -> None:
    # The runtime gave up on a Partial report (its answer was late) and reported Full since: the
    # Partial still being written must not land after the Full.
    url = f"{running.api}/api/state/job/rest/pe/1/connectivity"
    async with as_pe(client, "rest", 1) as http:
        assert (await call(http, "PUT", url, "Full"))[0] == 204
        sandbox.faults.delay(1.0, count=1, verb="patch", resource="streamspes/status", name="rest-1")
        late = asyncio.create_task(call(http, "PUT", url, "Partial"))
        await asyncio.sleep(0.3)  # the Partial is being written
        assert (await call(http, "PUT", url, "Full"))[0] == 204
        assert (await late)[0] == 204
        assert (await client.get(PES, "rest-1", "default"))["status"]["connectivity"] == "Full"
        assert (await call(http, "GET", url))[2] == "Full"


@pytest.mark.sandbox(nodes=1)
async def test_a_report_lands_when_the_operator_has_not_seen_the_relaunch_before_it(
    sandbox: Sandbox, running: Running, client: KubeClient
) -> None:
    # A relaunch was written ahead (connectivity None) and its new pod reports Full, as the last
    # launch did, before the operator's PE watch shows the relaunch: the report must not be taken
    # for one already written (on a real API server 2 of 100 replaced PEs stayed None so).
    url = f"{running.api}/api/state/job/rest/pe/1/connectivity"
    async with as_pe(client, "rest", 1) as http:
        assert (await call(http, "PUT", url, "Full"))[0] == 204
        await served(http, url, "Full")
        with sandbox.faults.watches_stalled("streamspes") as stalled:
            assert stalled >= 1
            await client.patch_status(PES, "rest-1", {"connectivity": "None"}, "default")
            assert (await call(http, "PUT", url, "Full"))[0] == 204
    assert (await client.get(PES, "rest-1", "default"))["status"]["connectivity"] == "Full"


@pytest.mark.sandbox(nodes=1)
@pytest.mark.parametrize("before", ["its first report", "a report the operator has not seen"])
async def test_a_started_pod_is_recorded_in_one_write(
    sandbox: Sandbox, running: Running, client: KubeClient, before: str
) -> None:
    # A just-started pod's report that carries its record is one write, where the API server refused
    # it (a 409 and a read each time) from a PE cache behind a report: after the pod's own first
    # report (which recorded it: the next writes its connectivity alone), and after a report written
    # without the record (the record's condition is the launch and phase, not the PE's version).
    url = f"{running.api}/api/state/job/rest/pe/1/connectivity"
    async with as_pe(client, "rest", 1) as http:
        await client.patch_status(PES, "rest-1", {"phase": "Pending", "connectivity": "None"}, "default")
        await served(http, url, "None")
        with sandbox.faults.watches_stalled("streamspes") as stalled:
            assert stalled >= 1
            if before == "its first report":
                assert (await call(http, "PUT", url, "Partial"))[0] == 204
            else:
                await client.patch_status(PES, "rest-1", {"connectivity": "Partial"}, "default")
            since = time.time()
            assert (await call(http, "PUT", url, "Full"))[0] == 204
            writes = [
                (r.info.verb, r.status)
                for r in sandbox.requests
                if r.time >= since and r.info is not None and r.info.name == "rest-1"
            ]
    assert writes == [("patch", 200)]
    status = (await client.get(PES, "rest-1", "default"))["status"]
    assert (status["phase"], status["connectivity"]) == ("Running", "Full")


@pytest.mark.sandbox(nodes=1)
@pytest.mark.parametrize(
    ("seen", "recorded"),
    [(True, True), (False, True), (False, False)],
    ids=["relaunch-seen", "relaunch-not-seen", "neither-start-nor-relaunch-seen"],
)
async def test_a_report_from_a_replaced_launch_is_refused(
    sandbox: Sandbox, running: Running, client: KubeClient, seen: bool, recorded: bool
) -> None:
    # Launch 2 was written ahead; launch 1's pod, stopping, reports its connections going: that
    # speaks for no launch that runs, and written it would show launch 2 connected before it runs.
    # Refused whether the operator's PE cache shows launch 2 yet or not (then the API server's PE
    # tells), and whether the report would write its connectivity alone (launch 1 recorded as
    # started) or with the start's record; launch 1's pod stays in the operator's pod cache.
    url = f"{running.api}/api/state/job/rest/pe/1/connectivity"
    async with as_pe(client, "rest", 1) as http:
        if recorded:
            assert (await call(http, "PUT", url, "Full"))[0] == 204
            await served(http, url, "Full")
        with contextlib.ExitStack() as stalls:
            assert stalls.enter_context(sandbox.faults.watches_stalled("pods")) >= 1
            if not seen:
                assert stalls.enter_context(sandbox.faults.watches_stalled("streamspes")) >= 1
            await client.patch_status(PES, "rest-1", {"launchCount": 2, "connectivity": "None"}, "default")
            if seen:
                await served(http, url, "None")
            code, _, body = await call(http, "PUT", url, "Partial")
    assert (code, body["reason"]) == (409, "Superseded")
    assert "launch 2 replaced it" in body["message"]
    assert (await client.get(PES, "rest-1", "default"))["status"]["connectivity"] == "None"


@pytest.mark.sandbox(nodes=1)
async def test_user_endpoints_become_service_ports(
    running: Running, http: aiohttp.ClientSession, client: KubeClient
) -> None:
    url = f"{running.api}/api/endpoints/job/rest/pe/0/endpoint/web"
    info = {"canonicalName": "pe0.example", "port": 8080, "protocol": "TCP"}
    assert (await call(http, "PUT", url, info))[0] == 204
    service = await client.get(SERVICES, "rest-0", "default")
    port = next(p for p in service["spec"]["ports"] if p["name"] == "usr-web")
    assert (port["port"], port["protocol"], port["targetPort"]) == (8080, "TCP", 8080)
    assert "nodePort" not in port

    async def listed() -> bool:
        code, _, body = await call(http, "GET", f"{running.api}/api/endpoints/job/rest/endpoint/web")
        return code == 200 and body == {"canonicalName": "rest-0.default", "port": 8080, "protocol": "TCP"}

    await eventually_async(listed, within=5)
    code, _, ports = await call(http, "GET", f"{running.api}/api/endpoints/job/rest/pe/0")
    assert code == 200
    assert {"usr-web", "sys-metrics"} <= set(ports)
    # the same endpoint name on another PE of the job is refused
    async with as_pe(client, "rest", 1) as pe1:
        code, _, body = await call(
            pe1, "PUT", f"{running.api}/api/endpoints/job/rest/pe/1/endpoint/web", info
        )
    assert code == 409
    assert body["reason"] == "AlreadyExists"
    assert (await call(http, "DELETE", url))[0] == 204
    service = await client.get(SERVICES, "rest-0", "default")
    assert all(p["name"] != "usr-web" for p in service["spec"]["ports"])


@pytest.mark.sandbox(nodes=1)
@pytest.mark.parametrize(
    ("method", "path", "body", "expected"),
    [
        ("GET", "/api/state/job/by-id/7/name", None, 404),
        ("GET", "/api/state/job/by-id/x/name", None, 400),
        ("GET", "/api/state/job/nojob/pe/0/connectivity", None, 404),
        ("GET", "/api/state/job/rest/pe/9/connectivity", None, 404),
        ("GET", "/api/state/job/rest/pe/-1/connectivity", None, 400),
        ("PUT", "/api/state/job/rest/pe/0/connectivity", b'"Sometimes"', 400),
        ("PUT", "/api/state/job/rest/pe/0/connectivity", b"{not json", 400),
        ("PUT", "/api/endpoints/job/rest/pe/0/endpoint/web", b'{"port": "80"}', 400),
        ("PUT", "/api/endpoints/job/rest/pe/0/endpoint/web", b'{"port": 70000}', 400),
        ("PUT", "/api/endpoints/job/rest/pe/0/endpoint/Bad_Name", b'{"port": 80}', 400),
        ("PUT", "/api/endpoints/job/rest/pe/0/endpoint/web", b'{"port": 80, "protocol": 7}', 400),
        (
            "PUT",
            "/api/endpoints/job/rest/pe/0/endpoint/web",
            b'{"port": 80, "canonicalName": "a\\u0001"}',
            400,
        ),
        ("DELETE", "/api/endpoints/job/rest/pe/0/endpoint/absent", None, 404),
        ("GET", "/api/endpoints/job/rest/endpoint/absent", None, 404),
        ("GET", "/api/nothing/here", None, 404),
        ("POST", "/api/state/job/rest/pe/0/connectivity", b'"Full"', 405),
    ],
)
async def test_bad_input_is_a_4xx_with_a_json_body(
    running: Running, http: aiohttp.ClientSession, method: str, path: str, body: bytes | None, expected: int
) -> None:
    status, kind, answer = await call(http, method, f"{running.api}{path}", raw=body)
    assert status == expected
    assert kind == "application/json"
    assert answer["status"] == expected
    assert answer["message"]


@pytest.mark.sandbox(nodes=1)
async def test_openapi_document_is_valid_and_covers_every_route(
    running: Running, http: aiohttp.ClientSession
) -> None:
    status, _, document = await call(http, "GET", f"{running.api}/api/openapi.json")
    assert status == 200
    assert document["openapi"].startswith("3.1")
    OAS31Validator.check_schema(document["components"]["schemas"]["Error"])
    routes = {
        r.resource.canonical
        for r in running.operator.runner.app.router.routes()
        if r.resource is not None and r.resource.canonical != "/api/openapi.json"
    }
    assert routes == set(document["paths"])


@pytest.mark.sandbox(nodes=1)
async def test_writes_come_from_the_jobs_pe_pods_or_an_authorized_token(
    running: Running, client: KubeClient
) -> None:
    """The fuzzer's attack: unauthenticated writes from outside the job change its state."""
    connectivity = f"{running.api}/api/state/job/rest/pe/0/connectivity"
    width_free = [
        ("PUT", connectivity, b'"None"'),
        ("PUT", f"{running.api}/api/endpoints/job/rest/pe/0/endpoint/web", b'{"port": 80}'),
        ("DELETE", f"{running.api}/api/endpoints/job/rest/pe/0/endpoint/web", None),
        ("PUT", f"{running.api}/api/subscriptions/job/rest/pe/0/import/0/filter", b"a > 1"),
        ("PUT", f"{running.api}/api/state/job/nojob/pe/0/connectivity", b'"None"'),
    ]
    async with aiohttp.ClientSession() as outsider:  # the test process: no pod's address
        for method, url, body in width_free:
            status, kind, answer = await call(outsider, method, url, raw=body)
            assert (status, kind, answer["reason"]) == (401, "application/json", "Unauthorized"), url
        status, _, answer = await call(outsider, "PUT", connectivity, raw=b'"None"', token="forged")
        assert status == 401
        assert "refused" in answer["message"]
        assert (await call(outsider, "GET", connectivity))[0] == 200  # reads stay open

    async with as_pe(client, "rest", 1) as pe1:  # a PE pod of the job, but not PE 0's
        status, _, answer = await call(pe1, "PUT", connectivity, raw=b'"None"')
        assert (status, answer["reason"]) == (403, "Forbidden")

    token = await token_for(client, "cli")
    async with aiohttp.ClientSession() as outsider:
        status, _, answer = await call(outsider, "PUT", connectivity, raw=b'"Partial"', token=token)
        assert status == 403
        assert "update streamsjobs.streams.ibm.com 'rest' in namespace default" in answer["message"]
    await allow_job_updates(client, "editor", "rest")
    allowed = await token_for(client, "editor")
    async with aiohttp.ClientSession() as outsider:
        assert (await call(outsider, "PUT", connectivity, raw=b'"Partial"', token=allowed))[0] == 204
    assert (await client.get(PES, "rest-0", "default"))["status"]["connectivity"] == "Partial"
