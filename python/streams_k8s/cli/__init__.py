"""The `streams-k8s` command line. Each verb lives in its own module and is registered here."""

from __future__ import annotations

import click

from streams_k8s import __version__
from streams_k8s._native import __version__ as native_version
from streams_k8s.cli.console import console
from streams_k8s.cli.coordinator import coordinator
from streams_k8s.cli.cr_replay import cr_replay
from streams_k8s.cli.crds import crds
from streams_k8s.cli.plan import plan
from streams_k8s.cli.resolve import resolve
from streams_k8s.cli.run import run
from streams_k8s.cli.sandbox import sandbox as sandbox_command
from streams_k8s.cli.schedule import schedule


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=f"%(prog)s %(version)s (native core {native_version})")
def main() -> None:
    """IBM Streams applications, run natively on Kubernetes."""


main.add_command(crds)
main.add_command(resolve)
main.add_command(schedule)
main.add_command(cr_replay)
main.add_command(run)
main.add_command(sandbox_command)
main.add_command(plan)
main.add_command(coordinator)
main.add_command(console)

__all__ = ["main"]
