"""`streams-k8s simulate`: simulated Streams nodes (kubelet and PE runtime) added to any cluster the
kubeconfig reaches (kind, k3d, a dev cluster, a control plane on loopback), until interrupted.

The simulation is a client of that cluster's API server: it registers its nodes (with heartbeat
Leases), runs the pods the cluster's scheduler binds to them (pod addresses from each node's
podCIDR), runs the consistent-region coordinator pods as `streams-k8s coordinator` processes, and
its simulated PEs report connectivity to ``--controller-url`` as the Streams runtime would. On exit
the nodes are deleted (the cluster's pod garbage collector then deletes their pods), unless
``--keep-nodes``. Needs the package's ``sandbox`` extra, as the sandbox does.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click
from kubernetes_asyncio.client import Configuration

from streams_k8s.cli.cluster_flags import kubeconfig_option
from streams_k8s.cli.run import BadUsage, OneLineErrors
from streams_k8s.cli.sandbox import DEFAULT_CONTROLLER_URL, parse_nodes, parse_zones, sandbox_extra
from streams_k8s.k8s.client import KubeClient, load_configuration

if TYPE_CHECKING:  # the sandbox extra's modules are imported when the command runs
    from streams_k8s.sandbox.cluster.container_logs import ContainerLog
    from streams_k8s.sandbox.cluster.simulation import SimulationOptions

NODE_PREFIX = "streams-sim-"


@click.command("simulate", cls=OneLineErrors)
@kubeconfig_option
@click.option("--context", help="kubeconfig context")
@click.option(
    "--nodes", "nodes_arg", default="3", show_default=True, help="Node count, or a YAML file of nodes."
)
@click.option("--zones", help="Comma-separated zones the nodes are spread over (round robin).")
@click.option(
    "--node-prefix",
    default=NODE_PREFIX,
    show_default=True,
    help="Names of counted nodes: PREFIX0, PREFIX1, ...",
)
@click.option(
    "--controller-url",
    default=DEFAULT_CONTROLLER_URL,
    show_default=True,
    help="Base URL of the controller REST API the simulated PEs report to ({namespace} allowed).",
)
@click.option(
    "--consistent-region-url",
    help="Base URL the simulated PEs poll for consistent-region notifications ({job}, {namespace}) "
    "[the job's coordinator Service]",
)
@click.option("--start-delay", type=click.FloatRange(min=0), default=0.0, help="Seconds before a pod runs.")
@click.option(
    "--termination-delay",
    type=click.FloatRange(min=0),
    default=0.0,
    help="Seconds a deleted pod's simulated containers take to stop.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the containers' output here (<pod uid>/<container>.log) [not kept]",
)
@click.option("--keep-nodes", is_flag=True, help="Leave the nodes registered on exit.")
@click.option("--duration", type=float, help="Stop after this many seconds (default: run until interrupted).")
def simulate(
    kubeconfig: str | None,
    context: str | None,
    nodes_arg: str,
    zones: str | None,
    node_prefix: str,
    controller_url: str,
    consistent_region_url: str | None,
    start_delay: float,
    termination_delay: float,
    log_dir: Path | None,
    keep_nodes: bool,
    duration: float | None,
) -> None:
    """Add simulated Streams nodes (kubelet and PE runtime) to a cluster until interrupted."""
    nodes = parse_nodes(nodes_arg)
    with sandbox_extra():
        from streams_k8s.sandbox.cluster.container_logs import LogDirectory, NoLogs
        from streams_k8s.sandbox.cluster.nodes import load_nodes, make_nodes
        from streams_k8s.sandbox.cluster.simulation import SimulationOptions

    zone_list = parse_zones(zones) or []
    try:
        if isinstance(nodes, int):
            specs = make_nodes(nodes, zone_list, node_prefix)
        else:
            specs = load_nodes(nodes, zone_list)
    except (OSError, ValueError) as exc:
        raise BadUsage(f"--nodes: {exc}") from None
    options = SimulationOptions(
        specs,
        start_delay=start_delay,
        termination_delay=termination_delay,
        controller_url=controller_url,
    )
    if consistent_region_url is not None:
        options.consistent_region_url = consistent_region_url
    logs = LogDirectory(log_dir) if log_dir is not None else NoLogs()
    try:
        asyncio.run(_run(kubeconfig, context, options, logs, keep_nodes, duration))
    except Exception as exc:
        why = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise click.ClickException(f"simulation failed: {why}") from None


async def _run(
    kubeconfig: str | None,
    context: str | None,
    options: SimulationOptions,
    logs: ContainerLog,
    keep_nodes: bool,
    duration: float | None,
) -> None:
    from streams_k8s.sandbox.cluster.pod_processes import ApiServerAccess
    from streams_k8s.sandbox.cluster.simulation import (
        CLIENT_BURST,
        CLIENT_CONCURRENCY,
        CLIENT_QPS,
        Simulation,
    )

    async def reload() -> Configuration:
        return await load_configuration(kubeconfig, context)

    configuration = await load_configuration(kubeconfig, context)
    ca = Path(configuration.ssl_ca_cert) if configuration.ssl_ca_cert else None
    api = ApiServerAccess(str(configuration.host), ca, bool(configuration.verify_ssl))
    client = KubeClient(
        configuration, reload=reload, qps=CLIENT_QPS, burst=CLIENT_BURST, max_concurrency=CLIENT_CONCURRENCY
    )
    simulation = Simulation(options, logs)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await simulation.start(client, api)
        names = ", ".join(spec.name for spec in options.nodes)
        click.echo(f"simulated nodes {names} joined {api.url}; their PEs report to {options.controller_url}")
        click.echo("Ctrl-C removes them" + (" (--keep-nodes: they stay registered)" if keep_nodes else ""))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), duration)
    finally:
        await simulation.stop(remove_nodes=not keep_nodes)
        await client.close()
