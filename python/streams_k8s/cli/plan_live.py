"""`streams-k8s plan NEW --against stj/NAME`: an edit previewed against the Job as it runs.

The preview takes the job controller's own inputs from the cluster (through a kubeconfig): the
applied spec (``status.appliedSpec``) and the bundle content it runs (``status.bundleDigest``,
fetched from the spec's source as the operator fetches it, into a throwaway cache), the job id and
planned node count from its status, the PE ids of its PE objects (which earlier edits gave them)
and the widths its ParallelRegions run at (a resized job). The edit is the Job manifest NEW (its
spec applied to the live Job) or a bundle NEW (the applied spec with that bundle). Both go through
`jobs.upgrade_diff.preview`, the planning and diff the job controller applies.

The only form of ``plan`` that loads the cluster client (``plan`` imports this module on demand).
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import click
import yaml
from kubernetes_asyncio.config import ConfigException

from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.api.job import Bundle, FileSource, Job
from streams_k8s.controller.bundles.fetch import BundleCache, BundleError, BundleFetcher, FetchedBundle
from streams_k8s.controller.jobs.caches import pe_ids
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import applied_job
from streams_k8s.controller.jobs.upgrade_diff import UpgradeDiff, preview
from streams_k8s.controller.jobs.widths import widths_of
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS, PES
from streams_k8s.controller.operator import data_reader
from streams_k8s.controller.planning import read_application
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, SECRETS
from streams_k8s.k8s.objects import Object

# A CLI waits for one answer, not for a server that may come back: one retry, short timeouts.
_CLIENT_OPTIONS = {"max_retries": 1, "request_timeout": 15.0}


class LiveJobError(Exception):
    """Why the live Job cannot be compared against (one line for the CLI)."""


@dataclass(frozen=True, slots=True)
class LiveJob:
    obj: Object
    pes: list[Object]
    regions: list[Object]


async def _read(client: KubeClient, name: str, namespace: str) -> LiveJob:
    where = f"Job {namespace}/{name}"
    try:
        obj = await client.get(JOBS, name, namespace)
        selector = f"{JOB_LABEL}={name}"
        pes, _ = await client.list_all(PES, namespace, label_selector=selector)
        regions, _ = await client.list_all(PARALLEL_REGIONS, namespace, label_selector=selector)
    except ApiError as err:
        if err.not_found:
            raise LiveJobError(f"{where} does not exist") from None
        if err.status in (401, 403):
            raise LiveJobError(f"no access to {where}: {err}") from None
        if err.status == 0:
            raise LiveJobError(f"cannot reach the API server: {err.message}") from None
        raise LiveJobError(f"reading {where}: {err}") from None
    return LiveJob(obj, pes, regions)


def _edited(live: Job, source: Path) -> Job:
    """The edit ``source`` makes to the ``live`` Job: a manifest's spec, or the live spec running
    the bundle ``source``. A relative bundle file path is the manifest's directory's."""
    if source.suffix == ".sab":
        bundle = Bundle(name=source.name, file=FileSource(path=str(source.resolve())))
        return live.model_copy(update={"spec": live.spec.model_copy(update={"bundle": bundle})})
    spec = Job.model_validate(yaml.safe_load(source.read_text())).spec
    if spec.bundle.file is not None and not Path(spec.bundle.file.path).is_absolute():
        path = str(source.parent.resolve() / spec.bundle.file.path)
        spec = spec.model_copy(
            update={"bundle": spec.bundle.model_copy(update={"file": FileSource(path=path)})}
        )
    return live.model_copy(update={"spec": spec})


async def _fetch(fetcher: BundleFetcher, namespace: str, bundle: Bundle, digest: str | None) -> FetchedBundle:
    try:
        if digest is not None:
            return await fetcher.fetch_pinned(namespace, bundle, digest)
        return await fetcher.fetch(namespace, bundle)
    except BundleError as err:
        raise LiveJobError(f"bundle {bundle.name}: {err}") from None


async def _preview(client: KubeClient, source: Path, name: str, namespace: str) -> UpgradeDiff:
    live = await _read(client, name, namespace)
    status = JobStatusView.of(live.obj)
    if status.id is None or status.bundle_digest is None or status.applied_spec is None:
        phase = status.phase.value if status.phase else "not yet reconciled"
        raise LiveJobError(
            f"Job {namespace}/{name} runs nothing yet (phase {phase}): nothing to compare with"
        )
    running = applied_job(live.obj, status)
    if status.upgrade is not None:  # the controller applies the next edit once this one runs
        click.echo(
            f"notice: generation {status.upgrade.target_generation} is being applied; this compares with "
            f"generation {status.applied_generation}, which runs now",
            err=True,
        )
    edited = _edited(running, source)
    with tempfile.TemporaryDirectory(prefix="streams-plan-") as cache:
        async with aiohttp.ClientSession() as session:
            fetcher = BundleFetcher(
                BundleCache(Path(cache)),
                session,
                read_secret=data_reader(client, SECRETS),
                read_config_map=data_reader(client, CONFIGMAPS),
                attempts=1,
            )
            old = await _fetch(fetcher, namespace, running.spec.bundle, status.bundle_digest)
            # as the job controller fetches an edit's bundle: the content it runs when unchanged
            same = edited.spec.bundle == running.spec.bundle
            new = await _fetch(fetcher, namespace, edited.spec.bundle, status.bundle_digest if same else None)

            def diff() -> UpgradeDiff:  # CPU-bound, as the job controller plans
                _, changes = preview(
                    running,
                    read_application(str(old.path), running.spec.bundle.name),
                    edited,
                    read_application(str(new.path), edited.spec.bundle.name),
                    job_id=status.id or 0,
                    nodes=status.planned_nodes,
                    ids_from=pe_ids(live.pes, str(live.obj["metadata"]["uid"])),
                    runs_at={alias: w for alias, w in widths_of(live.regions)[1].items() if w},
                )
                return changes

            return await asyncio.to_thread(diff)


def live_preview(
    source: Path, name: str, *, namespace: str, kubeconfig: str | None, context: str | None
) -> UpgradeDiff:
    """What applying ``source`` to the live Job ``namespace/name`` does (see the module docs).
    Raises `LiveJobError` for the cluster's side, and what the offline forms raise for NEW's."""

    if kubeconfig is not None and not Path(kubeconfig).is_file():
        raise LiveJobError(f"cannot load the kubeconfig: {kubeconfig} is not a file")

    async def run() -> UpgradeDiff:
        try:
            client = await KubeClient.connect(kubeconfig, context, **_CLIENT_OPTIONS)
        except (ConfigException, OSError) as err:
            raise LiveJobError(f"cannot load the kubeconfig: {err}") from None
        async with client:
            try:
                return await _preview(client, source, name, namespace)
            except ApiError as err:  # a Secret or ConfigMap the bundle's source names
                raise LiveJobError(f"reading what Job {namespace}/{name}'s bundle needs: {err}") from None

    return asyncio.run(run())
