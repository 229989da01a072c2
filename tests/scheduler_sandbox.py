"""A vreplica-scheduler deployment in the sandbox, driven and inspected over HTTP.

Vpods are `Consumer` custom resources (`spec.vreplicas`, `status.placements`) defined here;
the StatefulSet `pool` holds them. The component runs under a real Manager talking to the
sandbox API server; tests read everything back through the API, never from the component.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import PODS, STATEFULSETS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox
from streams_k8s.scheduler import UNSCHEDULABLE_ANNOTATION, Policy, default_registry, policy_from_configmap
from streams_k8s.scheduler.kubernetes import (
    CustomResourceVPodSource,
    Evictor,
    SchedulerConfig,
    VReplicaScheduler,
)

GROUP = "scheduling.test.streams.ibm.com"
CONSUMERS = Resource(GROUP, "v1", "consumers", "Consumer")
NAMESPACE = "default"
POOL = "pool"
UNREACHABLE = "node.kubernetes.io/unreachable"


# The shipped eventing-kafka scheduler profile (EvenPodSpread as a weight-2 priority), in the
# seed's ConfigMap form.
HA = policy_from_configmap(
    {
        "predicates": json.dumps([{"Name": "PodFitsResources"}]),
        "priorities": json.dumps(
            [
                {"Name": "AvailabilityZonePriority", "Weight": 10, "Args": '{"MaxSkew": 2}'},
                {"Name": "LowestOrdinalPriority", "Weight": 2},
                {"Name": "EvenPodSpread", "Weight": 2, "Args": '{"MaxSkew": 2}'},
            ]
        ),
    },
    default_registry(),
)


def consumer_crd() -> dict[str, Any]:
    lax = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"consumers.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "consumers", "singular": "consumer", "kind": "Consumer"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    # The spec is lax on purpose: bad vreplicas must reach the scheduler.
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": lax, "status": lax}}
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def statefulset(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": POOL, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "serviceName": POOL,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": POOL}},
            "template": {
                "metadata": {"labels": {"app": POOL}},
                "spec": {
                    "containers": [{"name": "consumer", "image": "example.com/consumer:1"}],
                    # As the admission defaults do (for 300 s): a pod stays bound to a lost node.
                    "tolerations": [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}],
                },
            },
        },
    }


class Deployment:
    """The sandbox, an API client, and (once started) the Manager running the component."""

    def __init__(self, sandbox: Sandbox, client: KubeClient) -> None:
        self.sandbox = sandbox
        self.client = client
        self.manager: Manager | None = None
        self.component: VReplicaScheduler | None = None
        self._task: asyncio.Task[int] | None = None

    @property
    def cluster(self) -> Any:
        assert self.sandbox.cluster is not None
        return self.sandbox.cluster

    def lose(self, nodes: set[str]) -> None:
        """These nodes become unreachable at once (NoSchedule and NoExecute `UNREACHABLE` taints
        written in one step, as one event each): the scheduler never sees a zone half lost."""
        registry = self.sandbox.registry
        rt = registry.types[("", "nodes")]
        for name in sorted(nodes):
            node = registry.get(rt, None, name)
            taints = [t for t in node["spec"].get("taints") or () if t.get("key") != UNREACHABLE]
            taints += [{"key": UNREACHABLE, "effect": effect} for effect in ("NoSchedule", "NoExecute")]
            registry.update(rt, "v1", None, name, {**node, "spec": {**node["spec"], "taints": taints}})

    # -- setup ---------------------------------------------------------------------------------

    async def start(
        self,
        policy: Policy | str,
        *,
        capacity: int = 4,
        refresh_period: float = 3600.0,
        evictor: Evictor | None = None,
        is_leader: Callable[[], bool] | None = None,
        source: CustomResourceVPodSource | None = None,
        identity: str = "scheduler-test",
        leader_election: bool = False,
    ) -> VReplicaScheduler:
        settings = RuntimeSettings(
            kubeconfig=str(self.sandbox.kubeconfig_path),
            namespace=NAMESPACE,
            bind_address="127.0.0.1",
            health_port=0,
            metrics_port=0,
            leader_election=leader_election,
            identity=identity,
            lease_name="vreplica-scheduler-pool",
            lease_duration=3.0,
            renew_deadline=2.0,
            retry_period=0.5,
            backoff_initial=0.05,
            backoff_max=0.5,
            shutdown_grace=2.0,
        )
        self.manager = Manager(settings)
        await self.manager.connect()
        config = SchedulerConfig(
            NAMESPACE,
            POOL,
            capacity,
            policy,
            refresh_period=refresh_period,
            pod_label_selector=f"app={POOL}",
        )
        source = source or CustomResourceVPodSource(CONSUMERS, namespace=NAMESPACE)
        self.component = VReplicaScheduler(self.manager, config, source, evictor=evictor, is_leader=is_leader)
        self._task = asyncio.create_task(self.manager.run(handle_signals=False))
        return self.component

    async def stop(self) -> None:
        if self.manager is not None and self._task is not None:
            self.manager.stop()
            assert await self._task == 0
            self._task = None

    async def create_pool(self, replicas: int) -> None:
        """The StatefulSet, with all its pods running before any vpod exists."""
        await self.client.create(STATEFULSETS, statefulset(replicas))
        await self.until(lambda: self.running_pods(replicas))

    async def running_pods(self, count: int) -> bool:
        pods = await self.pods()
        return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods.values())

    async def create_consumer(self, name: str, vreplicas: Any) -> None:
        body = {
            "apiVersion": CONSUMERS.api_version,
            "kind": "Consumer",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"vreplicas": vreplicas},
        }
        await self.client.create(CONSUMERS, body)

    async def set_vreplicas(self, name: str, vreplicas: Any) -> None:
        await self.client.patch(CONSUMERS, name, {"spec": {"vreplicas": vreplicas}}, NAMESPACE)

    # -- reading back --------------------------------------------------------------------------

    async def consumers(self) -> dict[str, dict[str, Any]]:
        items, _ = await self.client.list_all(CONSUMERS, NAMESPACE)
        return {item["metadata"]["name"]: item for item in items}

    async def placements(self) -> dict[str, dict[str, int]]:
        """Consumer -> pod -> vreplicas, from the consumers' status."""
        return {
            name: {p["podName"]: p["vreplicas"] for p in (obj.get("status") or {}).get("placements") or []}
            for name, obj in (await self.consumers()).items()
        }

    async def pods(self) -> dict[str, dict[str, Any]]:
        items, _ = await self.client.list_all(PODS, NAMESPACE, label_selector=f"app={POOL}")
        return {
            item["metadata"]["name"]: item for item in items if not item["metadata"].get("deletionTimestamp")
        }

    async def replicas(self) -> int:
        obj = await self.client.get(STATEFULSETS, POOL, NAMESPACE)
        return int(obj["spec"]["replicas"])

    async def node_of(self) -> dict[str, str]:
        return {name: pod["spec"].get("nodeName") or "" for name, pod in (await self.pods()).items()}

    async def marked(self) -> set[str]:
        return {
            name
            for name, pod in (await self.pods()).items()
            if UNSCHEDULABLE_ANNOTATION in (pod["metadata"].get("annotations") or {})
        }

    async def condition(self, name: str) -> dict[str, Any] | None:
        obj = await self.client.get(CONSUMERS, name, NAMESPACE)
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Scheduled":
                return dict(cond)
        return None

    async def all_placed(self, capacity: int) -> bool:
        """Every consumer fully placed on existing pods, no pod over capacity."""
        consumers = await self.consumers()
        pods = await self.pods()
        used: dict[str, int] = {}
        for obj in consumers.values():
            placed = {p["podName"]: p["vreplicas"] for p in (obj.get("status") or {}).get("placements") or []}
            if sum(placed.values()) != obj["spec"]["vreplicas"] or not set(placed) <= set(pods):
                return False
            for pod, n in placed.items():
                used[pod] = used.get(pod, 0) + n
        return all(n <= capacity for n in used.values())

    async def until(self, check: Callable[[], Any], within: float = 20.0, every: float = 0.05) -> None:
        """Wait until the (async) check holds."""
        async with asyncio.timeout(within):
            while True:
                if await check():
                    return
                await asyncio.sleep(every)


async def get_or_none(client: KubeClient, resource: Resource, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, NAMESPACE)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise
