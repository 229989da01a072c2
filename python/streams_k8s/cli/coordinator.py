"""`streams-k8s coordinator`: the consistent-region coordinator of one job (dedicated mode) or
of the jobs assigned to this pod of the shared pool (shared mode)."""

from __future__ import annotations

import asyncio
from typing import Any

import click
from pydantic import ValidationError

from streams_k8s.api.contract import CONSISTENT_REGION_PORT, COORDINATOR_API_PORT, METRICS_PORT
from streams_k8s.cli.cluster_flags import kubeconfig_option
from streams_k8s.cli.run import BadUsage, OneLineErrors
from streams_k8s.consistent.coordinator import setup
from streams_k8s.consistent.coordinator_settings import CLIENT_BURST, CLIENT_QPS, CoordinatorSettings
from streams_k8s.k8s.logs import configure_logging
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.settings import RuntimeSettings


def _settings(kind: type[Any], values: dict[str, Any]) -> Any:
    try:
        return kind(**{k: v for k, v in values.items() if v is not None})
    except (ValidationError, ValueError) as exc:
        errors = exc.errors() if isinstance(exc, ValidationError) else []
        if errors:
            where = ".".join(str(p) for p in errors[0]["loc"])
            raise BadUsage(f"invalid settings: {where + ': ' if where else ''}{errors[0]['msg']}") from None
        raise BadUsage(str(exc)) from None


async def _serve(runtime: RuntimeSettings, settings: CoordinatorSettings) -> int:
    manager = Manager(runtime)
    await manager.connect()
    coordinator = await setup(manager, settings)
    try:
        return await manager.run()
    finally:
        await coordinator.close()


@click.command("coordinator", cls=OneLineErrors)
@click.option(
    "--mode", type=click.Choice(["dedicated", "shared"]), help="one job, or the shared pool [dedicated]"
)
@click.option("--job", help="the job (dedicated mode) [$STREAMS_K8S_CR_JOB]")
@click.option("--namespace", "-n", help="the job's namespace; shared mode: only this one [pod's namespace]")
@click.option("--pod-name", help="this pod's name (shared mode placement) [$POD_NAME]")
@click.option(
    "--api-port",
    type=click.IntRange(0, 65535),
    help=f"consistent-region REST API port [{COORDINATOR_API_PORT}]",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=METRICS_PORT,
    show_default=True,
    help="the regions' gauges and the coordinator's own metrics",
)
@click.option(
    "--health-port", type=click.IntRange(0, 65535), default=8081, show_default=True, help="/healthz, /readyz"
)
@click.option("--bind-address", help="address the servers listen on [0.0.0.0]")
@click.option(
    "--udp-hints/--no-udp-hints", default=None, help=f"UDP hints to PEs on port {CONSISTENT_REGION_PORT} [on]"
)
@click.option(
    "--qps",
    type=click.FloatRange(min=0, min_open=True),
    default=CLIENT_QPS,
    show_default=True,
    help="Kubernetes API requests per second (status writes)",
)
@click.option(
    "--burst",
    type=click.IntRange(min=1),
    default=CLIENT_BURST,
    show_default=True,
    help="requests above --qps",
)
@kubeconfig_option
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]))
@click.option("--log-format", type=click.Choice(["json", "text"]))
def coordinator(**flags: Any) -> None:
    """Run the consistent-region coordinator until SIGTERM."""
    cr = _settings(
        CoordinatorSettings,
        {
            k: flags[k]
            for k in ("mode", "job", "namespace", "pod_name", "api_port", "bind_address", "udp_hints")
        },
    )
    if cr.mode == "dedicated" and (not cr.job or not cr.effective_namespace()):
        raise BadUsage("dedicated mode needs --job and --namespace (or $POD_NAMESPACE)")
    runtime = _settings(
        RuntimeSettings,
        {
            "kubeconfig": flags["kubeconfig"],
            "namespace": cr.effective_namespace() if cr.mode == "dedicated" else cr.namespace,
            "metrics_port": flags["metrics_port"],
            "health_port": flags["health_port"],
            "qps": flags["qps"],
            "burst": flags["burst"],
            "bind_address": flags["bind_address"],
            # One coordinator per job (dedicated) or per pool pod (shared): nothing to elect.
            "leader_election": False,
            "log_level": flags["log_level"],
            "log_format": flags["log_format"],
        },
    )
    configure_logging(runtime.log_level, runtime.log_format)
    try:
        code = asyncio.run(_serve(runtime, cr))
    except Exception as exc:
        raise click.ClickException(f"cannot start: {exc}") from None
    raise SystemExit(code)
