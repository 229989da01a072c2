"""`streams-k8s resolve`: resolve a label the way a PE would, from a name table file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import click
import orjson

from streams_k8s.api.contract import INSTANCE_API_PORT, JOB_CONFIG_DIR, NAME_TABLE_KEY
from streams_k8s.naming.resolver import (
    NameNotFound,
    Resolution,
    Resolver,
    fixed_job_name,
    rest_job_name_lookup,
)


async def _resolve(
    label: str, table: Path, namespace: str, job_name: str | None, api: str | None, addresses: bool
) -> Resolution:
    async with aiohttp.ClientSession() as session:
        lookup = fixed_job_name(job_name) if job_name else rest_job_name_lookup(str(api), session)
        resolver = Resolver(
            table_path=table, namespace=namespace, job_name=lookup, resolve_addresses=addresses
        )
        return await resolver.resolve(label)


@click.command()
@click.argument("label")
@click.option(
    "--table",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(JOB_CONFIG_DIR) / NAME_TABLE_KEY,
    show_default=True,
    help=f"The job's name table ({NAME_TABLE_KEY}).",
)
@click.option("--namespace", "-n", default="default", show_default=True, envvar="STREAMS_INSTANCE_ID")
@click.option("--job-name", help="Name of the job the label belongs to (else asked of --api).")
@click.option(
    "--api",
    default=None,
    help=f"Instance REST API that maps job ids to names, e.g. http://streams-api.ns:{INSTANCE_API_PORT}.",
)
@click.option(
    "--addresses/--no-addresses", default=False, help="Also resolve the Service name to an IPv4 address."
)
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
def resolve(
    label: str,
    table: Path,
    namespace: str,
    job_name: str | None,
    api: str | None,
    addresses: bool,
    output: str,
) -> None:
    """Resolve LABEL: an operator port label J.O.P or a PE port label E.I@J."""
    if job_name is None and api is None:
        raise click.UsageError("give --job-name or --api to turn job ids into Service names")
    try:
        result = asyncio.run(_resolve(label, table, namespace, job_name, api, addresses))
    except NameNotFound as err:
        raise click.ClickException(str(err)) from err
    endpoint = result.endpoint
    if output == "json":
        document = {
            "label": result.label,
            "operatorPort": str(result.operator_port) if result.operator_port else None,
            "pePort": str(endpoint.pe_port),
            "host": endpoint.host,
            "port": endpoint.port,
            "address": endpoint.address,
        }
        click.echo(orjson.dumps(document).decode())
        return
    steps = [f"operator port {result.operator_port}"] if result.operator_port else []
    steps += [
        f"PE port {endpoint.pe_port}",
        str(endpoint) if endpoint.address else f"{endpoint.host}:{endpoint.port}",
    ]
    click.echo(" -> ".join(steps))
