"""`streams-k8s sandbox`: run the embedded Kubernetes API and simulated cluster standalone.

The sandbox's own dependencies come with the package's `sandbox` extra, so they are imported only
when the command runs: the operator, the coordinator and the other commands never load them.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click
import yaml
from click.core import ParameterSource

from streams_k8s.cli.run import BadUsage
from streams_k8s.k8s.settings import RuntimeSettings

if TYPE_CHECKING:
    from streams_k8s.sandbox.sandbox import Sandbox

LOOPBACK = "127.0.0.1"
# Where the simulated PEs report connectivity unless told otherwise: `streams-k8s run`'s REST API
# with its defaults, seen from this machine.
DEFAULT_CONTROLLER_URL = f"http://{LOOPBACK}:{RuntimeSettings.model_fields['api_port'].default}"


@contextlib.contextmanager
def sandbox_extra() -> Iterator[None]:
    """Around the sandbox's imports: a dependency of the `sandbox` extra that is not installed
    becomes one line that says what to install."""
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing == "streams_k8s":
            raise
        raise click.ClickException(
            f"the sandbox needs the package's 'sandbox' extra (module {missing!r} is missing): "
            "pip install 'streams-k8s[sandbox]'"
        ) from None


def parse_nodes(value: str) -> int | Path:
    if value.isdigit():
        return int(value)
    path = Path(value)
    if not path.is_file():
        raise click.ClickException(f"--nodes: {value!r} is neither a node count nor a readable YAML file")
    return path


def parse_zones(value: str | None) -> list[str] | None:
    return None if value is None else [z.strip() for z in value.split(",") if z.strip()]


def _demo(
    kubeconfig: Path,
    keep: bool,
    host: str,
    port: int,
    nodes: int | Path,
    zones: str | None,
    tls: bool,
    token: str | None,
) -> None:
    with sandbox_extra():
        from streams_k8s.cli.sandbox_demo import run_demo
    running = run_demo(
        kubeconfig=kubeconfig,
        keep=keep,
        host=host,
        port=port,
        nodes=nodes,
        zones=parse_zones(zones),
        tls=tls,
        token=token,
    )
    try:
        reached = asyncio.run(running)
    finally:  # it pointed at a server that has stopped: left behind, it would only mislead kubectl
        kubeconfig.unlink(missing_ok=True)
    if not reached:
        raise click.ClickException("the demo job did not reach Running")


def _run_command(kubeconfig: Path, controller_url: str) -> str:
    """The `streams-k8s run` command whose REST API is at ``controller_url``: what the simulated
    PEs of this sandbox report to."""
    url = urlsplit(controller_url)
    command = f"streams-k8s run --kubeconfig {shlex.quote(str(kubeconfig))}"
    if url.hostname in (LOOPBACK, "localhost"):
        command += f" --bind-address {LOOPBACK}"
    with contextlib.suppress(ValueError):  # a URL template (`{namespace}`) names no fixed port
        if url.port is not None:
            command += f" --api-port {url.port}"
    return command


@click.command("sandbox")
@click.option(
    "--nodes", "nodes_arg", default="3", show_default=True, help="Node count, or a YAML file of nodes."
)
@click.option(
    "--zones",
    help="Comma-separated zones the nodes are spread over (round robin) [none; with --demo: zone-a,zone-b].",
)
@click.option("--host", default=LOOPBACK, show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port (default: a free one).")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("streams-sandbox.kubeconfig"),
    show_default=True,
    help="Where to write the kubeconfig for kubectl and clients (with --demo: removed when the demo ends).",
)
@click.option(
    "--crds",
    "crd_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of CRD YAML files to install (repeatable; default: the project's own CRDs).",
)
@click.option(
    "--tls", is_flag=True, help="Serve HTTPS with a self-signed certificate (trusted by the kubeconfig)."
)
@click.option("--token", help="Require this bearer token from clients (written into the kubeconfig).")
@click.option(
    "--controller-url",
    default=DEFAULT_CONTROLLER_URL,
    show_default=True,
    help="Base URL of the controller REST API the simulated PEs report to: `streams-k8s run`'s "
    "--api-port on this machine by default.",
)
@click.option(
    "--consistent-region-url",
    help="Base URL of the consistent-region API the simulated PEs poll and answer ({job}, {namespace}) "
    "[the job's coordinator Service, whose pod runs the coordinator]",
)
@click.option("--no-cluster", is_flag=True, help="Serve the API only: no nodes, scheduler or kubelet.")
@click.option("--duration", type=float, help="Stop after this many seconds (default: run until interrupted).")
@click.option(
    "--demo",
    is_flag=True,
    help="Run the instance operator too, submit a generated application, exit 0 once it is Running.",
)
@click.option("--keep", is_flag=True, help="With --demo: keep the sandbox up for kubectl until Ctrl-C.")
@click.pass_context
def sandbox(
    ctx: click.Context,
    nodes_arg: str,
    zones: str | None,
    host: str,
    port: int,
    kubeconfig: Path,
    crd_dirs: tuple[Path, ...],
    tls: bool,
    token: str | None,
    controller_url: str,
    consistent_region_url: str | None,
    no_cluster: bool,
    duration: float | None,
    demo: bool,
    keep: bool,
) -> None:
    """Run an embedded Kubernetes API server with simulated nodes, kubelet and PE runtime.

    It prints the `streams-k8s run` command that runs the instance operator against it (in
    another shell): the simulated PEs report their connectivity to that operator's REST API.
    """
    if demo:
        # The demo runs its own operator and lives as long as its job (or until Ctrl-C with --keep).
        given = [
            flag
            for flag, param in (
                ("--crds", "crd_dirs"),
                ("--controller-url", "controller_url"),
                ("--consistent-region-url", "consistent_region_url"),
                ("--no-cluster", "no_cluster"),
                ("--duration", "duration"),
            )
            if ctx.get_parameter_source(param) is not ParameterSource.DEFAULT
        ]
        if given:
            raise BadUsage(f"{', '.join(given)} cannot be used with --demo (it runs its own operator)")
    elif keep:
        raise BadUsage("--keep needs --demo")
    nodes = parse_nodes(nodes_arg)
    with sandbox_extra():
        from streams_k8s.sandbox.errors import ApiError
    try:
        if demo:
            _demo(kubeconfig.resolve(), keep, host, port, nodes, zones, tls, token)
            return
        with sandbox_extra():
            from streams_k8s.sandbox.cluster.consistent_region import COORDINATOR_URL
            from streams_k8s.sandbox.sandbox import Sandbox
        sb = Sandbox(
            host=host,
            port=port,
            token=token,
            tls=tls,
            crd_dirs=list(crd_dirs) if crd_dirs else None,
            kubeconfig_path=kubeconfig.resolve(),
            simulate=not no_cluster,
            nodes=nodes,
            zones=parse_zones(zones) or [],
            controller_url=controller_url,
            consistent_region_url=consistent_region_url or COORDINATOR_URL,
        )
        asyncio.run(_serve(sb, controller_url, duration))
    except (OSError, ValueError, RuntimeError, yaml.YAMLError, ApiError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None


async def _serve(sb: Sandbox, controller_url: str, duration: float | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with sb:
        if sb.simulation is not None:  # the coordinator pods of `default` get their accounts
            from streams_k8s.cli.coordinator_accounts import set_up_coordinators
            from streams_k8s.k8s.client import KubeClient

            async with await KubeClient.connect(str(sb.kubeconfig_path)) as client:
                await set_up_coordinators(client, "default")
        click.echo(f"sandbox API server at {sb.url}")
        click.echo(f"export KUBECONFIG={sb.kubeconfig_path}")
        if sb.pe_runtime is not None:
            click.echo(f"simulated PEs report to {controller_url}; run the operator there with:")
            click.echo(f"  {_run_command(sb.kubeconfig_path, controller_url)}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), duration)
