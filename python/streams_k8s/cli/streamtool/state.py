"""A job's objects as the verbs read them: the Job and, by its label, its PEs, regions and pods."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.cli.streamtool.session import StreamtoolError, api_message
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object, meta


@dataclass(frozen=True, slots=True)
class JobObjects:
    job: Object
    pes: list[Object]
    parallel_regions: list[Object]
    consistent_regions: list[Object]
    pods: list[Object]


def pe_id(pe: Object) -> int:
    return int((pe.get("spec") or {}).get("id", -1))


async def read_job(client: KubeClient, namespace: str, name: str) -> JobObjects:
    """Job ``namespace/name`` and everything labelled as its own."""
    job = await _get_job(client, namespace, name)
    selector = f"{JOB_LABEL}={name}"

    async def listed(resource: Resource) -> list[Object]:
        try:
            return (await client.list_all(resource, namespace, label_selector=selector))[0]
        except ApiError as err:
            raise StreamtoolError(
                f"listing the {resource.plural} of Job {namespace}/{name}: {api_message(err)}"
            ) from None

    pes = sorted(await listed(PES), key=pe_id)
    return JobObjects(
        job, pes, await listed(PARALLEL_REGIONS), await listed(CONSISTENT_REGIONS), await listed(PODS)
    )


async def read_jobs(client: KubeClient, namespace: str) -> list[tuple[Object, list[Object]]]:
    """Every Job of the namespace (by name) with its PEs (by id)."""
    try:
        jobs, _ = await client.list_all(JOBS, namespace)
        pes, _ = await client.list_all(PES, namespace)
    except ApiError as err:
        raise StreamtoolError(f"listing the jobs of namespace {namespace}: {api_message(err)}") from None
    by_job: dict[str, list[Object]] = defaultdict(list)
    for pe in pes:
        by_job[str((meta(pe).get("labels") or {}).get(JOB_LABEL, ""))].append(pe)
    ordered = sorted(jobs, key=lambda j: str(meta(j).get("name")))
    return [(job, sorted(by_job[str(meta(job).get("name"))], key=pe_id)) for job in ordered]


async def _get_job(client: KubeClient, namespace: str, name: str) -> Object:
    try:
        return await client.get(JOBS, name, namespace)
    except ApiError as err:
        if err.not_found:
            raise StreamtoolError(f"Job {namespace}/{name} does not exist") from None
        raise StreamtoolError(f"reading Job {namespace}/{name}: {api_message(err)}") from None


async def job_name_of(client: KubeClient, namespace: str, ref: str) -> str:
    """A job given as streamtool gives it, by name or by numeric id (`status.id`), as its name."""
    if not ref.isdecimal():
        return ref
    try:
        jobs, _ = await client.list_all(JOBS, namespace)
    except ApiError as err:
        raise StreamtoolError(f"listing the jobs of namespace {namespace}: {api_message(err)}") from None
    found = [j for j in jobs if (j.get("status") or {}).get("id") == int(ref)]
    if not found:
        raise StreamtoolError(f"no job of namespace {namespace} has id {ref}")
    return str(meta(found[0]).get("name"))
