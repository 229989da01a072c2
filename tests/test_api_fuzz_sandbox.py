"""schemathesis against both OpenAPI documents, served against the sandbox: the instance REST
API of a running operator and a job's dedicated coordinator. Bounded (a few hundred requests in
all) so it runs with the suite.

Every answer must be below 500 and JSON when it is an error. Unauthenticated writes from the
test process (no pod's address, no token) must be 401 or 403. Then the same operations are sent
as the job's PE 0 would send them (with a token bound to its pod, as the simulated runtime calls),
with the path parameters pinned to the job and that PE (and widths small), so that the handlers
behind the guard see generated input. The coordinator is the process the sandbox's kubelet runs in
the job's coordinator pod.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings

from cr_cluster import coordinator_accounts, coordinator_url
from operator_support import SUBMITTED, job_manifest, operator, pe_pod, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.consistent.rest import BASE_PATH
from streams_k8s.controller.kinds import JOBS
from streams_k8s.controller.rest.openapi import OPENAPI
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant
from streams_k8s.sandbox.cluster.pod_tokens import PodRef, PodTokens

JOB = "fuzz"
EXAMPLES = 6  # per operation and caller: ~ (17 + 14 operations) x 2 callers x 6
WRITES = ("PUT", "POST", "PATCH", "DELETE")


@dataclass
class World:
    """The sandbox, the operator and the coordinator, served from a thread of their own (the
    fuzzer's calls are blocking)."""

    api: str = ""
    coordinator: str = ""
    pe_token: str = ""  # bound to PE 0's pod
    coordinator_document: dict[str, Any] = field(default_factory=dict)
    ready: threading.Event = field(default_factory=threading.Event)
    failure: BaseException | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _stop: asyncio.Event | None = None

    async def run(self, directory: Path) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        participant = ConsistentRegionParticipant(poll_interval=0.05)
        with pytest.MonkeyPatch.context() as monkeypatch:
            async with (
                Sandbox(nodes=2, pe_hooks=participant) as sandbox,
                await KubeClient.connect(str(sandbox.kubeconfig_path)) as client,
                operator(sandbox, monkeypatch, directory / "cache") as running,
            ):
                assert sandbox.pe_runtime is not None
                await sandbox.pe_runtime.report_to(running.api)
                await coordinator_accounts(client)
                spec = SyntheticSpec(chains=2, length=3, regions=1, width=2, consistent_chains=1)
                await client.create(JOBS, job_manifest(JOB, write_sab(directory / "app.sab", spec)))
                await wait_for_phase(client, JOB, *SUBMITTED)
                self.pe_token = await PodTokens(client).token(PodRef.of(await pe_pod(client, JOB, 0)))
                self.api = running.api
                self.coordinator = f"{await coordinator_url(sandbox, client, JOB)}{BASE_PATH}"
                self.ready.set()
                await self._stop.wait()

    def serve(self, directory: Path) -> threading.Thread:
        def main() -> None:
            try:
                asyncio.run(self.run(directory))
            except BaseException as err:  # reported to the test
                self.failure = err
                self.ready.set()

        thread = threading.Thread(target=main, name="fuzzed-world", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    world = World()
    thread = world.serve(tmp_path_factory.mktemp("fuzz"))
    assert world.ready.wait(120), "the sandbox, operator and coordinator did not start"
    if world.failure is not None:
        raise world.failure
    yield world
    world.stop()
    thread.join(30)


def session(token: str | None = None) -> requests.Session:
    """A session presenting ``token`` (None: no credentials)."""
    http = requests.Session()
    if token is not None:
        http.headers["Authorization"] = f"Bearer {token}"
    return http


def pinned(document: dict[str, Any], values: dict[str, list[Any]]) -> dict[str, Any]:
    """The document with these path parameters limited to these values, and widths kept small
    (a generated width of two billion would have the job controller plan two billion channels)."""
    doc = copy.deepcopy(document)
    for item in doc["paths"].values():
        for operation in (item, *(v for v in item.values() if isinstance(v, dict))):
            for parameter in operation.get("parameters") or ():
                if parameter.get("in") == "path" and parameter["name"] in values:
                    parameter["schema"] = {"enum": values[parameter["name"]]}
    width = doc["paths"].get("/api/state/job/{job}/pr/{alias}/width")
    if width is not None:
        width["put"]["requestBody"]["content"]["application/json"]["schema"]["maximum"] = 4
    return doc


def fuzz(document: dict[str, Any], base_url: str, http: requests.Session, check: Any) -> int:
    """Send generated requests for every operation; ``check(case, response)`` each. Returns the
    number of requests sent."""
    schema = schemathesis.openapi.from_dict(document)
    sent = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            nonlocal sent
            kwargs = case.as_transport_kwargs(base_url=base_url)
            kwargs.pop("cookies", None)
            response = http.request(**kwargs, timeout=10)
            sent += 1
            check(case, response)

        run()
    return sent


def no_server_error(case: Any, response: requests.Response) -> None:
    where = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text[:300]}"
    if response.status_code >= 400:
        assert response.headers["Content-Type"].startswith("application/json"), where
        assert response.json()["status"] == response.status_code, where


def refused_unless_read(case: Any, response: requests.Response) -> None:
    no_server_error(case, response)
    if case.method.upper() in WRITES:
        where = f"{case.method} {case.formatted_path}"
        assert response.status_code in (401, 403), f"{where}: {response.status_code} {response.text[:200]}"


@pytest.fixture(scope="module")
def coordinator_document(world: World) -> dict[str, Any]:
    answer = requests.get(f"{world.coordinator}/openapi.json", timeout=10)
    assert answer.status_code == 200
    return dict(answer.json())


def test_unauthenticated_writes_are_refused_and_nothing_is_a_server_error(
    world: World, coordinator_document: dict[str, Any]
) -> None:
    with session() as http:
        sent = fuzz(OPENAPI, world.api, http, refused_unless_read)
        sent += fuzz(coordinator_document, world.coordinator, http, refused_unless_read)
    assert sent >= 100


def test_the_runtime_side_answers_no_server_error(world: World, coordinator_document: dict[str, Any]) -> None:
    instance = pinned(OPENAPI, {"job": [JOB], "pe": ["0"], "port": ["0", "1"], "id": ["0", "1"]})
    coordinator = pinned(coordinator_document, {"pe": ["0"], "region": ["0", "1"]})
    with session(world.pe_token) as http:
        sent = fuzz(instance, world.api, http, no_server_error)
        sent += fuzz(coordinator, world.coordinator, http, no_server_error)
    assert sent >= 100
