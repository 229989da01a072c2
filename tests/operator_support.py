"""The instance operator run in-process against the sandbox, for the controller integration tests."""

from __future__ import annotations

import asyncio
import io
import socket
import tarfile
import zipfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from k8s_support import eventually_async, sandbox_runtime
from streams_k8s.api.contract import JOB_LABEL, PE_LABEL
from streams_k8s.controller.kinds import JOBS
from streams_k8s.controller.operator import InstanceOperator, setup
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.pod_tokens import PodRef, PodTokens

# Every child created; Running as well once the PE controller has the pods ready.
SUBMITTED = ("Submitted", "Running")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Running:
    manager: Manager
    operator: InstanceOperator
    task: asyncio.Task[int]

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.operator.api_port}"

    async def stop(self) -> None:
        self.manager.stop()
        await self.task
        await self.operator.stop()


@asynccontextmanager
async def operator(
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    cache: Path,
    api_port: int = 0,
    job_retry_delay: float | None = None,
    **overrides: Any,
) -> AsyncIterator[Running]:
    """The operator's `setup` under a Manager, as `streams-k8s run` runs it.

    ``job_retry_delay`` shortens the job controller's first automatic retry (10 s) for a test.
    """
    monkeypatch.setenv("STREAMS_K8S_API_PORT", str(api_port))
    monkeypatch.setenv("STREAMS_K8S_REPOSITORY_PORT", "0")
    monkeypatch.setenv("STREAMS_K8S_BUNDLE_CACHE", str(cache))
    if job_retry_delay is not None:
        monkeypatch.setenv("STREAMS_K8S_RETRY_DELAY", str(job_retry_delay))
    settings = sandbox_runtime(sandbox, **({"namespace": "default", "shutdown_grace": 2.0} | overrides))
    manager = Manager(settings)
    await manager.connect()
    instance = await setup(manager)
    running = Running(manager, instance, asyncio.create_task(manager.run(handle_signals=False)))
    try:
        yield running
    finally:
        await running.stop()


def sab_from_adl(path: Path, adl: bytes) -> Path:
    """A SAB holding ``adl`` (for applications the synthetic generator cannot shape)."""
    tar_buf = io.BytesIO()
    with tarfile.open(fileobj=tar_buf, mode="w") as tar:
        info = tarfile.TarInfo("app/app.adl")
        info.size = len(adl)
        tar.addfile(info, io.BytesIO(adl))
    bundle_info = (
        '<bundleInfoModel xmlns="http://www.ibm.com/xmlns/prod/streams/spl/bundleInfoModel" '
        'adlFile="app.adl" buildId="edited" bundleVersion="4300" executionMode="distributed"/>'
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("bundleInfo.xml", bundle_info)
        zf.writestr("tar/bundle.tar", tar_buf.getvalue())
    return path


def job_manifest(name: str, sab: Path, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"bundle": {"name": sab.name, "file": {"path": str(sab)}}, **spec},
    }


async def job_status(client: KubeClient, name: str) -> dict[str, Any]:
    try:
        return dict((await client.get(JOBS, name, "default")).get("status") or {})
    except ApiError as err:
        if err.not_found:
            return {}
        raise


async def wait_for_phase(client: KubeClient, name: str, *phases: str, within: float = 30.0) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        latest = await job_status(client, name)
        seen.clear()  # the latest status only: fields an earlier status had may be gone
        seen.update(latest)
        return seen.get("phase") in phases

    try:
        await eventually_async(reached, within=within)
    except TimeoutError:
        raise AssertionError(f"job {name} never reached {phases}; status {seen}") from None
    return seen


async def first_status(
    client: KubeClient,
    name: str,
    reached: Callable[[dict[str, Any]], bool],
    since: str,
    namespace: str = "default",
    within: float = 30.0,
) -> dict[str, Any]:
    """The first status of Job ``name`` that ``reached`` accepts after resourceVersion ``since``,
    from a watch: a phase an edit passes through between two polls (a small upgrade takes
    milliseconds) is seen all the same, and a wait ends at the event, not at the next poll."""
    query = {
        "watch": True,
        "resourceVersion": since,
        "fieldSelector": f"metadata.name={name}",
        "timeoutSeconds": int(within),
    }
    async with (
        asyncio.timeout(within),
        client.stream(JOBS, JOBS.path(namespace), query, connect_timeout=5.0) as response,
    ):
        async for line in response.content:
            event = orjson.loads(line)
            status = (event.get("object") or {}).get("status") or {}
            if event.get("type") in ("ADDED", "MODIFIED") and reached(status):
                return dict(status)
    raise AssertionError(f"job {name}: no status after resourceVersion {since} was the one awaited")


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or () if c["type"] == type_)


CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)


async def drop_job_name_rules(client: KubeClient) -> None:
    """The Job CRD as a cluster upgraded from an earlier release may still have it: without the
    name rules, so a Job whose name is too long for its children reaches the operator (the
    sandbox applies a CRD's new schema as it stores it)."""
    crd = await client.get(CRDS, "streamsjobs.streams.ibm.com")
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].pop("x-kubernetes-validations")
    await client.replace(CRDS, crd)


async def pe_pod(client: KubeClient, job: str, pe: int, namespace: str = "default") -> dict[str, Any]:
    """The PE's pod, once it has an address."""
    found: list[dict[str, Any]] = []

    async def running() -> bool:
        selector = f"{JOB_LABEL}={job},{PE_LABEL}={pe}"
        pods, _ = await client.list_all(PODS, namespace, label_selector=selector)
        found[:] = [p for p in pods if (p.get("status") or {}).get("podIP")]
        return bool(found)

    await eventually_async(running, within=15)
    return found[0]


@asynccontextmanager
async def as_pe(
    client: KubeClient, job: str, pe: int, namespace: str = "default"
) -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTP session that calls as the PE's pod: presenting a token bound to it, as the
    simulated PE runtime does (its pod's address is not on this host)."""
    token = await PodTokens(client).token(PodRef.of(await pe_pod(client, job, pe, namespace)))
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10), headers=headers) as session:
        yield session
