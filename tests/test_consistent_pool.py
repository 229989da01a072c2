"""The pool scheduler's configuration: its manifests, its settings, and ConfigMap policies."""

from __future__ import annotations

import asyncio
import importlib
import json
from typing import Any

import pytest

from cr_cluster import NAMESPACE, REGION_OPERATORS, JobWorld, region_spec
from k8s_support import eventually_async, sandbox_runtime
from streams_k8s.consistent.pool import PoolSettings, setup
from streams_k8s.consistent.pool_manifests import POOL_NAME, coordinator_pool, pool_scheduler
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.kinds import STATEFULSETS
from streams_k8s.k8s.manager import Manager
from streams_k8s.sandbox import Sandbox
from streams_k8s.scheduler.kubernetes import SetupError

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
# A profile that spreads each job's regions over zones and pods (the seed's ConfigMap form).
SPREAD = {
    "predicates": json.dumps([{"Name": "PodFitsResources"}]),
    "priorities": json.dumps(
        [
            {"Name": "AvailabilityZonePriority", "Weight": 10, "Args": '{"MaxSkew": 1}'},
            {"Name": "EvenPodSpread", "Weight": 5, "Args": '{"MaxSkew": 1}'},
            {"Name": "LowestOrdinalPriority", "Weight": 1},
        ]
    ),
}


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["kind"]: obj for obj in objects}


def test_the_rendered_scheduler_runs_the_pool_component_with_its_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    objects = by_kind(
        pool_scheduler(namespace="team", image="img:1", capacity=8, scheduler_configmap="spread")
    )
    assert set(objects) == {
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
    }
    container = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    module, _, attribute = container["args"][container["args"].index("--controller") + 1].partition(":")
    assert getattr(importlib.import_module(module), attribute) is setup
    for variable in container["env"]:
        if "value" in variable:
            monkeypatch.setenv(variable["name"], variable["value"])
    settings = PoolSettings()  # type: ignore[call-arg]  # from the rendered environment
    assert (settings.namespace, settings.statefulset, settings.capacity) == ("team", POOL_NAME, 8)
    assert settings.scheduler_configmap == "spread"
    assert settings.descheduler_configmap is None
    granted = {
        (g, r) for rule in objects["Role"]["rules"] for g in rule["apiGroups"] for r in rule["resources"]
    }
    assert {("apps", "statefulsets/scale"), ("streams.ibm.com", "streamscros/status")} <= granted
    with pytest.raises(ValueError, match="at least one region"):
        pool_scheduler(namespace="team", image="img:1", capacity=0)


async def start_scheduler(sb: Sandbox, settings: PoolSettings | None = None) -> Manager:
    runtime = sandbox_runtime(sb, shutdown_grace=1.0)
    manager = Manager(runtime)
    await manager.connect()
    await setup(manager, settings)
    return manager


async def test_bad_settings_and_bad_policies_stop_the_start_with_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STREAMS_K8S_CR_POOL_NAMESPACE", raising=False)
    async with Sandbox() as sb, await KubeClient.connect(str(sb.kubeconfig_path)) as client:
        with pytest.raises(SetupError, match="^STREAMS_K8S_CR_POOL_NAMESPACE: Field required$"):
            await start_scheduler(sb)
        bad = {"predicates": "[]", "priorities": json.dumps([{"Name": "NoSuchPriority", "Weight": 1}])}
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": bad}
        await client.create(CONFIGMAPS, configmap, NAMESPACE)
        with pytest.raises(SetupError, match="policy ConfigMap default/bad: .*NoSuchPriority"):
            await start_scheduler(
                sb, PoolSettings(namespace=NAMESPACE, capacity=4, scheduler_configmap="bad")
            )
        with pytest.raises(SetupError, match="policy ConfigMap default/absent"):
            await start_scheduler(
                sb, PoolSettings(namespace=NAMESPACE, capacity=4, scheduler_configmap="absent")
            )


@pytest.mark.sandbox(nodes=3, zones=["z0", "z1", "z2"])
async def test_a_configmap_policy_spreads_a_jobs_regions_and_dedicated_jobs_are_not_placed(
    sandbox: Sandbox,
) -> None:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as client:
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "spread"}, "data": SPREAD}
        await client.create(CONFIGMAPS, configmap, NAMESPACE)
        await client.create(STATEFULSETS, coordinator_pool(namespace=NAMESPACE, image="img:1", replicas=3))
        regions = {i: region_spec(i, [i + 1]) for i in range(3)}
        spread = JobWorld(client, "spread", regions, mode="shared")
        dedicated = JobWorld(client, "alone", regions, mode="dedicated")
        await spread.create()
        await dedicated.create()
        settings = PoolSettings(namespace=NAMESPACE, capacity=4, scheduler_configmap="spread")
        manager = await start_scheduler(sandbox, settings)
        task = asyncio.create_task(manager.run(handle_signals=False))
        try:

            async def placed() -> dict[str, int]:
                obj = await client.get(REGION_OPERATORS, spread.operator_name, NAMESPACE)
                return {
                    p["podName"]: p["vreplicas"] for p in (obj.get("status") or {}).get("placements") or []
                }

            async def one_region_per_pod() -> bool:
                return await placed() == {f"{POOL_NAME}-{i}": 1 for i in range(3)}

            await eventually_async(one_region_per_pod, within=20)
            alone = await client.get(REGION_OPERATORS, dedicated.operator_name, NAMESPACE)
            assert not (alone.get("status") or {}).get("placements")
        finally:
            manager.stop()
            await task
