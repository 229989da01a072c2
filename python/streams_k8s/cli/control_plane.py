"""`streams-k8s control-plane`: a real Kubernetes control plane on loopback (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler), for a person to try streams-k8s on the real thing.

The binaries come from `tools/build-control-plane` (a checkout's script that builds them from the
Go module proxy): `--bin-dir "$(tools/build-control-plane)"` or `$STREAMS_K8S_CONTROL_PLANE_BIN`.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import threading
from pathlib import Path

import click

from streams_k8s.cli.run import BadUsage, OneLineErrors
from streams_k8s.control_plane.cluster import BIN_ENV, ControlPlane, StartFailed, missing_binaries


@click.command("control-plane", cls=OneLineErrors)
@click.option(
    "--bin-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar=BIN_ENV,
    required=True,
    help=f"directory of etcd and the Kubernetes binaries: $(tools/build-control-plane) [${BIN_ENV}]",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="where certificates, etcd's data, kubeconfigs and logs go [a new temporary directory]",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("streams-control-plane.kubeconfig"),
    show_default=True,
    help="where to copy the admin kubeconfig",
)
@click.option("--keep", is_flag=True, help="keep the directory (logs, etcd's data) after stopping")
@click.option(
    "--timeout", type=float, default=120.0, show_default=True, help="seconds each component has to start"
)
def control_plane(
    bin_dir: Path, directory: Path | None, kubeconfig: Path, keep: bool, timeout: float
) -> None:
    """Run a real Kubernetes control plane on loopback until interrupted."""
    missing = missing_binaries(bin_dir)
    if missing:
        raise BadUsage(
            f"--bin-dir {bin_dir} has no {', '.join(missing)}: build them with tools/build-control-plane"
        )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    plane = ControlPlane(bin_dir, directory, keep=keep)
    try:
        plane.start(timeout)
    except StartFailed as exc:
        raise click.ClickException(f"{exc}\n(kept in {plane.directory})") from None
    try:
        shutil.copyfile(plane.admin_kubeconfig, kubeconfig)
        kubeconfig.chmod(0o600)
        click.echo(f"Kubernetes {plane.version()} at {plane.url} (files in {plane.directory})")
        click.echo(f"export KUBECONFIG={kubeconfig.resolve()}")
        click.echo("no nodes yet: `streams-k8s simulate --kubeconfig ...` adds simulated ones. Ctrl-C stops.")
        while not stop.wait(1.0):
            unhealthy = [name for name, ok in plane.healthy().items() if not ok]
            if unhealthy:
                plane.failed = True
                raise click.ClickException(f"{', '.join(unhealthy)} stopped; logs in {plane.logs}")
    finally:
        plane.stop()
        with contextlib.suppress(OSError):
            kubeconfig.unlink()
