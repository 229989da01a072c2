"""Jobs, PEs, PE ConfigMaps and host pools written straight into the sandbox, as the job
controller would, so the PE controller can be tested on its own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from k8s_support import sandbox_runtime
from streams_k8s.api.contract import (
    AADL_KEY,
    APP_LABEL,
    APP_VALUE,
    CONTENT_ID_ANNOTATION,
    GENERATION_LABEL,
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
)
from streams_k8s.api.job import Job
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.controller.pes.controller import PeController
from streams_k8s.controller.placement.nodes import NodePlacementController
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox

NS = "default"
AUG = "http://www.ibm.com/xmlns/prod/streams/application/augmented"


def aadl(pe_id: int, *, inputs: int = 1) -> str:
    ports = "".join(f'<inputPort id="{i}" index="{i}" peId="{pe_id}"/>' for i in range(inputs))
    return (
        f'<augmentedPE xmlns="{AUG}" id="{pe_id}" restartable="true">'
        f"<inputPorts>{ports}</inputPorts><outputPorts/></augmentedPE>"
    )


def owner(job: Object) -> dict[str, Any]:
    return Job.from_wire(job).as_owner()


async def create_job(client: KubeClient, name: str = "app", **spec: Any) -> Object:
    body = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"bundle": {"name": "app.sab"}, **spec},
    }
    return await client.create(JOBS, body)


async def create_pe(
    client: KubeClient, job: Object, pe_id: int, *, content: str = "c1", **spec: Any
) -> Object:
    job_name = job["metadata"]["name"]
    body = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "ProcessingElement",
        "metadata": {
            "name": f"{job_name}-{pe_id}",
            "namespace": NS,
            "labels": {APP_LABEL: APP_VALUE, JOB_LABEL: job_name, GENERATION_LABEL: "1"},
            "ownerReferences": [owner(job)],
        },
        "spec": {"id": pe_id, "contentId": content, "inputPorts": 1, **spec},
    }
    return await client.create(PES, body)


async def create_pe_config_map(client: KubeClient, job: Object, pe_id: int, *, content: str = "c1") -> Object:
    job_name = job["metadata"]["name"]
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{job_name}-{pe_id}",
            "namespace": NS,
            "labels": {APP_LABEL: APP_VALUE, SVC_LABEL: "pe", JOB_LABEL: job_name},
            "annotations": {CONTENT_ID_ANNOTATION: content},
            "ownerReferences": [owner(job)],
        },
        "data": {AADL_KEY: aadl(pe_id)},
    }
    return await client.create(CONFIGMAPS, body)


async def create_host_pool(client: KubeClient, job: Object, index: int, **pool: Any) -> Object:
    job_name = job["metadata"]["name"]
    body = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "HostPool",
        "metadata": {
            "name": f"{job_name}-{index}",
            "namespace": NS,
            "labels": {APP_LABEL: APP_VALUE, JOB_LABEL: job_name},
            "ownerReferences": [owner(job)],
        },
        "spec": {"name": f"pool{index}", "index": index, **pool},
    }
    return await client.create(HOSTPOOLS, body)


async def pods_of(client: KubeClient, job: str, pe_id: int, svc: str = "pe") -> list[Object]:
    selector = f"{JOB_LABEL}={job},{PE_LABEL}={pe_id},{SVC_LABEL}={svc}"
    items, _ = await client.list_all(PODS, NS, label_selector=selector)
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def pe_status(client: KubeClient, name: str) -> dict[str, Any]:
    return dict((await client.get(PES, name, NS)).get("status") or {})


def settings(sandbox: Sandbox) -> RuntimeSettings:
    return sandbox_runtime(sandbox, namespace=NS, identity="pe-test", shutdown_grace=2.0)


@asynccontextmanager
async def running_pe_controllers(sandbox: Sandbox) -> AsyncIterator[Manager]:
    """A Manager running the PE and node-placement controllers against ``sandbox``."""
    manager = Manager(settings(sandbox))
    await manager.connect()
    PeController(manager)
    NodePlacementController(manager)
    task = asyncio.create_task(manager.run(handle_signals=False))
    try:
        yield manager
    finally:
        manager.stop()
        assert await asyncio.wait_for(task, 10) == 0
