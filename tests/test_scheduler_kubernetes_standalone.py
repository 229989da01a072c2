"""The component configured from the environment, as `streams-k8s run --controller ...:setup` runs it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from scheduler_sandbox import GROUP, NAMESPACE, Deployment, consumer_crd
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox
from streams_k8s.scheduler.kubernetes import SetupError, setup
from streams_k8s.scheduler.kubernetes.standalone import CONFIGMAPS

pytestmark = pytest.mark.sandbox(nodes=3, zones=["z0", "z1", "z2"])

ENV = {
    "STREAMS_K8S_VREPLICA_NAMESPACE": NAMESPACE,
    "STREAMS_K8S_VREPLICA_STATEFULSET": "pool",
    "STREAMS_K8S_VREPLICA_CAPACITY": "4",
    "STREAMS_K8S_VREPLICA_VPODS": f"{GROUP}/v1/consumers",
    "STREAMS_K8S_VREPLICA_SCHEDULER_CONFIGMAP": "config-scheduler",
}
POLICY = {
    "predicates": json.dumps([{"Name": "PodFitsResources"}]),
    "priorities": json.dumps(
        [
            {"Name": "AvailabilityZonePriority", "Weight": 10, "Args": '{"MaxSkew": 2}'},
            {"Name": "LowestOrdinalPriority", "Weight": 2},
        ]
    ),
}


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    sandbox.install_crd(consumer_crd())
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def manager_for(sandbox: Sandbox) -> Manager:
    return Manager(
        RuntimeSettings(
            kubeconfig=str(sandbox.kubeconfig_path),
            bind_address="127.0.0.1",
            health_port=0,
            metrics_port=0,
            leader_election=False,
            shutdown_grace=2.0,
        )
    )


async def configmap(client: KubeClient, data: dict[str, str]) -> None:
    body = {"metadata": {"name": "config-scheduler", "namespace": NAMESPACE}, "data": data}
    await client.create(CONFIGMAPS, body)


async def test_setup_from_the_environment_schedules_with_the_configmap_policy(
    sandbox: Sandbox, client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    await configmap(client, POLICY)
    deployment = Deployment(sandbox, client)
    await deployment.create_pool(3)
    await deployment.create_consumer("a", 3)
    manager = manager_for(sandbox)
    await manager.connect()
    component = await setup(manager)
    assert component.config.policy != "MAXFILLUP"
    task = asyncio.create_task(manager.run(handle_signals=False))
    try:
        await deployment.until(lambda: deployment.all_placed(4))
        # The zone priority spreads the three vreplicas over the three zones.
        assert await deployment.placements() == {"a": {"pool-0": 1, "pool-1": 1, "pool-2": 1}}
    finally:
        manager.stop()
        assert await task == 0


@pytest.mark.parametrize(
    ("env", "data", "message"),
    [
        ({"STREAMS_K8S_VREPLICA_CAPACITY": "0"}, POLICY, "STREAMS_K8S_VREPLICA_CAPACITY: Input should be"),
        ({"STREAMS_K8S_VREPLICA_VPODS": "consumers"}, POLICY, "STREAMS_K8S_VREPLICA_VPODS: String should"),
        (
            {},
            {"predicates": "[]", "priorities": json.dumps([{"Name": "LowestOrdinalPriority", "Weight": 11}])},
            "policy ConfigMap default/config-scheduler: priorities[0] LowestOrdinalPriority: weight 11",
        ),
        (
            {"STREAMS_K8S_VREPLICA_SCHEDULER_CONFIGMAP": "absent"},
            POLICY,
            "policy ConfigMap default/absent: 404",
        ),
    ],
)
async def test_setup_refuses_bad_configuration(
    sandbox: Sandbox,
    client: KubeClient,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    data: dict[str, str],
    message: str,
) -> None:
    for name, value in {**ENV, **env}.items():
        monkeypatch.setenv(name, value)
    await configmap(client, data)
    manager = manager_for(sandbox)
    await manager.connect()
    try:
        with pytest.raises(SetupError) as caught:
            await setup(manager)
        assert str(caught.value).startswith(message)
    finally:
        await manager.client.close()


async def test_the_run_verb_reports_a_bad_setup_in_one_line(sandbox: Sandbox) -> None:
    env = {**os.environ, **ENV, "STREAMS_K8S_VREPLICA_CAPACITY": "many"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from streams_k8s.cli import main; main()",
        "run",
        "--kubeconfig",
        str(sandbox.kubeconfig_path),
        "--health-port",
        "0",
        "--metrics-port",
        "0",
        "--controller",
        "streams_k8s.scheduler.kubernetes:setup",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode != 0
    text = stderr.decode()
    assert "Traceback" not in text
    reason = (
        "Error: cannot start: STREAMS_K8S_VREPLICA_CAPACITY: "
        "Input should be a valid integer, unable to parse string as an integer"
    )
    assert text.strip() == reason
