"""`canceljob JOB...`: delete Jobs (by name or id), their PE pods' logs saved first if asked.

``--collectlogs DIR`` writes each PE pod's containers' logs to ``DIR/<job>/<pod>.<container>.log``
(and the container's previous instance to ``...previous.log`` when it restarted) before the Job is
deleted: once it goes, its pods and their logs go with it. A log that cannot be read stops the
cancel (the Job is left running) unless ``--force``.
"""

from __future__ import annotations

from pathlib import Path

import click

from streams_k8s.api.contract import SVC_LABEL, SVC_PE
from streams_k8s.cli.streamtool.session import StreamtoolError, api_message, cluster_of, cluster_options, run
from streams_k8s.cli.streamtool.state import job_name_of, read_job
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS
from streams_k8s.k8s.objects import Object, meta


async def pod_log(client: KubeClient, pod: Object, container: str, previous: bool = False) -> bytes:
    namespace, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
    query = {"container": container, **({"previous": "true"} if previous else {})}
    try:
        async with client.stream(
            PODS, PODS.path(namespace, name, "log"), query, connect_timeout=15.0
        ) as answer:
            return await answer.read()
    except ApiError as err:
        raise StreamtoolError(
            f"reading the log of pod {namespace}/{name} ({container}): {api_message(err)}"
        ) from None


async def pod_logs(client: KubeClient, pods: list[Object]) -> dict[str, bytes]:
    """Every container's log of ``pods``, by the file name it is saved as."""
    logs = {}
    for pod in sorted(pods, key=lambda p: str(meta(p).get("name"))):
        restarts = {
            str(c.get("name")): int(c.get("restartCount") or 0)
            for c in (pod.get("status") or {}).get("containerStatuses") or ()
        }
        for container in (pod.get("spec") or {}).get("containers") or ():
            name = str(container["name"])
            for previous in (False, True) if restarts.get(name) else (False,):
                file = f"{meta(pod).get('name')}.{name}{'.previous' if previous else ''}.log"
                logs[file] = await pod_log(client, pod, name, previous)
    return logs


def save(directory: Path, logs: dict[str, bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for file, data in logs.items():
        (directory / file).write_bytes(data)


@click.command("canceljob")
@click.argument("jobs", nargs=-1, required=True, metavar="JOB...")
@cluster_options
@click.option(
    "--collectlogs",
    type=click.Path(file_okay=False, path_type=Path),
    help="Save the PE pods' logs under DIR/<job>/ before the Job is deleted.",
)
@click.option("--force", is_flag=True, help="Delete the Job even when a log could not be saved.")
def canceljob(
    jobs: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    collectlogs: Path | None,
    force: bool,
) -> None:
    """Cancel jobs (by name or id): delete their Jobs, their PE pods' logs saved first if asked."""
    cluster = cluster_of(kubeconfig, context, namespace)

    async def work(client: KubeClient) -> None:
        for ref in jobs:
            name = await job_name_of(client, cluster.namespace, ref)
            if collectlogs is not None:
                objects = await read_job(client, cluster.namespace, name)
                pods = [p for p in objects.pods if (meta(p).get("labels") or {}).get(SVC_LABEL) == SVC_PE]
                try:
                    logs = await pod_logs(client, pods)
                    save(collectlogs / name, logs)
                    click.echo(f"{len(logs)} logs of job {name} saved in {collectlogs / name}", err=True)
                except (StreamtoolError, OSError) as err:
                    if not force:
                        raise StreamtoolError(
                            f"{err} (job {name} left running; --force cancels it)"
                        ) from None
                    click.echo(f"warning: {err}", err=True)
            try:
                await client.delete(JOBS, name, cluster.namespace)
            except ApiError as err:
                what = "does not exist" if err.not_found else api_message(err)
                raise StreamtoolError(f"deleting Job {cluster.namespace}/{name}: {what}") from None
            click.echo(f"streamsjob.streams.ibm.com/{name} deleted")

    run(cluster, work)
