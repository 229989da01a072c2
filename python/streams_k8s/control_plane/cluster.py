"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, built from their Go modules (`tools/build-control-plane`), started in that order,
each once the one before is healthy, and stopped in reverse.

Everything lives in one directory (certificates, etcd's data, kubeconfigs, one log per component):
removed on a clean stop, kept when a component failed to start or when asked (`keep`), so the logs
can be read. There are no nodes: `streams-k8s simulate` adds simulated ones.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import tempfile
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from streams_k8s.control_plane import components
from streams_k8s.control_plane.certificates import (
    ADMIN,
    APISERVER_KUBELET_CLIENT,
    CONTROLLER_MANAGER,
    SCHEDULER,
    Pki,
    create_pki,
)
from streams_k8s.control_plane.components import Ports
from streams_k8s.control_plane.kubeconfig import write_kubeconfig
from streams_k8s.control_plane.process import Probe, Process, StartFailed

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
BIN_ENV = "STREAMS_K8S_CONTROL_PLANE_BIN"


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def missing_binaries(binaries: Path) -> list[str]:
    return [b for b in BINARIES if not (binaries / b).is_file()]


class ControlPlane:
    """`with ControlPlane(bin_dir) as cp:` then `cp.admin_kubeconfig`, `cp.url`, `cp.version()`."""

    def __init__(self, binaries: Path, directory: Path | None = None, *, keep: bool = False) -> None:
        missing = missing_binaries(binaries)
        if missing:
            raise FileNotFoundError(
                f"{binaries} has no {', '.join(missing)}: build them with tools/build-control-plane"
            )
        self.binaries = binaries
        self.directory = directory or Path(tempfile.mkdtemp(prefix="streams-k8s-control-plane-"))
        self.keep = keep
        self.failed = False
        self.processes: list[Process] = []
        self.ports = Ports(*_free_ports(5))
        self.pki: Pki | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def logs(self) -> Path:
        return self.directory / "logs"

    @property
    def audit_log(self) -> Path:
        """One JSON audit event per request (components.AUDIT_POLICY): who asked what, the answer."""
        return self.directory / "audit" / "audit.log"

    @property
    def cluster_egress(self) -> Path:
        """The Unix socket kube-apiserver asks for its connections to pods and nodes (HTTP CONNECT):
        served by whoever runs the cluster's pods (`sandbox.cluster.egress_proxy`), else none open."""
        return self.directory / "cluster-egress.sock"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.directory / "admin.kubeconfig"

    def admin_context(self) -> ssl.SSLContext:
        """TLS for a client of the API server as the admin (trusts the CA, presents the admin's cert)."""
        assert self.pki is not None, "not started"
        context = ssl.create_default_context(cafile=str(self.pki.ca.cert))
        admin = self.pki.client(ADMIN)
        context.load_cert_chain(str(admin.cert), str(admin.key))
        return context

    def start(self, timeout: float = 120.0) -> ControlPlane:
        try:
            self._start(timeout)
        except BaseException:
            self.failed = True
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        identities = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, APISERVER_KUBELET_CLIENT)
        self.pki = pki = create_pki(self.directory / "pki", components.SERVICE_IP, identities)
        kubeconfigs = {
            who: write_kubeconfig(
                self.directory / f"{name}.kubeconfig", self.url, pki.ca.cert, pki.client(who)
            )
            for who, name in (
                (ADMIN, "admin"),
                (CONTROLLER_MANAGER, "controller-manager"),
                (SCHEDULER, "scheduler"),
            )
        }
        # The components' own serving certificates are self-signed in memory: probes only need /healthz.
        unverified = ssl._create_unverified_context()
        b = self.binaries
        self._run(
            "etcd",
            components.etcd(b / "etcd", self.directory / "etcd", self.ports),
            Probe(f"http://127.0.0.1:{self.ports.etcd_client}/health"),
            timeout,
        )
        self._run(
            "kube-apiserver",
            components.apiserver(
                b / "kube-apiserver", pki, self.ports, self.directory / "audit", self.cluster_egress
            ),
            Probe(f"{self.url}/readyz", self.admin_context()),
            timeout,
        )
        cm_argv = components.controller_manager(
            b / "kube-controller-manager", pki, kubeconfigs[CONTROLLER_MANAGER], self.ports
        )
        self._run(
            "kube-controller-manager",
            cm_argv,
            Probe(f"https://127.0.0.1:{self.ports.controller_manager}/healthz", unverified),
            timeout,
        )
        self._run(
            "kube-scheduler",
            components.scheduler(b / "kube-scheduler", kubeconfigs[SCHEDULER], self.ports),
            Probe(f"https://127.0.0.1:{self.ports.scheduler}/healthz", unverified),
            timeout,
        )

    def _run(self, name: str, argv: list[str], probe: Probe, timeout: float) -> None:
        process = Process(name, argv, self.logs / f"{name}.log", probe)
        self.processes.append(process)
        process.start()
        process.wait_healthy(timeout)

    def healthy(self) -> dict[str, bool]:
        return {p.name: p.running() and p.healthy() for p in self.processes}

    def get(self, path: str) -> Any:
        """GET a path of the API server as the admin, decoded from JSON."""
        with urllib.request.urlopen(self.url + path, timeout=10, context=self.admin_context()) as answer:
            return json.loads(answer.read())

    def version(self) -> str:
        return str(self.get("/version")["gitVersion"])

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        if not (self.keep or self.failed):
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt):
            self.failed = True
        self.stop()


__all__ = ["BIN_ENV", "ControlPlane", "StartFailed", "missing_binaries"]
