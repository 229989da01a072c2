"""The `streams-k8s` command line. Each verb lives in its own module and is registered here.

A verb's module is imported only when that verb runs (or its own ``--help`` is asked for): the
cluster client, pydantic models and the sandbox cost hundreds of milliseconds to import, and
``streams-k8s --help`` or ``plan`` must not pay for the verbs they do not use. The listing in
``--help`` therefore reads each verb's one-line summary from `COMMANDS`, which a test keeps equal
to the command's own docstring.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a verb's click command lives, and its one-line summary for the ``--help`` listing."""

    module: str
    attribute: str
    summary: str


COMMANDS: dict[str, LazyCommand] = {
    "console": LazyCommand(
        "streams_k8s.cli.console",
        "console",
        "Serve the web console (jobs, job graphs, PEs, regions, Events) until interrupted.",
    ),
    "control-plane": LazyCommand(
        "streams_k8s.cli.control_plane",
        "control_plane",
        "Run a real Kubernetes control plane on loopback until interrupted.",
    ),
    "coordinator": LazyCommand(
        "streams_k8s.cli.coordinator",
        "coordinator",
        "Run the consistent-region coordinator until SIGTERM.",
    ),
    "cr-replay": LazyCommand(
        "streams_k8s.cli.cr_replay",
        "cr_replay",
        "Replay EVENTS (JSON lines, '-' for stdin) through the region's FSM.",
    ),
    "crds": LazyCommand(
        "streams_k8s.cli.crds", "crds", "Generate the CRD manifests of every streams.ibm.com kind."
    ),
    "plan": LazyCommand(
        "streams_k8s.cli.plan", "plan", "Show the PEs a bundle (.sab/.adl) or Job manifest becomes."
    ),
    "resolve": LazyCommand(
        "streams_k8s.cli.resolve",
        "resolve",
        "Resolve LABEL: an operator port label J.O.P or a PE port label E.I@J.",
    ),
    "run": LazyCommand(
        "streams_k8s.cli.run",
        "run",
        "Run the controllers until SIGTERM (settings also from STREAMS_K8S_* variables).",
    ),
    "sandbox": LazyCommand(
        "streams_k8s.cli.sandbox",
        "sandbox",
        "Run an embedded Kubernetes API server with simulated nodes, kubelet and PE runtime.",
    ),
    "schedule": LazyCommand(
        "streams_k8s.cli.schedule",
        "schedule",
        "Simulate the multi-tenant vreplica scheduler on a JSON description of the cluster.",
    ),
    "streams": LazyCommand(
        "streams_k8s.cli.streamtool",
        "streams",
        "Run Streams jobs as streamtool does: submitjob, lsjobs, lspes, canceljob, ...",
    ),
    "simulate": LazyCommand(
        "streams_k8s.cli.simulate",
        "simulate",
        "Add simulated Streams nodes (kubelet and PE runtime) to a cluster until interrupted.",
    ),
}


class LazyGroup(click.Group):
    """A group whose verbs are imported on first use; ``--help`` lists them from `COMMANDS`.

    A command added eagerly (``add_command``) is served too, so a verb registered the old way
    still works; `tests/test_cli_imports.py` then says what its import costs ``--help``.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS.keys() | self.commands.keys())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return self.commands.get(cmd_name)
        command = getattr(importlib.import_module(entry.module), entry.attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # As click's own listing, without importing the commands: each summary cut to the width left.
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, self._summary(name).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _summary(self, name: str) -> click.Command:
        entry = COMMANDS.get(name)
        return click.Command(name, help=entry.summary) if entry else self.commands[name]


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from streams_k8s import __version__
    from streams_k8s._native import __version__ as native_version

    click.echo(f"{ctx.find_root().info_name} {__version__} (native core {native_version})")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main() -> None:
    """IBM Streams applications, run natively on Kubernetes."""


__all__ = ["COMMANDS", "LazyCommand", "LazyGroup", "main"]
