"""`streams-k8s run` shuts down cleanly on SIGTERM: every server and HTTP session closed, nothing
left for the interpreter to warn about (`Unclosed client session`, unclosed sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from job_inventory import synthetic_job
from operator_process import OperatorProcess
from operator_support import wait_for_phase
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.mark.sandbox(nodes=1)
async def test_sigterm_after_a_submission_leaves_nothing_unclosed(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONWARNINGS", "default")  # ResourceWarnings shown, as a careful operator runs it
    log = tmp_path / "operator.log"
    operator = OperatorProcess(sandbox.kubeconfig_path, log)
    operator.start()
    try:
        await client.create(JOBS, synthetic_job("bye", tmp_path, 2))  # a bundle fetched: a session opened
        await wait_for_phase(client, "bye", "Running", within=60)
    finally:
        await asyncio.to_thread(operator.stop)  # SIGTERM
    text = log.read_text()
    assert "nclosed" not in text, text
