"""The flags of the verbs that talk to a cluster, defined once so they read and behave alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

Command = TypeVar("Command", bound=Callable[..., Any])

kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    help="kubeconfig file [$KUBECONFIG, ~/.kube/config, else the pod's service account]",
)


def cluster_flags(namespace_help: str) -> Callable[[Command], Command]:
    """`--kubeconfig`, `--context` and `--namespace`/`-n`; only what `-n` limits differs by verb."""

    def decorate(command: Command) -> Command:
        command = click.option("--namespace", "-n", help=namespace_help)(command)
        command = click.option("--context", help="kubeconfig context")(command)
        return kubeconfig_option(command)

    return decorate
