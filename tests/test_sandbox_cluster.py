"""The simulated cluster behind the sandbox: scheduling rules, kubelet phases, StatefulSet and
Deployment controllers, Services and Endpoints, node operations. Objects are created over HTTP
with kubernetes_asyncio's typed APIs, as a controller would."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, AppsV1Api, CoreV1Api

from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.nodes import NodeSpec

ZONES = [NodeSpec("a1", zone="za"), NodeSpec("a2", zone="za"), NodeSpec("b1", zone="zb")]


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"}], **spec},
    }


async def create_pods(api: ApiClient, *pods: dict[str, Any]) -> None:
    core = CoreV1Api(api)
    for body in pods:
        await core.create_namespaced_pod("default", body)


def get(sandbox: Sandbox, name: str, resource: str = "pods", group: str = "") -> dict[str, Any]:
    return sandbox.registry.get(sandbox.registry.types[(group, resource)], "default", name)


def scheduled(sandbox: Sandbox, name: str) -> dict[str, Any]:
    conditions = get(sandbox, name)["status"].get("conditions") or []
    return next(c for c in conditions if c["type"] == "PodScheduled")


def anti_affinity(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


async def test_bound_pod_runs_with_ip_and_ready(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await create_pods(sandbox_api, pod("runner"))
    await sandbox.settle()
    running = await CoreV1Api(sandbox_api).read_namespaced_pod("runner", "default")
    assert running.status.phase == "Running"
    assert running.spec.node_name.startswith("node-")
    assert running.status.pod_ip.startswith("10.244.")
    ready = {c.type: c.status for c in running.status.conditions}
    assert ready["Ready"] == "True"
    assert ready["PodScheduled"] == "True"


@pytest.mark.sandbox(nodes=ZONES)
async def test_required_anti_affinity_never_lands_beside_its_peer(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    zone = "topology.kubernetes.io/zone"
    await create_pods(
        sandbox_api,
        *[pod(f"db-{i}", {"app": "db"}, affinity=anti_affinity("db", zone)) for i in range(3)],
    )
    await sandbox.settle()
    placed = {get(sandbox, f"db-{i}")["spec"].get("nodeName") for i in range(3)}
    zones_used = {n.zone for n in ZONES if n.name in placed}
    assert zones_used == {"za", "zb"}  # two zones, two pods; the third cannot go anywhere
    pending = [i for i in range(3) if not get(sandbox, f"db-{i}")["spec"].get("nodeName")]
    assert len(pending) == 1
    condition = scheduled(sandbox, f"db-{pending[0]}")
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert "anti-affinity" in condition["message"]


async def test_pod_affinity_follows_its_peer(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    term = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}
    await create_pods(sandbox_api, pod("cache", {"app": "cache"}))
    await sandbox.settle()
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    await create_pods(sandbox_api, *[pod(f"web-{i}", affinity=affinity) for i in range(3)])
    await sandbox.settle()
    cache_node = get(sandbox, "cache")["spec"]["nodeName"]
    assert {get(sandbox, f"web-{i}")["spec"]["nodeName"] for i in range(3)} == {cache_node}


async def test_pod_requiring_an_absent_node_label_stays_pending_with_a_reason(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    await create_pods(
        sandbox_api, pod("needs-gpu", affinity=affinity), pod("selector", nodeSelector={"disk": "ssd"})
    )
    await sandbox.settle()
    for name in ("needs-gpu", "selector"):
        stuck = get(sandbox, name)
        assert stuck["status"]["phase"] == "Pending"
        assert "nodeName" not in stuck["spec"]
        condition = scheduled(sandbox, name)
        assert condition["reason"] == "Unschedulable"
        assert (
            condition["message"]
            == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
        )


async def test_labelled_node_added_later_takes_the_waiting_pod(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    await create_pods(sandbox_api, pod("waiting", nodeSelector={"disk": "ssd"}))
    await sandbox.settle()
    assert sandbox.cluster is not None
    await sandbox.cluster.add_node(NodeSpec("fast", labels={"disk": "ssd"}))
    await sandbox.settle()
    assert get(sandbox, "waiting")["spec"]["nodeName"] == "fast"


@pytest.mark.sandbox(
    nodes=[NodeSpec("tainted", taints=[{"key": "dedicated", "value": "streams", "effect": "NoSchedule"}])]
)
async def test_tainted_node_gets_only_tolerating_pods(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    toleration = {"key": "dedicated", "operator": "Equal", "value": "streams", "effect": "NoSchedule"}
    await create_pods(sandbox_api, pod("plain"), pod("tolerant", tolerations=[toleration]))
    await sandbox.settle()
    assert get(sandbox, "tolerant")["spec"]["nodeName"] == "tainted"
    assert "nodeName" not in get(sandbox, "plain")["spec"]
    assert "untolerated taint {dedicated: streams}" in scheduled(sandbox, "plain")["message"]


async def test_cordoned_node_gets_no_new_pods(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    assert sandbox.cluster is not None
    await sandbox.cluster.cordon("node-0")
    await sandbox.cluster.cordon("node-1")
    await create_pods(sandbox_api, *[pod(f"p{i}") for i in range(4)])
    await sandbox.settle()
    assert {get(sandbox, f"p{i}")["spec"]["nodeName"] for i in range(4)} == {"node-2"}
    await sandbox.cluster.cordon("node-2")
    await create_pods(sandbox_api, pod("late"))
    await sandbox.settle()
    assert "3 node(s) were unschedulable" in scheduled(sandbox, "late")["message"]


@pytest.mark.sandbox(nodes=[NodeSpec("small", cpu="1", memory="1Gi")])
async def test_resource_requests_are_honoured(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    def sized(name: str, cpu: str) -> dict[str, Any]:
        body = pod(name)
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": "100Mi"}}
        return body

    await create_pods(sandbox_api, sized("half", "500m"), sized("more", "600m"))
    await sandbox.settle()
    assert get(sandbox, "half")["spec"]["nodeName"] == "small"
    assert "Insufficient cpu" in scheduled(sandbox, "more")["message"]


async def test_container_exit_follows_restart_policy(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await create_pods(
        sandbox_api, pod("once", restartPolicy="Never"), pod("always"), pod("fails", restartPolicy="Never")
    )
    await sandbox.settle()
    assert sandbox.cluster is not None
    await sandbox.cluster.exit_container("default", "once", 0)
    await sandbox.cluster.exit_container("default", "fails", 1)
    await sandbox.cluster.kill_pod("default", "always")
    assert get(sandbox, "once")["status"]["phase"] == "Succeeded"
    assert get(sandbox, "fails")["status"]["phase"] == "Failed"
    restarted = get(sandbox, "always")["status"]
    assert restarted["phase"] == "Running"
    assert restarted["containerStatuses"][0]["restartCount"] == 1
    assert restarted["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137


async def test_eviction_and_graceful_deletion(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await create_pods(sandbox_api, pod("evicted"), pod("deleted"))
    await sandbox.settle()
    assert sandbox.cluster is not None
    await sandbox.cluster.evict_pod("default", "evicted")
    status = get(sandbox, "evicted")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    core = CoreV1Api(sandbox_api)
    await core.delete_namespaced_pod("deleted", "default")
    await sandbox.settle()
    assert sandbox.registry.find(sandbox.registry.types[("", "pods")], "default", "deleted") is None
    events = [e.type for e in sandbox.history("pods", "deleted", "default")]
    assert events[-2:] == ["MODIFIED", "DELETED"]  # deletionTimestamp first, then gone


def statefulset(name: str, replicas: int, policy: str = "OrderedReady") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x:1"}]},
            },
        },
    }


async def test_statefulset_creates_ordinal_pods_and_scales(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    apps = AppsV1Api(sandbox_api)
    await apps.create_namespaced_stateful_set("default", statefulset("db", 3))
    await sandbox.settle()
    pods = await CoreV1Api(sandbox_api).list_namespaced_pod("default", label_selector="app=db")
    assert sorted(p.metadata.name for p in pods.items) == ["db-0", "db-1", "db-2"]
    assert all(p.spec.hostname == p.metadata.name and p.spec.subdomain == "db" for p in pods.items)
    sts = await apps.read_namespaced_stateful_set("db", "default")
    assert sts.status.ready_replicas == 3
    assert sts.status.observed_generation == 1
    await apps.patch_namespaced_stateful_set_scale("db", "default", {"spec": {"replicas": 1}})
    await sandbox.settle()
    pods = await CoreV1Api(sandbox_api).list_namespaced_pod("default", label_selector="app=db")
    assert [p.metadata.name for p in pods.items] == ["db-0"]
    await apps.delete_namespaced_stateful_set("db", "default")
    await sandbox.settle()
    assert (await CoreV1Api(sandbox_api).list_namespaced_pod("default")).items == []


async def test_statefulset_replaces_failed_pods(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await AppsV1Api(sandbox_api).create_namespaced_stateful_set("default", statefulset("q", 2, "Parallel"))
    await sandbox.settle()
    first_uid = get(sandbox, "q-1")["metadata"]["uid"]
    assert sandbox.cluster is not None
    await sandbox.cluster.fail_pod("default", "q-1")
    await sandbox.settle()
    replacement = get(sandbox, "q-1")
    assert replacement["metadata"]["uid"] != first_uid
    assert replacement["status"]["phase"] == "Running"


async def test_deployment_keeps_replicas_and_rolls_template_changes(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    body = statefulset("web", 2)
    body["kind"] = "Deployment"
    del body["spec"]["serviceName"], body["spec"]["podManagementPolicy"]
    apps = AppsV1Api(sandbox_api)
    await apps.create_namespaced_deployment("default", body)
    await sandbox.settle()
    pods = (await CoreV1Api(sandbox_api).list_namespaced_pod("default", label_selector="app=web")).items
    assert len(pods) == 2
    assert all(p.status.phase == "Running" for p in pods)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:2"}]}}}}
    await apps.patch_namespaced_deployment("web", "default", patch)
    await sandbox.settle()
    pods = (await CoreV1Api(sandbox_api).list_namespaced_pod("default", label_selector="app=web")).items
    assert [p.spec.containers[0].image for p in pods] == ["x:2", "x:2"]
    deployment = await apps.read_namespaced_deployment("web", "default")
    assert deployment.status.ready_replicas == 2
    assert deployment.status.observed_generation == 2


async def test_services_get_cluster_ips_and_endpoints(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    core = CoreV1Api(sandbox_api)
    ports = [{"name": "data", "port": 10000, "targetPort": 10000}]
    svc = {"metadata": {"name": "pe-1"}, "spec": {"selector": {"app": "pe"}, "ports": ports}}
    headless = {
        "metadata": {"name": "hl"},
        "spec": {"clusterIP": "None", "selector": {"app": "pe"}, "ports": ports},
    }
    created = await core.create_namespaced_service("default", svc)
    assert created.spec.cluster_ip.startswith("10.")
    assert (await core.create_namespaced_service("default", headless)).spec.cluster_ip == "None"
    await create_pods(sandbox_api, pod("pe-a", {"app": "pe"}), pod("pe-b", {"app": "pe"}))
    await sandbox.settle()
    endpoints = await core.read_namespaced_endpoints("pe-1", "default")
    assert sorted(a.target_ref.name for a in endpoints.subsets[0].addresses) == ["pe-a", "pe-b"]
    assert endpoints.subsets[0].ports[0].port == 10000
    assert sandbox.cluster is not None
    await sandbox.cluster.set_ready("default", "pe-a", False)
    await sandbox.settle()
    endpoints = await core.read_namespaced_endpoints("hl", "default")
    assert [a.target_ref.name for a in endpoints.subsets[0].not_ready_addresses] == ["pe-a"]


async def test_noexecute_taint_evicts_intolerant_pods(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await create_pods(sandbox_api, pod("victim", nodeName="node-1"))
    await sandbox.settle()
    assert sandbox.cluster is not None
    await sandbox.cluster.taint("node-1", "maintenance", "now", "NoExecute")
    await sandbox.settle()
    assert sandbox.registry.find(sandbox.registry.types[("", "pods")], "default", "victim") is None


@pytest.mark.sandbox(start_delay=0.2, termination_delay=0.2)
async def test_kubelet_delays_are_waited_for_by_settle(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await create_pods(sandbox_api, pod("slow"))
    await sandbox.settle()
    assert get(sandbox, "slow")["status"]["phase"] == "Running"
    await CoreV1Api(sandbox_api).delete_namespaced_pod("slow", "default")
    assert get(sandbox, "slow")["metadata"]["deletionTimestamp"]  # terminating for a while
    await sandbox.settle()
    assert sandbox.registry.find(sandbox.registry.types[("", "pods")], "default", "slow") is None


async def test_wait_for_an_object_state(sandbox: Sandbox, sandbox_api: ApiClient) -> None:
    await create_pods(sandbox_api, pod("awaited"))
    running = await sandbox.wait_for(
        "pods", "awaited", "default", lambda p: p is not None and p["status"].get("phase") == "Running"
    )
    assert running is not None
    assert running["status"]["podIP"]
    await CoreV1Api(sandbox_api).delete_namespaced_pod("awaited", "default")
    assert await sandbox.wait_for("pods", "awaited", "default", lambda p: p is None) is None
    with pytest.raises(TimeoutError):
        await sandbox.wait_for("pods", "never", "default", max_wait=0.1)


async def test_pod_on_a_missing_node_is_deleted_by_the_pod_gc(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    await create_pods(sandbox_api, pod("lost", nodeName="no-such-node"))
    await sandbox.settle()
    assert get(sandbox, "lost")["status"]["phase"] == "Pending"
    await CoreV1Api(sandbox_api).delete_namespaced_pod("lost", "default")
    assert await sandbox.wait_for("pods", "lost", "default", lambda p: p is None) is None


@pytest.mark.sandbox(termination_delay=0.2)
async def test_ordered_statefulset_scales_down_one_pod_at_a_time(
    sandbox: Sandbox, sandbox_api: ApiClient
) -> None:
    apps = AppsV1Api(sandbox_api)
    await apps.create_namespaced_stateful_set("default", statefulset("ord", 3))
    await sandbox.settle()
    await apps.patch_namespaced_stateful_set_scale("ord", "default", {"spec": {"replicas": 0}})
    await sandbox.wait_for(
        "pods", "ord-2", "default", lambda p: p is not None and "deletionTimestamp" in p["metadata"]
    )
    assert "deletionTimestamp" not in get(sandbox, "ord-1")["metadata"]  # waits for ord-2 to be gone
    await sandbox.settle()
    pods = await CoreV1Api(sandbox_api).list_namespaced_pod("default", label_selector="app=ord")
    assert pods.items == []
    gone_at = {
        pod: next(e.rv for e in sandbox.history("pods", pod, "default") if e.type == "DELETED")
        for pod in ("ord-0", "ord-1", "ord-2")
    }
    assert gone_at["ord-2"] < gone_at["ord-1"] < gone_at["ord-0"]  # highest ordinal first
