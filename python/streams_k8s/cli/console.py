"""`streams-k8s console`: the web console against a cluster; and the pieces `run --console-port` uses.

The console reads through informers (`console.live`) and serves the pages (`console.server`).
What it cannot do itself, for the layers' sake, is plan a job: `job_planner` composes the
operator's own bundle fetcher and planning into the `PlanJob` the console asks for graphs. The
bundle is fetched as the operator fetches it (the content the Job's status pins, from the bundle
cache when present): the operator's console shares the operator's cache, so it downloads nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import click

from streams_k8s.app.plan import Plan, plan_at_widths
from streams_k8s.cli.cluster_flags import cluster_flags
from streams_k8s.cli.run import BadUsage, OneLineErrors
from streams_k8s.console.live_flow import FlowSource
from streams_k8s.console.live_plans import PlanJob
from streams_k8s.console.server import ConsoleServer, serve_console
from streams_k8s.console.server_access import AuthMode
from streams_k8s.controller.bundles.fetch import BundleCache, BundleFetcher
from streams_k8s.controller.operator import data_reader
from streams_k8s.controller.planning import plan_job, read_application, validate_job
from streams_k8s.k8s.kinds import CONFIGMAPS, SECRETS
from streams_k8s.k8s.logs import configure_logging
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object
from streams_k8s.k8s.settings import RuntimeSettings

DEFAULT_PORT = 8090
AUTH_MODES = click.Choice([m.value for m in AuthMode])


@contextlib.asynccontextmanager
async def job_planner(manager: Manager, cache_dir: Path) -> AsyncIterator[PlanJob]:
    """The console's `PlanJob`: the operator's fetch (pinned to the status's digest) and planning."""
    async with aiohttp.ClientSession() as session:
        client = manager.client
        fetcher = BundleFetcher(
            BundleCache(cache_dir),
            session,
            read_secret=data_reader(client, SECRETS),
            read_config_map=data_reader(client, CONFIGMAPS),
        )

        async def plan(obj: Object, widths: Mapping[str, int]) -> Plan:
            job = validate_job(obj)
            namespace, status = str(job.metadata.namespace), obj.get("status") or {}
            digest = status.get("bundleDigest")
            if digest:
                fetched = await fetcher.fetch_pinned(namespace, job.spec.bundle, str(digest))
            else:
                fetched = await fetcher.fetch(namespace, job.spec.bundle)

            def build() -> Plan:  # CPU-bound: in a thread, as the operator plans
                app = read_application(str(fetched.path), job.spec.bundle.name)
                nodes = status.get("plannedNodes")
                base = plan_job(job, app, job_id=int(status.get("id") or 0), nodes=nodes)
                return plan_at_widths(base, widths)

            return await asyncio.to_thread(build)

        yield plan


async def start_console(
    manager: Manager,
    stack: contextlib.AsyncExitStack,
    cache_dir: Path,
    *,
    host: str,
    port: int,
    auth: str,
    flow: FlowSource | None = None,
) -> ConsoleServer:
    """Serve the console from ``manager``'s informers until ``stack`` closes (``flow``: the
    operator's reading of its PEs, when served by the operator)."""
    plan = await stack.enter_async_context(job_planner(manager, cache_dir))
    server = await serve_console(manager, plan, host=host, port=port, auth=AuthMode(auth), flow=flow)
    stack.push_async_callback(server.stop)
    return server


async def _serve(settings: RuntimeSettings, port: int, auth: str) -> int:
    manager = Manager(settings)
    client = await manager.connect()
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(client.close)  # run() closes it too; a failed start does not reach it
        cache = stack.enter_context(tempfile.TemporaryDirectory(prefix="streams-console-"))
        server = await start_console(
            manager, stack, Path(cache), host=settings.bind_address, port=port, auth=auth
        )
        click.echo(f"console at http://{settings.bind_address}:{server.port}/jobs (auth: {auth})", err=True)
        return await manager.run()
    raise AssertionError("unreachable")  # pragma: no cover


@click.command("console", cls=OneLineErrors)
@cluster_flags("show only this namespace (default: all namespaces)")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True)
@click.option("--bind-address", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option(
    "--auth",
    type=AUTH_MODES,
    default=AuthMode.NONE.value,
    show_default=True,
    help="none: viewers see what this kubeconfig may read; token: each viewer logs in with a bearer "
    "token and sees the namespaces it may list Jobs in",
)
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]), default="WARNING")
def console(port: int, auth: str, **flags: Any) -> None:
    """Serve the web console (jobs, job graphs, PEs, regions, Events) until interrupted."""
    options = {k: v for k, v in flags.items() if v is not None}
    try:
        settings = RuntimeSettings(
            **options, leader_election=False, health_port=0, metrics_port=0, log_format="text"
        )
    except ValueError as exc:
        raise BadUsage(f"invalid settings: {exc}") from None
    configure_logging(settings.log_level, settings.log_format)
    try:
        code = asyncio.run(_serve(settings, port, auth))
    except OSError as exc:
        raise click.ClickException(f"cannot start the console: {exc}") from None
    raise SystemExit(code)
