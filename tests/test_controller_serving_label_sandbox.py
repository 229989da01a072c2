"""The leader labels its own pod `streams.ibm.com/serving=true` (what `streams-api` selects) and
takes the label off every other operator pod."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from k8s_support import eventually_async
from operator_support import operator
from streams_k8s.controller.operator import SERVING_LABEL
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import PODS
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def operator_pod(name: str, **extra_labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app.kubernetes.io/name": "streams-k8s-operator", **extra_labels},
        },
        "spec": {"containers": [{"name": "controller", "image": "streams-k8s"}]},
    }


@pytest.mark.sandbox(nodes=1)
async def test_the_leader_takes_the_serving_label(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await client.create(PODS, operator_pod("operator-a"))
    await client.create(PODS, operator_pod("operator-b", **{SERVING_LABEL: "true"}))  # the former leader
    monkeypatch.setenv("POD_NAME", "operator-a")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):

        async def moved() -> bool:
            a = await client.get(PODS, "operator-a", "default")
            b = await client.get(PODS, "operator-b", "default")
            return (
                a["metadata"]["labels"].get(SERVING_LABEL) == "true"
                and SERVING_LABEL not in b["metadata"]["labels"]
            )

        await eventually_async(moved, within=10)
