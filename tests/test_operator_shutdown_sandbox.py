"""`streams-k8s run` shuts down cleanly on SIGTERM: every server and HTTP session closed, nothing
left for the interpreter to warn about (`Unclosed client session`, unclosed sockets)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import synthetic_job
from operator_support import wait_for_phase
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def spawn(sandbox: Sandbox, cache: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "STREAMS_K8S_API_PORT": "0",
        "STREAMS_K8S_REPOSITORY_PORT": "0",
        "STREAMS_K8S_BUNDLE_CACHE": str(cache),
        "PYTHONWARNINGS": "default",  # ResourceWarnings shown, as a careful operator runs it
    }
    command = [
        sys.executable, "-c", "from streams_k8s.cli import main; main()", "run",
        "--kubeconfig", str(sandbox.kubeconfig_path), "--namespace", "default",
        "--health-port", "0", "--metrics-port", "0", "--bind-address", "127.0.0.1",
        "--no-leader-election", "--log-format", "text", "--log-level", "WARNING",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.sandbox(nodes=1)
async def test_sigterm_after_a_submission_leaves_nothing_unclosed(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path
) -> None:
    process = spawn(sandbox, tmp_path / "cache")
    try:
        await client.create(JOBS, synthetic_job("bye", tmp_path, 2))  # a bundle fetched: a session opened
        await wait_for_phase(client, "bye", "Running", within=60)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(process.communicate, timeout=30)
    text = stderr.decode()
    assert process.returncode == 0, text
    assert "nclosed" not in text, text
