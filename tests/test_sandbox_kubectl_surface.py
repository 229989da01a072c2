"""What a user sees through a real `kubectl`, on the sandbox and on the real control plane
(`api_server_fixtures`): every row of long lists (with and without --chunk-size), `get -w` columns
after changes, the operator's Events sorted by lastTimestamp; and, on the sandbox alone (its
simulated kubelet runs the pods), `logs` of a running pod and exec answered with why it cannot work."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api_server import ROOT_CA, ApiServer
from kubectl_support import KUBECTL, MISSING, Kubectl
from sandbox_crds import WIDGETS, widget
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox

pytest_plugins = ["api_server_fixtures"]
pytestmark = pytest.mark.skipif(KUBECTL is None, reason=MISSING)

NS = "default"  # the sandbox-only tests
CMS = "/api/v1/namespaces/{namespace}/configmaps"
PODS = "/api/v1/namespaces/{namespace}/pods"


@pytest.fixture
def kubectl(api_server: ApiServer, tmp_path: Path) -> Kubectl:
    return Kubectl(api_server.kubeconfig, tmp_path)


@pytest.fixture
async def client(api_server: ApiServer) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(api_server.kubeconfig)) as c:
        yield c


async def create(api: ApiServer, path: str, *bodies: dict[str, Any]) -> None:
    """Create `bodies` at `path` (`{namespace}` the test's), a few at a time."""
    gate = asyncio.Semaphore(16)

    async def one(body: dict[str, Any]) -> None:
        async with gate:
            status, answer = await api.call("POST", path.format(namespace=api.namespace), body)
            assert status == 201, answer

    await asyncio.gather(*(one(body) for body in bodies))


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


async def test_get_shows_every_row_of_a_long_list(api_server: ApiServer, kubectl: Kubectl) -> None:
    pages = [{"metadata": {"name": f"cm-{i:03d}", "labels": {"page": "yes"}}} for i in range(600)]
    await create(api_server, CMS, *pages)  # kubectl pages by 500
    _, out, _ = await kubectl.run("get", "configmaps")
    table = [row for row in rows(out) if row[0] != ROOT_CA]
    assert table[0] == ["NAME", "DATA", "AGE"]
    assert [r[0] for r in table[1:]] == [f"cm-{i:03d}" for i in range(600)]
    _, out, _ = await kubectl.run("get", "configmaps", "--chunk-size=7", "-l", "page=yes,k!=v")
    assert len(rows(out)) == 601
    await create(api_server, PODS, *(pod(f"p-{i}") for i in range(8)))
    _, out, _ = await kubectl.run("get", "pods", "--chunk-size=2")
    assert [r[0] for r in rows(out)[1:]] == [f"p-{i}" for i in range(8)]


async def test_get_watch_prints_every_column_of_each_pods_change(sandbox: Sandbox, tmp_path: Path) -> None:
    """Sandbox only: its simulated kubelet moves the pods to Running."""
    kubectl = Kubectl(sandbox.kubeconfig_path, tmp_path)
    pods = f"/api/v1/namespaces/{NS}/pods"
    api = ApiServer("sandbox", sandbox.url, sandbox.kubeconfig_path, NS, None, sandbox)
    await create(api, pods, pod("first"))
    await sandbox.settle()
    async with kubectl.streaming("get", "pods", "-w") as stream:
        assert await next_line(stream) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert (await next_line(stream))[:4] == ["first", "1/1", "Running", "0"]
        await create(api, pods, pod("second"))
        seen = [await next_line(stream) for _ in range(2)]
        while seen[-1][:3] != ["second", "1/1", "Running"]:
            seen.append(await next_line(stream))
        assert all(len(line) == 5 and line[0] == "second" for line in seen)  # every column, every event
        assert seen[0][2] == "Pending"


@pytest.mark.usefixtures("widgets_served")
async def test_get_watch_prints_a_custom_resources_printer_columns(
    api_server: ApiServer, kubectl: Kubectl
) -> None:
    """The CRD's printer columns, nothing else, in the list and in the watch."""
    await create(api_server, WIDGETS, widget("gear"))
    async with kubectl.streaming("get", "widgets", "-w") as stream:
        assert await next_line(stream) == ["NAME", "COLOR", "PHASE"]
        assert await next_line(stream) == ["gear", "blue"]  # no phase yet; listed: the watch is next
        status = {"status": {"phase": "Running"}}
        path = f"{WIDGETS.format(namespace=api_server.namespace)}/gear/status"
        async with (
            api_server.session() as http,
            http.patch(
                api_server.url + path, json=status, headers={"Content-Type": "application/merge-patch+json"}
            ) as answer,
        ):
            assert answer.status == 200
        assert await next_line(stream) == ["gear", "blue", "Running"]


async def next_second() -> None:
    """Until the clock shows the next whole second: lastTimestamp has whole seconds."""
    now = time.time()
    await asyncio.sleep(math.floor(now) + 1.001 - now)


async def test_get_events_sorted_by_last_timestamp_lists_the_operators_events_in_order(
    api_server: ApiServer, client: KubeClient, kubectl: Kubectl
) -> None:
    ns = api_server.namespace
    subject = await client.create(CONFIGMAPS, {"metadata": {"name": "subject", "namespace": ns}})
    recorder = EventRecorder(client, "streams-job-controller", "operator-0")
    for reason in ("Submitted", "PodFailed", "Running"):
        await recorder.record(subject, "Normal", reason, f"{reason} happened")
        await next_second()
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


async def test_logs_of_a_running_pe_pod_and_exec_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    """Sandbox only: the logs are its simulated kubelet's and PE runtime's."""
    kubectl = Kubectl(sandbox.kubeconfig_path, tmp_path)
    labels = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "demo", "streams.ibm.com/pe": "4"}
    api = ApiServer("sandbox", sandbox.url, sandbox.kubeconfig_path, NS, None, sandbox)
    await create(api, f"/api/v1/namespaces/{NS}/pods", pod("demo-4", **labels))
    await sandbox.settle()
    _, out, _ = await kubectl.run("logs", "demo-4")
    lines = out.splitlines()
    assert lines[0].startswith('sandbox kubelet: container "pe" started on node-')
    assert "pe 4 (job demo): connectivity Full" in lines
    async with kubectl.streaming("logs", "-f", "demo-4") as stream:
        seen = [await stream.readline() for _ in lines]
        assert [line.decode().rstrip("\n") for line in seen] == lines
        assert sandbox.cluster is not None
        await sandbox.cluster.set_ready(NS, "demo-4", False)
        line = await asyncio.wait_for(stream.readline(), 15)
        assert line.decode() == "sandbox kubelet: not ready (readiness probe failing)\n"
    rc, _, err = await kubectl.run("exec", "demo-4", "--", "ls", ok=False)
    assert rc != 0
    assert "the streams-k8s sandbox runs no containers: it cannot exec into pod demo-4" in err
