"""What a user sees through a real `kubectl` against the sandbox: every row of long lists (with and
without --chunk-size), `get -w` columns after changes, the operator's Events sorted by
lastTimestamp, and `logs` of a running pod (exec answered with why it cannot work)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_support import KUBECTL, MISSING, Kubectl
from sandbox_crds import GROUP, widget, widget_crd
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox

pytestmark = pytest.mark.skipif(KUBECTL is None, reason=MISSING)

NS = "default"


@pytest.fixture
def kubectl(sandbox: Sandbox, tmp_path: Path) -> Kubectl:
    return Kubectl(sandbox, tmp_path)


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def create(sandbox: Sandbox, resource: str, body: dict[str, Any], group: str = "") -> dict[str, Any]:
    rt = sandbox.registry.types[(group, resource)]
    return sandbox.registry.create(rt, rt.storage_version, NS, body)


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "pe", "image": "r:1"}]},
    }


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


async def next_line(stream: asyncio.StreamReader) -> list[str]:
    line = await asyncio.wait_for(stream.readline(), 15)
    assert line, "kubectl ended"
    return line.decode().split()


async def test_get_shows_every_row_of_a_long_list(sandbox: Sandbox, kubectl: Kubectl) -> None:
    for i in range(600):  # kubectl pages by 500
        create(sandbox, "configmaps", {"metadata": {"name": f"cm-{i:03d}"}, "data": {"k": "v"}})
    _, out, _ = await kubectl.run("get", "configmaps")
    table = rows(out)
    assert table[0] == ["NAME", "DATA", "AGE"]
    assert [r[0] for r in table[1:]] == [f"cm-{i:03d}" for i in range(600)]
    _, out, _ = await kubectl.run("get", "configmaps", "--chunk-size=7", "-l", "k!=v")
    assert len(rows(out)) == 601
    for i in range(8):
        create(sandbox, "pods", pod(f"p-{i}"))
    _, out, _ = await kubectl.run("get", "pods", "--chunk-size=2")
    assert [r[0] for r in rows(out)[1:]] == [f"p-{i}" for i in range(8)]


async def test_get_watch_prints_every_column_of_each_change(sandbox: Sandbox, kubectl: Kubectl) -> None:
    create(sandbox, "pods", pod("first"))
    await sandbox.settle()
    async with kubectl.streaming("get", "pods", "-w") as stream:
        assert await next_line(stream) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert (await next_line(stream))[:4] == ["first", "1/1", "Running", "0"]
        create(sandbox, "pods", pod("second"))
        seen = [await next_line(stream) for _ in range(2)]
        while seen[-1][:3] != ["second", "1/1", "Running"]:
            seen.append(await next_line(stream))
        assert all(len(line) == 5 and line[0] == "second" for line in seen)  # every column, every event
        assert seen[0][2] == "Pending"
    # A custom resource: the CRD's printer columns, nothing else, in the list and in the watch.
    sandbox.install_crd(widget_crd())
    create(sandbox, "widgets", widget("gear"), GROUP)
    async with kubectl.streaming("get", "widgets", "--watch-only") as stream:
        await sandbox.wait_for_watches(1, "widgets")
        rt = sandbox.registry.types[(GROUP, "widgets")]
        gear = sandbox.registry.get(rt, NS, "gear")
        sandbox.registry.update(rt, "v1", NS, "gear", {**gear, "status": {"phase": "Running"}}, "status")
        assert await next_line(stream) == ["NAME", "COLOR", "PHASE"]
        assert await next_line(stream) == ["gear", "blue", "Running"]


async def test_get_events_sorted_by_last_timestamp_lists_the_operators_events_in_order(
    client: KubeClient, kubectl: Kubectl
) -> None:
    subject = await client.create(CONFIGMAPS, {"metadata": {"name": "subject", "namespace": NS}})
    recorder = EventRecorder(client, "streams-job-controller", "operator-0")
    for reason in ("Submitted", "PodFailed", "Running"):
        await recorder.record(subject, "Normal", reason, f"{reason} happened")
        await asyncio.sleep(1.1)  # lastTimestamp has whole seconds
    await recorder.record(subject, "Normal", "Submitted", "Submitted happened")  # again: now the latest
    columns = "REASON:.reason,COUNT:.count,LAST:.lastTimestamp"
    _, out, _ = await kubectl.run(
        "get", "events", "--sort-by=.lastTimestamp", "-o", f"custom-columns={columns}", "--no-headers"
    )
    table = rows(out)
    assert [(r[0], r[1]) for r in table] == [("PodFailed", "1"), ("Running", "1"), ("Submitted", "2")]
    assert [r[2] for r in table] == sorted(r[2] for r in table)
    _, out, _ = await kubectl.run("get", "events", "--sort-by=.lastTimestamp")
    table = rows(out)
    assert table[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [r[2] for r in table[1:]] == ["PodFailed", "Running", "Submitted"]
    assert {r[3] for r in table[1:]} == {"configmap/subject"}


async def test_logs_of_a_running_pe_pod_and_exec_refused(sandbox: Sandbox, kubectl: Kubectl) -> None:
    labels = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "demo", "streams.ibm.com/pe": "4"}
    create(sandbox, "pods", pod("demo-4", **labels))
    await sandbox.settle()
    _, out, _ = await kubectl.run("logs", "demo-4")
    lines = out.splitlines()
    assert lines[0].startswith('sandbox kubelet: container "pe" started on node-')
    assert "pe 4 (job demo): connectivity Full" in lines
    async with kubectl.streaming("logs", "-f", "demo-4") as stream:
        seen = [await stream.readline() for _ in lines]
        assert [line.decode().rstrip("\n") for line in seen] == lines
        assert sandbox.cluster is not None
        sandbox.cluster.set_ready(NS, "demo-4", False)
        line = await asyncio.wait_for(stream.readline(), 15)
        assert line.decode() == "sandbox kubelet: not ready (readiness probe failing)\n"
    rc, _, err = await kubectl.run("exec", "demo-4", "--", "ls", ok=False)
    assert rc != 0
    assert "the streams-k8s sandbox runs no containers: it cannot exec into pod demo-4" in err
