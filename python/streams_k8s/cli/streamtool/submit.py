"""`submitjob BUNDLE|URL`: a Job from a bundle, in one command.

A local ``.sab`` is uploaded to the operator (`operator_link`) and the Job names it by digest
(``bundle.upload.sha256``); an ``http(s)://`` URL becomes the Job's ``bundle.http.url``, fetched by
the operator. Submission-time values come from ``-P name=value`` (repeatable) over the overlay's
(``-g``, Streams' jobConfigOverlays: `app.job_overlays`); the job's name from ``--jobname``, else the
overlay's, else the bundle's file name. ``--preview`` prints the Job it would create and changes
nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import click
from pydantic import ValidationError

from streams_k8s.api.job import MAX_JOB_NAME, Job, job_name_problem
from streams_k8s.app.job_overlays import JobOverlay, OverlayError, read_overlay_file
from streams_k8s.cli.streamtool.operator_link import SERVICE, OperatorAddress, bundle_digest, upload
from streams_k8s.cli.streamtool.session import (
    StreamtoolError,
    api_message,
    cluster_of,
    cluster_options,
    emit,
    fail,
    run,
)
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError

_URL = re.compile(r"^https?://", re.IGNORECASE)


def default_job_name(bundle: str) -> str:
    """A Job name from a bundle's file name: `My_App.sab` -> `my-app`."""
    stem = re.sub(r"[^a-z0-9-]+", "-", Path(bundle).stem.lower()).strip("-")
    stem = re.sub(r"^[^a-z]+", "", stem)[:MAX_JOB_NAME].rstrip("-")
    return stem or "job"


def _bundle(source: str) -> tuple[dict[str, Any], bytes]:
    """The Job's bundle for SOURCE, and the bytes to upload (none for a URL)."""
    if _URL.match(source):
        return {"name": Path(urlparse(source).path).name, "http": {"url": source}}, b""
    data, digest = bundle_digest(Path(source))
    return {"name": Path(source).name, "upload": {"sha256": digest}}, data


def _values(pairs: tuple[str, ...]) -> dict[str, str]:
    values = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise StreamtoolError(f"-P {pair}: a submission-time value is NAME=VALUE")
        values[name] = value
    return values


def job_manifest(
    bundle: dict[str, Any], name: str, namespace: str, overlay: JobOverlay, values: dict[str, str]
) -> dict[str, Any]:
    """The Job: the bundle, the overlay's settings, then the command line's values over them."""
    spec: dict[str, Any] = {"bundle": bundle, **overlay.spec_patch()}
    if submitted := {**overlay.submission_values, **values}:
        spec["submissionTimeValues"] = submitted
    manifest = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if problem := job_name_problem(name):
        raise StreamtoolError(f"job name {problem} (--jobname chooses another)")
    try:
        Job.model_validate(manifest)
    except ValidationError as err:
        first = err.errors()[0]
        raise StreamtoolError(
            f"the Job would be invalid: {'.'.join(map(str, first['loc']))}: {first['msg']}"
        ) from None
    return manifest


@click.command("submitjob")
@click.argument("source")
@cluster_options
@click.option("-P", "--P", "values", multiple=True, metavar="NAME=VALUE", help="Submission-time value.")
@click.option(
    "-g",
    "--jobConfig",
    "overlay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Job configuration overlay file (Streams jobConfigOverlays JSON).",
)
@click.option("-J", "--jobname", help="The Job's name [the overlay's, else the bundle's file name].")
@click.option("--preview", is_flag=True, help="Print the Job it would create; upload and create nothing.")
@click.option("--operator-namespace", help="Namespace of the operator the bundle is uploaded to [the job's].")
@click.option(
    "--operator-service",
    default=SERVICE,
    show_default=True,
    help="The operator's Service and port (NAME:PORT), reached through the API server's proxy.",
)
@click.option(
    "--operator-url",
    envvar="STREAMS_K8S_OPERATOR_URL",
    help="The operator's REST API, called directly (after kubectl port-forward) [through the API server].",
)
@click.option("-o", "--output", type=click.Choice(["yaml", "json", "name"]), help="How to print the Job.")
def submitjob(
    source: str,
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    values: tuple[str, ...],
    overlay: Path | None,
    jobname: str | None,
    preview: bool,
    operator_namespace: str | None,
    operator_service: str,
    operator_url: str | None,
    output: str | None,
) -> None:
    """Submit a bundle (a local .sab, uploaded, or an http(s) URL) as a Job."""
    cluster = cluster_of(kubeconfig, context, namespace)
    try:
        given = read_overlay_file(overlay) if overlay else JobOverlay()
        bundle, data = _bundle(source)
        name = jobname or given.job_name or default_job_name(bundle["name"])
        manifest = job_manifest(bundle, name, cluster.namespace, given, _values(values))
    except (OverlayError, StreamtoolError) as err:
        fail(str(err))
    if preview:
        emit(manifest, output if output in ("json", "yaml") else "yaml")
        return

    async def work(client: KubeClient) -> None:
        if data:
            digest = bundle["upload"]["sha256"]
            where = OperatorAddress(operator_namespace or cluster.namespace, operator_service, operator_url)
            sent = await upload(cluster, where, bundle["name"], data, digest)
            click.echo(
                f"bundle {sent.name} uploaded (sha256:{sent.sha256[:12]}, {sent.size} bytes)", err=True
            )
        try:
            await client.create(JOBS, manifest, cluster.namespace)
        except ApiError as err:
            if err.already_exists:
                raise StreamtoolError(
                    f"Job {cluster.namespace}/{name} already exists (--jobname names another)"
                ) from None
            raise StreamtoolError(f"creating Job {cluster.namespace}/{name}: {api_message(err)}") from None

    run(cluster, work)
    click.echo(f"streamsjob.streams.ibm.com/{name}" + ("" if output == "name" else " created"))
