"""`streams-k8s sandbox` and `streams-k8s run` started separately, as examples/README.md does:
the sandbox prints the `run` command, and with it the simulated PEs report their connectivity to
the operator; `kubectl get stp,stx,sti` then shows the columns the README describes."""

from __future__ import annotations

import asyncio
import os
import re
import runpy
import shlex
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from k8s_support import eventually_async
from operator_support import free_port, job_manifest, wait_for_phase
from repo_paths import REPO
from streams_k8s.api.contract import JOB_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.cli import main
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.settings import RuntimeSettings

CLI = Path(sys.executable).with_name("streams-k8s")
KUBECTL = shutil.which("kubectl")
EXAMPLES = REPO / "examples"
BUNDLES = runpy.run_path(str(EXAMPLES / "bundles.py"))


@asynccontextmanager
async def process(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def printed_run_command(sandbox: asyncio.subprocess.Process) -> list[str]:
    """The `streams-k8s run` command the sandbox prints (the line after 'run the operator ...')."""
    assert sandbox.stdout is not None
    async with asyncio.timeout(30):
        while b"run the operator" not in (line := await sandbox.stdout.readline()):
            assert line, "the sandbox exited before printing the run command"
        return shlex.split((await sandbox.stdout.readline()).decode())


def test_the_defaults_meet_on_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STREAMS_K8S_API_PORT", "STREAMS_K8S_BIND_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    settings = RuntimeSettings()
    kubeconfig = tmp_path / "kubeconfig"
    result = CliRunner().invoke(main, ["sandbox", "--kubeconfig", str(kubeconfig), "--duration", "0"])
    assert result.exit_code == 0, result.output
    assert f"simulated PEs report to http://127.0.0.1:{settings.api_port};" in result.output
    assert settings.bind_address == "0.0.0.0"  # the default REST API listens on loopback too
    run = f"streams-k8s run --kubeconfig {kubeconfig} --bind-address 127.0.0.1 --api-port {settings.api_port}"
    assert run in result.output.splitlines()[-1]


def test_run_help_documents_every_listen_address() -> None:
    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=100)
    assert result.exit_code == 0
    shown = " ".join(result.output.split())  # as printed, without click's line breaks
    for flag, default, variable in (
        ("--bind-address", "0.0.0.0", "STREAMS_K8S_BIND_ADDRESS"),
        ("--api-port", "10000", "STREAMS_K8S_API_PORT"),
        ("--repository-port", "6379", "STREAMS_K8S_REPOSITORY_PORT"),
        ("--health-port", "8081", "STREAMS_K8S_HEALTH_PORT"),
        ("--metrics-port", "8080", "STREAMS_K8S_METRICS_PORT"),
    ):
        after = shown.partition(f" {flag} ")[2]
        assert after, f"{flag} is not in run --help"
        assert f"[{default}; ${variable}]" in after.partition(" --")[0], after


def _table(output: str, kind: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows `kubectl get a,b,c` printed for one kind: tables are separated by blank
    lines, names are prefixed with the kind, cells are cut at the header's column starts (an
    empty cell is blanks, or `<none>` for an absent field)."""
    for block in output.strip().split("\n\n"):
        header, *rows = block.splitlines()
        if rows and rows[0].startswith(f"{kind}.streams.ibm.com/"):
            starts = [m.start() for m in re.finditer(r"\S+", header)]
            cut = [*zip(starts, [*starts[1:], None], strict=True)]
            cells = [[row[a:b].strip() for a, b in cut] for row in rows]
            return header.split(), [["" if c == "<none>" else c for c in row] for row in cells]
    raise AssertionError(f"no {kind} table in:\n{output}")


async def test_sandbox_and_run_work_together(tmp_path: Path) -> None:
    bundles = tmp_path / "bundles"
    BUNDLES["write_bundles"](bundles)
    kubeconfig = tmp_path / "kubeconfig"
    api_port = free_port()  # not 10000: tests run side by side
    async with process(
        str(CLI),
        "sandbox",
        "--nodes",
        str(EXAMPLES / "nodes.yaml"),
        "--kubeconfig",
        str(kubeconfig),
        "--controller-url",
        f"http://127.0.0.1:{api_port}",
    ) as sandbox:
        command = await printed_run_command(sandbox)
        assert command == [
            "streams-k8s", "run", "--kubeconfig", str(kubeconfig), "--bind-address", "127.0.0.1",
            "--api-port", str(api_port),
        ]  # fmt: skip
        # The other servers on free ports too, and a bundle cache of this test's own.
        command[0] = str(CLI)
        command += ["--repository-port", "0", "--health-port", "0", "--metrics-port", "0"]
        env = {"STREAMS_K8S_BUNDLE_CACHE": str(tmp_path / "cache"), "STREAMS_K8S_LOG_LEVEL": "WARNING"}
        async with (
            process(*command, env=env) as operator,
            await KubeClient.connect(str(kubeconfig)) as client,
        ):
            jobs = [job for job in yaml.safe_load_all((EXAMPLES / "jobs" / "pubsub.yaml").read_text()) if job]
            for job in jobs:
                file = job["spec"]["bundle"]["file"]
                file["path"] = str(bundles / Path(file["path"]).name)
                await client.create(JOBS, job, "default")
            for job in jobs:
                await wait_for_phase(client, job["metadata"]["name"], "Running", within=60)

            async def connected() -> bool:
                pes, _ = await client.list_all(PES, "default")
                return bool(pes) and all((pe.get("status") or {}).get("connectivity") == "Full" for pe in pes)

            try:
                await eventually_async(connected, within=30)
            except TimeoutError:
                assert operator.returncode is None, "the operator exited"
                raise AssertionError("the PEs never reported Full connectivity to the operator") from None
            if KUBECTL is not None:
                await _kubectl_shows_the_columns(kubeconfig, client)
            await _a_consistent_region_checkpoints(client, tmp_path)


async def _a_consistent_region_checkpoints(client: KubeClient, tmp_path: Path) -> None:
    """Its coordinator pod runs `streams-k8s coordinator` (before, it ran nothing: the region's
    status stayed empty and no checkpoint was ever taken)."""
    sab = tmp_path / "regions.sab"
    write_sab(sab, SyntheticSpec(name="regions::App", chains=2, consistent_chains=1, consistent_period=1.0))
    await client.create(JOBS, job_manifest("regions", sab), "default")
    await wait_for_phase(client, "regions", "Running", within=60)

    async def checkpointed() -> bool:
        regions, _ = await client.list_all(
            CONSISTENT_REGIONS, "default", label_selector=f"{JOB_LABEL}=regions"
        )
        return bool(regions) and all((r.get("status") or {}).get("lastCompletedSeqID") for r in regions)

    await eventually_async(checkpointed, within=60)


async def _kubectl_get(kubeconfig: Path, kinds: str) -> str:
    assert KUBECTL is not None
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(kubeconfig), "get", kinds, "-n", "default",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def _kubectl_shows_the_columns(kubeconfig: Path, client: KubeClient) -> None:
    async def every_import_connected() -> bool:  # the subscription board's status, written after it
        _, rows = _table(await _kubectl_get(kubeconfig, "stx,sti"), "import")
        return all(row[6] == "1" for row in rows)

    await eventually_async(every_import_connected, within=15)
    output = await _kubectl_get(kubeconfig, "stp,stx,sti")

    header, rows = _table(output, "processingelement")
    assert header == ["NAME", "CONNECTIVITY", "LAUNCH", "POD", "NODE", "PHASE", "AGE"]
    pes = {pe["metadata"]["name"]: pe["status"] for pe in (await client.list_all(PES, "default"))[0]}
    assert len(rows) == len(pes)
    for name, connectivity, launch, pod, node, phase, _ in rows:
        status = pes[name.partition("/")[2]]
        assert (connectivity, launch, phase) == ("Full", "1", "Running")
        assert (pod, node) == (status["podName"], status["nodeName"])
        assert node.startswith("node-")

    header, rows = _table(output, "export")
    assert header == [
        "NAME", "JOB-ID", "PE", "PORT", "TYPE", "STREAM", "OPERATOR", "CONNECTIONS", "CONNECTED-TO", "AGE"
    ]  # fmt: skip
    exporter: dict[str, Any] = (await client.get(JOBS, "exporter", "default"))["status"]
    by_type = {row[4]: row for row in rows}
    assert set(by_type) == {"ByName", "ByProperties"}
    assert by_type["ByName"][1] == str(exporter["id"])
    assert by_type["ByName"][5] == "temperatures"
    assert {row[7] for row in rows} == {"1"}
    assert all(row[8].startswith("importer/") for row in rows)  # the importing job and its operator

    header, rows = _table(output, "import")
    assert header == [
        "NAME",
        "JOB-ID",
        "PE",
        "PORT",
        "STREAMS",
        "FILTER",
        "CONNECTIONS",
        "CONNECTED-TO",
        "AGE",
    ]
    importer: dict[str, Any] = (await client.get(JOBS, "importer", "default"))["status"]
    assert {row[1] for row in rows} == {str(importer["id"])}
    assert sorted(row[4] for row in rows) == [
        'kind == "humidity" && site == "north"',
        "temperatures",
    ]  # by properties, by name
    assert "exporter/temperatures" in {row[7] for row in rows}  # the exporting job and its stream
