"""`streams-k8s sandbox`: run the embedded Kubernetes API and simulated cluster standalone."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import click
import yaml

from streams_k8s.sandbox import ApiError, Sandbox


def _nodes(value: str) -> int | Path:
    if value.isdigit():
        return int(value)
    path = Path(value)
    if not path.is_file():
        raise click.ClickException(f"--nodes: {value!r} is neither a node count nor a readable YAML file")
    return path


@click.command("sandbox")
@click.option(
    "--nodes", "nodes_arg", default="3", show_default=True, help="Node count, or a YAML file of nodes."
)
@click.option("--zones", default="", help="Comma-separated zones the nodes are spread over (round robin).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port (default: a free one).")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("streams-sandbox.kubeconfig"),
    show_default=True,
    help="Where to write the kubeconfig for kubectl and clients.",
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
@click.option("--controller-url", help="Base URL of the controller REST API the simulated PEs report to.")
@click.option(
    "--consistent-region-url",
    help="Base URL of the consistent-region API the simulated PEs poll and answer ({job}, {namespace}).",
)
@click.option("--no-cluster", is_flag=True, help="Serve the API only: no nodes, scheduler or kubelet.")
@click.option("--duration", type=float, help="Stop after this many seconds (default: run until interrupted).")
@click.option(
    "--demo",
    is_flag=True,
    help="Run the instance operator, submit a generated application, exit 0 once it is Running.",
)
@click.option("--keep", is_flag=True, help="With --demo: keep the sandbox up for kubectl until Ctrl-C.")
def sandbox(
    nodes_arg: str,
    zones: str,
    host: str,
    port: int,
    kubeconfig: Path,
    crd_dirs: tuple[Path, ...],
    tls: bool,
    token: str | None,
    controller_url: str | None,
    consistent_region_url: str | None,
    no_cluster: bool,
    duration: float | None,
    demo: bool,
    keep: bool,
) -> None:
    """Run an embedded Kubernetes API server with simulated nodes, kubelet and PE runtime."""
    if demo:
        from streams_k8s.cli.sandbox_demo import run_demo  # the operator's imports only when asked

        if not asyncio.run(run_demo(kubeconfig=kubeconfig.resolve(), keep=keep)):
            raise click.ClickException("the demo job did not reach Running")
        return
    nodes = _nodes(nodes_arg)
    try:
        sb = Sandbox(
            host=host,
            port=port,
            token=token,
            tls=tls,
            crd_dirs=list(crd_dirs) if crd_dirs else None,
            kubeconfig_path=kubeconfig.resolve(),
            simulate=not no_cluster,
            nodes=nodes,
            zones=[z.strip() for z in zones.split(",") if z.strip()],
            controller_url=controller_url,
            consistent_region_url=consistent_region_url,
        )
        asyncio.run(_serve(sb, duration))
    except (OSError, ValueError, RuntimeError, yaml.YAMLError, ApiError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None


async def _serve(sb: Sandbox, duration: float | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with sb:
        click.echo(f"sandbox API server at {sb.url}")
        click.echo(f"export KUBECONFIG={sb.kubeconfig_path}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), duration)
