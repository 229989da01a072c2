"""What every streamtool verb shares: kubectl's flags, the namespace they mean, one client, and
errors as one readable line with a non-zero exit (as kubectl prints them: ``error: ...``)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import orjson
import yaml
from kubernetes_asyncio.config import ConfigException

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError

T = TypeVar("T")
Command = TypeVar("Command", bound=Callable[..., Any])
# A CLI waits for one answer, not for a server that may come back: one retry, short timeouts.
_CLIENT_OPTIONS: dict[str, Any] = {"max_retries": 1, "request_timeout": 30.0}


class StreamtoolError(Exception):
    """What the user is told, on one line, before the verb exits 1."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """Where a verb acts: kubectl's ``--kubeconfig``, ``--context`` and ``-n``."""

    kubeconfig: str | None
    context: str | None
    namespace: str

    async def client(self) -> KubeClient:
        try:
            return await KubeClient.connect(self.kubeconfig, self.context, **_CLIENT_OPTIONS)
        except (ConfigException, OSError) as err:
            raise StreamtoolError(f"cannot load the kubeconfig: {err}") from None


def cluster_options(command: Command) -> Command:
    """kubectl's ``--kubeconfig``, ``--context`` and ``-n/--namespace`` (read with `cluster_of`)."""
    command = click.option("-n", "--namespace", help="Namespace [the context's, else default].")(command)
    command = click.option("--context", help="kubeconfig context [the current one].")(command)
    return click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        help="kubeconfig file [$KUBECONFIG, ~/.kube/config].",
    )(command)


def cluster_of(kubeconfig: str | None, context: str | None, namespace: str | None) -> Cluster:
    return Cluster(kubeconfig, context, namespace or context_namespace(kubeconfig, context) or "default")


def context_namespace(kubeconfig: str | None, context: str | None) -> str | None:
    """The namespace the kubeconfig's context names (kubectl's default for ``-n``), if any."""
    path = kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0] or None
    file = Path(path) if path else Path.home() / ".kube" / "config"
    try:
        config = yaml.safe_load(file.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None  # the client's load says what is wrong with it
    if not isinstance(config, dict):
        return None
    wanted = context or config.get("current-context")
    for entry in config.get("contexts") or ():
        if isinstance(entry, dict) and entry.get("name") == wanted:
            namespace = (entry.get("context") or {}).get("namespace")
            return str(namespace) if namespace else None
    return None


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def run(cluster: Cluster, work: Callable[[KubeClient], Awaitable[T]]) -> T:
    """``work`` with a client of ``cluster``; any failure is one line and exit status 1."""

    async def connected() -> T:
        async with await cluster.client() as client:
            return await work(client)

    try:
        return asyncio.run(connected())
    except StreamtoolError as err:
        fail(str(err))
    except ApiError as err:
        fail(api_message(err))


def api_message(err: ApiError) -> str:
    if err.status == 0:
        return f"cannot reach the API server: {err.message or err.reason}"
    return err.message or str(err)


def emit(data: Any, output: str) -> None:
    """``data`` as ``-o json`` or ``-o yaml`` prints it."""
    if output == "json":
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, width=10_000), nl=False)


def table(rows: list[list[str]]) -> None:
    """Columns as kubectl prints them: upper-case headers, left-aligned, three spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
