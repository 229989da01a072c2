"""`streams-k8s run`: run controllers under the Manager (watches, leader election, health, metrics).

Controllers are named as ``module:function`` with ``--controller``, or registered by installed
packages under the ``streams_k8s.controllers`` entry-point group; each function receives the
Manager and declares its informers and controllers on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import click
from pydantic import ValidationError

from streams_k8s.cli.cluster_flags import cluster_flags
from streams_k8s.k8s.idle_collection import collect_while_idle
from streams_k8s.k8s.logs import configure_logging
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import heap

ENTRY_POINT_GROUP = "streams_k8s.controllers"
Setup = Callable[[Manager], Any]


class BadUsage(click.ClickException):
    """Wrong flags or settings: one line on stderr, exit code 2 (as click's own usage errors)."""

    exit_code = 2


class OneLineErrors(click.Command):
    """Report flag parsing errors as one line, without the usage block click prints by default."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise BadUsage(exc.format_message()) from None


def _load_setup(spec: str) -> Setup:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise BadUsage(f"--controller {spec!r}: expected MODULE:FUNCTION")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise BadUsage(f"--controller {spec!r}: {exc}") from exc
    if not callable(target):
        raise BadUsage(f"--controller {spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def _long_lived_heap() -> None:
    """Garbage collection for a process whose caches hold every watched object for its life.

    The informers' caches are JSON maps that hold no reference cycles, yet with the default
    thresholds full collections walked them again and again: at 1,000 PEs each took 0.07-0.15 s,
    with the event loop stopped (one fell into an upgrade's re-plan, tripling it), and at 3,000
    PEs they were 1.7 s of a submission's 12.9 s of CPU. What the imports made is frozen (never
    walked again) and young collections are made as rare as a sandbox makes them (`heap.hold`),
    for the rest of the process; reference counting still frees everything as before. Young
    garbage is also collected while the controllers are idle (`k8s.idle_collection`, started
    with the manager).
    """
    gc.freeze()
    heap.hold()


def _listen_help(setting: str) -> str:
    """A listen flag's help from its setting: what listens there, the default and the variable."""
    field = RuntimeSettings.model_fields[setting]
    prefix = RuntimeSettings.model_config.get("env_prefix", "")
    return f"{field.description} [{field.default}; ${prefix}{setting.upper()}]"


async def _serve(settings: RuntimeSettings, setups: list[Setup], console: ConsoleFlags) -> int:
    manager = Manager(settings)
    client = await manager.connect()
    async with contextlib.AsyncExitStack() as stack:
        flow = None  # a setup's reading of the PEs' metrics (the instance operator's), for the console
        try:
            for setup in setups:
                result = setup(manager)
                if inspect.isawaitable(result):
                    result = await result
                flow = getattr(result, "flow", None) or flow
                if inspect.iscoroutinefunction(stop := getattr(result, "stop", None)):
                    # what a setup started besides the manager, closed on the way out: a clean
                    # exit, no unclosed-session warnings
                    stack.push_async_callback(stop)
            if console.port is not None:  # the same informers, served read-only
                await _start_console(manager, stack, settings.bind_address, console, flow)
        except BaseException:
            await client.close()  # run() would close it; a failed setup never gets there
            raise
        _long_lived_heap()
        collecting = asyncio.create_task(collect_while_idle(manager.idle), name="idle-collection")
        try:
            return await manager.run()
        finally:
            collecting.cancel()
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class ConsoleFlags:
    port: int | None
    auth: str


async def _start_console(
    manager: Manager, stack: contextlib.AsyncExitStack, host: str, flags: ConsoleFlags, flow: Any
) -> None:
    from streams_k8s.cli.console import start_console  # the console's modules only when asked for
    from streams_k8s.controller.settings import OperatorSettings

    cache = OperatorSettings.from_environment().bundle_cache_dir()  # the operator's: nothing fetched
    assert flags.port is not None
    await start_console(manager, stack, cache, host=host, port=flags.port, auth=flags.auth, flow=flow)


@click.command(cls=OneLineErrors)
@cluster_flags("watch only this namespace, or these: team-a,team-b (default: all namespaces)")
@click.option("--bind-address", help=_listen_help("bind_address"))
@click.option("--api-port", type=click.IntRange(0, 65535), help=_listen_help("api_port"))
@click.option("--repository-port", type=click.IntRange(0, 65535), help=_listen_help("repository_port"))
@click.option("--health-port", type=click.IntRange(0, 65535), help=_listen_help("health_port"))
@click.option("--metrics-port", type=click.IntRange(0, 65535), help=_listen_help("metrics_port"))
@click.option("--leader-election/--no-leader-election", default=None, help="elect a leader on a Lease [on]")
@click.option("--lease-name", help="Lease name [streams-k8s-controller]")
@click.option("--lease-namespace", help="Lease namespace [pod namespace, --namespace or default]")
@click.option("--identity", help="this replica's name in the Lease [hostname_pid]")
@click.option(
    "--controller",
    "controllers",
    multiple=True,
    metavar="MODULE:FUNCTION",
    help=f"controller setup to run (repeatable) [entry points '{ENTRY_POINT_GROUP}']",
)
@click.option(
    "--console-port",
    type=click.IntRange(0, 65535),
    envvar="STREAMS_K8S_CONSOLE_PORT",
    help="also serve the read-only web console here [off; $STREAMS_K8S_CONSOLE_PORT]",
)
@click.option(
    "--console-auth",
    type=click.Choice(["token", "none"]),
    default="token",
    envvar="STREAMS_K8S_CONSOLE_AUTH",
    show_default=True,
    help="token: viewers log in with a bearer token (TokenReview + SubjectAccessReview); none: "
    "anyone who reaches the port sees what the operator sees (behind kubectl port-forward)",
)
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]))
@click.option("--log-format", type=click.Choice(["json", "text"]))
def run(controllers: tuple[str, ...], console_port: int | None, console_auth: str, **flags: Any) -> None:
    """Run the controllers until SIGTERM (settings also from STREAMS_K8S_* variables).

    The instance operator serves its REST API (--api-port) and bundle repository
    (--repository-port) besides health and metrics; port 0 picks a free one.
    """
    try:
        settings = RuntimeSettings(**{k: v for k, v in flags.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadUsage(f"invalid settings: {where + ': ' if where else ''}{first['msg']}") from None
    setups = [_load_setup(spec) for spec in controllers]
    if not setups:
        setups = [ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)]
    if not setups:
        raise BadUsage(
            f"no controllers: pass --controller MODULE:FUNCTION or install '{ENTRY_POINT_GROUP}' entry points"
        )
    configure_logging(settings.log_level, settings.log_format)
    try:
        code = asyncio.run(_serve(settings, setups, ConsoleFlags(console_port, console_auth)))
    except Exception as exc:
        raise click.ClickException(f"cannot start: {exc}") from None
    raise SystemExit(code)
