"""The instance operator as a separate process (`streams-k8s run`), against a sandbox.

Used where the controller must be killed (chaos) or measured on its own (CPU seconds, peak RSS):
the sandbox stays in the test's process, the operator runs as a user runs it.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

OPERATOR_SETUP = "streams_k8s.controller.operator:setup"
CLI = Path(sys.executable).with_name("streams-k8s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_operator() -> None:
    """Skip when the instance operator's setup is not in this checkout yet."""
    if importlib.util.find_spec(OPERATOR_SETUP.split(":")[0]) is None:
        pytest.skip(f"{OPERATOR_SETUP} is not available in this checkout")


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float
    peak_rss_mb: float


class OperatorProcess:
    """`streams-k8s run --controller streams_k8s.controller.operator:setup` in its own process."""

    def __init__(
        self, kubeconfig: Path, log: Path, *, qps: int = 500, api_port: int = 0, namespace: str = "default"
    ) -> None:
        self.kubeconfig, self.log, self.namespace = kubeconfig, log, namespace
        self.api_port = api_port  # the REST API the simulated PEs report to (0: any free port)
        # The runtime's default client rate (50/s, burst 100) would make API throttling the whole story.
        self.qps = qps
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        env = {
            **os.environ,
            "STREAMS_K8S_LOG_LEVEL": "WARNING",
            "STREAMS_K8S_QPS": str(self.qps),
            "STREAMS_K8S_BURST": str(self.qps),
            # Free ports: the REST API and bundle repository must not collide between tests.
            "STREAMS_K8S_API_PORT": str(self.api_port),
            "STREAMS_K8S_REPOSITORY_PORT": "0",
            # A bundle cache of its own: another test's bundle of the same name must not be served.
            "STREAMS_K8S_BUNDLE_CACHE": str(self.log.parent / "bundle-cache"),
        }
        command = [
            str(CLI),
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--namespace",
            self.namespace,
            "--health-port",
            "0",
            "--metrics-port",
            "0",
            "--bind-address",
            "127.0.0.1",
            "--no-leader-election",
            "--controller",
            OPERATOR_SETUP,
        ]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.starts += 1

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, as when a node dies."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> Usage:
        """SIGTERM, wait, and the process's CPU time and peak RSS from the kernel's rusage."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        _, _, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = 0
        self.process = None
        return Usage(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)

    def __enter__(self) -> OperatorProcess:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
