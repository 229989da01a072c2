"""`updateoperators JOB --parallelRegionWidth ALIAS=N`: a parallel region's width, as `kubectl scale`.

The region is the job's ParallelRegion whose ``spec.alias`` is ALIAS (its name is made of the
alias, so the alias is what the user knows); the width is written through its ``/scale``
subresource, the path `kubectl scale stpr/<name> --replicas=N` takes (and an autoscaler), so the
same admission and RBAC (``patch`` on ``streamsprs/scale``) apply.
"""

from __future__ import annotations

import click

from streams_k8s.api.spec_values import MAX_WIDTH
from streams_k8s.cli.streamtool.session import StreamtoolError, api_message, cluster_of, cluster_options, run
from streams_k8s.cli.streamtool.state import job_name_of, read_job
from streams_k8s.controller.kinds import PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.objects import meta


def _widths(pairs: tuple[str, ...]) -> dict[str, int]:
    widths = {}
    for pair in pairs:
        alias, sep, width = pair.rpartition("=")
        if not sep or not alias or not width.isdecimal() or not 1 <= int(width) <= MAX_WIDTH:
            raise StreamtoolError(f"--parallelRegionWidth {pair}: ALIAS=N with N from 1 to {MAX_WIDTH}")
        widths[alias] = int(width)
    return widths


@click.command("updateoperators")
@click.argument("job")
@cluster_options
@click.option(
    "--parallelRegionWidth",
    "widths",
    multiple=True,
    required=True,
    metavar="ALIAS=N",
    help="The parallel region's new width (its alias, as the job's ParallelRegions say).",
)
def updateoperators(
    job: str, kubeconfig: str | None, context: str | None, namespace: str | None, widths: tuple[str, ...]
) -> None:
    """Change the width of a job's parallel regions (through their /scale, as kubectl scale)."""
    cluster = cluster_of(kubeconfig, context, namespace)

    async def work(client: KubeClient) -> None:
        wanted = _widths(widths)
        name = await job_name_of(client, cluster.namespace, job)
        regions = {
            str((r.get("spec") or {}).get("alias")): r
            for r in (await read_job(client, cluster.namespace, name)).parallel_regions
        }
        for alias in wanted:
            if alias not in regions:
                known = ", ".join(sorted(regions)) or "none"
                raise StreamtoolError(f"job {name} has no parallel region '{alias}' (its regions: {known})")
        for alias, width in wanted.items():
            region = str(meta(regions[alias]).get("name"))
            try:
                await client.scale(PARALLEL_REGIONS, region, width, cluster.namespace)
            except ApiError as err:
                raise StreamtoolError(f"scaling {alias} of job {name}: {api_message(err)}") from None
            click.echo(f"streamsparallelregion.streams.ibm.com/{region} scaled ({alias}: width {width})")

    run(cluster, work)
