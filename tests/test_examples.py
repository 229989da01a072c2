"""examples/: every Job runs as shipped, on the sandbox examples/README.md starts, with the bundles
`examples/bundles.py` writes."""

from __future__ import annotations

import runpy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from operator_support import operator, wait_for_phase
from repo_paths import REPO
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.controller.kinds import EXPORTS, IMPORTS, JOBS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox

EXAMPLES = REPO / "examples"
JOB_FILES = sorted((EXAMPLES / "jobs").glob("*.yaml"))
BUNDLES = runpy.run_path(str(EXAMPLES / "bundles.py"))  # its module globals: DEFAULT_DIR, write_bundles


def _jobs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest_asyncio.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def test_every_job_points_at_a_bundle_the_bundles_script_writes(tmp_path: Path) -> None:
    written = {path.name for path in BUNDLES["write_bundles"](tmp_path)}
    named = [job["spec"]["bundle"] for path in JOB_FILES for job in _jobs(path)]
    assert len(JOB_FILES) >= 4
    for bundle in named:
        path = Path(bundle["file"]["path"])
        assert path.parent == BUNDLES["DEFAULT_DIR"], bundle
        assert path.name == bundle["name"]
        assert path.name in written, bundle
    assert {Path(b["file"]["path"]).name for b in named} == written  # no bundle written for nothing


@pytest.mark.sandbox(nodes=EXAMPLES / "nodes.yaml")
@pytest.mark.parametrize("example", JOB_FILES, ids=lambda p: p.stem)
async def test_example_reaches_running(
    example: Path, sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Jobs name the bundles' default directory; this test writes them to its own instead.
    bundles = tmp_path / "bundles"
    BUNDLES["write_bundles"](bundles)
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        jobs = _jobs(example)
        for job in jobs:
            file = job["spec"]["bundle"]["file"]
            file["path"] = str(bundles / Path(file["path"]).name)
            await client.create(JOBS, job, "default")
        for job in jobs:
            name = job["metadata"]["name"]
            status = await wait_for_phase(client, name, "Running", within=60)
            pes, _ = await client.list_all(PES, "default", label_selector=f"{JOB_LABEL}={name}")
            pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}={name}")
            assert len(pes) == status["processingElements"] > 0
            assert sorted(p["status"]["phase"] for p in pods) == ["Running"] * len(pes)
        await _shows_what_it_says(client, example.stem)


async def _shows_what_it_says(client: KubeClient, example: str) -> None:
    """What each example's comment says it shows."""
    if example == "parallel":
        regions, _ = await client.list_all(PARALLEL_REGIONS, "default")
        assert {r["spec"]["alias"]: r["spec"]["width"] for r in regions} == {"C0_1": 3, "C1_1": 2}
    elif example == "hostpools":
        pods, _ = await client.list_all(PODS, "default", label_selector=f"{JOB_LABEL}=hostpools")
        on = {p["spec"]["nodeName"] for p in pods}
        assert {"node-a", "node-b"} <= on  # the nodes tagged pool0 and pool1
    elif example == "pubsub":
        exports, _ = await client.list_all(EXPORTS, "default")
        imports, _ = await client.list_all(IMPORTS, "default")
        assert sorted(e["spec"]["type"] for e in exports) == ["ByName", "ByProperties"]
        assert len(imports) == 2
