"""A PE whose pod runs without reporting is recorded running by the controller after the report
wait (`pes.report_wait`); when that status write fails (a conflict, a 5xx, a refused request)
the controller writes it again at once, not after a second whole wait."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from k8s_support import eventually_async
from operator_support import job_manifest, operator, wait_for_phase
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import JOBS, PES
from streams_k8s.controller.pes.report_wait import REPORT_GRACE
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox

PES_PATH = "/apis/streams.ibm.com/v1/namespaces/default/streamspes/"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.mark.sandbox(nodes=1)
async def test_a_failed_record_of_a_running_pod_is_written_again_without_a_second_wait(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=1))
    sandbox.faults.fail(409, 1, verb="patch", resource="streamspes/status")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("record", bundle, fusion={"manual": 1}))
        await wait_for_phase(client, "record", "Running")

        async def recorded() -> bool:
            pes, _ = await client.list_all(PES, "default")
            return [(pe.get("status") or {}).get("phase") for pe in pes] == ["Running"]

        await eventually_async(recorded, within=30)
    writes = [
        r
        for r in sandbox.requests
        if r.method == "PATCH" and r.path.startswith(PES_PATH) and r.path.endswith("/status")
    ]
    assert [r.status for r in writes] == [409, 200]
    # The second attempt follows the refused one by a retry's backoff; it used to wait the whole
    # report grace again (the wait started over once the record was thought written).
    assert writes[1].time - writes[0].time < REPORT_GRACE / 2
