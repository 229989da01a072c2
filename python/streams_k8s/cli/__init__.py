"""The `streams-k8s` command line. Each verb lives in its own module and is registered here."""

from __future__ import annotations

import click

from streams_k8s import __version__
from streams_k8s._native import __version__ as native_version
from streams_k8s.cli.plan import plan


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=f"%(prog)s %(version)s (native core {native_version})")
def main() -> None:
    """IBM Streams applications, run natively on Kubernetes."""


main.add_command(plan)

__all__ = ["main"]
