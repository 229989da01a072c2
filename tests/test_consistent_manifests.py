"""The objects the instance operator renders for a job's dedicated coordinator: their contract
(names, ports, labels, owner), that the sandbox accepts and runs them, and whom the
NetworkPolicy admits."""

from __future__ import annotations

from typing import Any

import pytest

from cr_cluster import coordinator_accounts
from k8s_support import eventually_async
from streams_k8s.api.consistent_region import ConsistentRegionOperator
from streams_k8s.consistent.coordinator_settings import CoordinatorSettings
from streams_k8s.consistent.kinds import REGION_OPERATORS
from streams_k8s.consistent.manifests import (
    coordinator_auth_delegation,
    coordinator_deployment,
    coordinator_network_policy,
    coordinator_rbac,
    coordinator_service,
)
from streams_k8s.consistent.pool_manifests import POOL_LABELS, coordinator_pool, pool_network_policy
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
SERVICES = Resource("", "v1", "services", "Service")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
PODS = Resource("", "v1", "pods", "Pod")
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet")


def operator(job: str = "trades", **spec: Any) -> ConsistentRegionOperator:
    return ConsistentRegionOperator.from_wire(
        {
            "metadata": {"name": job, "namespace": "ns", "uid": "cro-uid"},
            "spec": {"jobName": job, "jobUid": "job-uid", "numRegions": 2, **spec},
        }
    )


def admitted(policy: dict[str, Any], labels: dict[str, str], port: int, namespace: str | None = None) -> bool:
    """Whether a pod with ``labels`` (in the policy's namespace unless given) may reach ``port``."""

    def matches(selector: dict[str, Any], have: dict[str, str]) -> bool:
        return all(have.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())

    for rule in policy["spec"]["ingress"]:
        if not any(p["port"] == port for p in rule["ports"]):
            continue
        if not rule.get("from"):  # no peers listed: every source
            return True
        for peer in rule["from"]:
            namespaces = peer.get("namespaceSelector")
            in_namespace = (
                namespace is None
                if namespaces is None
                else matches(namespaces, {"kubernetes.io/metadata.name": namespace or "ns"})
            )
            if in_namespace and matches(peer.get("podSelector") or {}, labels):
                return True
    return False


def test_the_service_is_the_address_the_runtime_calls() -> None:
    service = coordinator_service(operator(), namespace="ns", generation=3)
    assert service["metadata"]["name"] == "streams-trades-consistentregion-api"
    assert service["spec"]["clusterIP"] == "None"
    ports = {(p["name"], p["port"], p["protocol"]) for p in service["spec"]["ports"]}
    assert ports == {("sys-api", 10000, "TCP"), ("sys-metrics", 9696, "TCP")}
    assert service["spec"]["selector"] == {
        "app": "streams",
        "streams.ibm.com/job": "trades",
        "streams.ibm.com/generation": "3",
        "svc": "consistent-region-operator",
    }
    assert service["metadata"]["ownerReferences"][0]["uid"] == "cro-uid"


def test_a_shared_mode_job_has_a_selectorless_service_and_no_deployment() -> None:
    shared = operator(mode="shared")
    service = coordinator_service(shared, namespace="ns", generation=1)
    assert "selector" not in service["spec"]
    assert service["metadata"]["name"] == "streams-trades-consistentregion-api"
    with pytest.raises(ValueError, match="shared coordinator pool"):
        coordinator_deployment(shared, namespace="ns", generation=1, image="i:1")


def test_the_deployment_runs_the_coordinator_command_of_this_package() -> None:
    deployment = coordinator_deployment(
        operator(logLevel="DEBUG", imagePullPolicy="Always", imagePullSecret="regcred"),
        namespace="ns",
        generation=3,
        image="registry/streams-k8s:1",
    )
    assert deployment["metadata"]["name"] == "trades-consistent-region-operator"
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "Always"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["STREAMS_K8S_LOG_LEVEL"] == "DEBUG"
    assert env["STREAMS_JOB_ID"] == "job-uid"
    assert env["NUM_CONSISTENT_REGIONS"] == "2"
    # The arguments (after the image's ENTRYPOINT) parse with the CLI's own settings.
    args = container["args"]
    assert args[0] == "coordinator"
    flags = dict(zip(args[1::2], args[2::2], strict=True))
    settings = CoordinatorSettings(mode=flags["--mode"], job=flags["--job"], namespace="ns")
    assert (settings.mode, settings.job) == ("dedicated", "trades")


def test_the_network_policy_admits_only_the_jobs_pes_and_the_instance_operator() -> None:
    policy = coordinator_network_policy(
        operator(),
        namespace="ns",
        generation=3,
        metrics_scrapers=[
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ],
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"]["streams.ibm.com/job"] == "trades"
    own_pe = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "trades"}
    other_pe = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "other"}
    instance_operator = {"app": "streams", "svc": "instance-operator"}
    assert admitted(policy, own_pe, 10000)
    assert not admitted(policy, own_pe, 9696)
    assert not admitted(policy, other_pe, 10000)
    assert not admitted(policy, {"app": "curl"}, 10000)
    assert admitted(policy, instance_operator, 10000)
    assert admitted(policy, instance_operator, 9696)
    assert admitted(policy, {"app": "prometheus"}, 9696, namespace="monitoring")
    assert not admitted(policy, {"app": "prometheus"}, 10000, namespace="monitoring")


def test_the_rbac_covers_the_coordinators_calls() -> None:
    objects = coordinator_rbac("ns")
    assert [o["kind"] for o in objects] == ["ServiceAccount", "Role", "RoleBinding"]
    rules = objects[1]["rules"]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    assert {("streamscrs/status", "patch"), ("streamscros/status", "patch"), ("pods", "watch")} <= granted
    # a shared job's runner is published as an EndpointSlice, never as core Endpoints
    slices = next(rule for rule in rules if "endpointslices" in rule["resources"])
    assert slices["apiGroups"] == ["discovery.k8s.io"]
    assert not any(r == "endpoints" for rule in rules for r in rule["resources"])
    assert coordinator_auth_delegation("ns")["roleRef"]["name"] == "system:auth-delegator"


def test_a_cro_read_locally_without_uid_is_refused() -> None:
    bare = ConsistentRegionOperator.from_wire(
        {"metadata": {"name": "j"}, "spec": {"jobName": "j", "jobUid": "u", "numRegions": 1}}
    )
    with pytest.raises(ValueError, match="name and uid"):
        coordinator_service(bare, namespace="ns", generation=1)


async def test_the_sandbox_runs_the_deployment_behind_the_service_and_collects_them_with_the_job() -> None:
    async with Sandbox() as sb, await KubeClient.connect(str(sb.kubeconfig_path)) as client:
        await coordinator_accounts(client)  # the pod runs the coordinator, as its service account
        created = await client.create(
            REGION_OPERATORS,
            {
                "apiVersion": "streams.ibm.com/v1",
                "kind": "ConsistentRegionOperator",
                "metadata": {"name": "trades", "namespace": "default"},
                "spec": {"jobName": "trades", "jobUid": "job-uid", "numRegions": 1},
            },
        )
        cro = ConsistentRegionOperator.from_wire(created)
        await client.create(
            DEPLOYMENTS, coordinator_deployment(cro, namespace="default", generation=1, image="i:1")
        )
        await client.create(SERVICES, coordinator_service(cro, namespace="default", generation=1))

        async def endpoint_ready() -> bool:
            try:
                endpoints = await client.get(ENDPOINTS, "streams-trades-consistentregion-api", "default")
            except Exception:
                return False
            return any(subset.get("addresses") for subset in endpoints.get("subsets") or ())

        await eventually_async(endpoint_ready, within=10)
        await client.delete(REGION_OPERATORS, "trades", "default")

        async def collected() -> bool:
            deployments, _ = await client.list_all(DEPLOYMENTS, "default")
            services, _ = await client.list_all(SERVICES, "default")
            return not deployments and not any(
                s["metadata"]["name"].startswith("streams-trades") for s in services
            )

        await eventually_async(collected, within=10)


def test_the_pool_network_policy_admits_consistent_region_pes_of_the_namespace() -> None:
    policy = pool_network_policy(namespace="ns")
    cr_pe = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "any", "streams.ibm.com/cr": "true"}
    plain_pe = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "any", "streams.ibm.com/cr": "false"}
    assert admitted(policy, cr_pe, 10000)
    assert not admitted(policy, plain_pe, 10000)
    assert not admitted(policy, cr_pe, 9696)
    assert admitted(policy, {"app": "streams", "svc": "instance-operator"}, 9696)


async def test_the_pool_statefulset_runs_pods_the_shared_coordinators_see_as_the_pool() -> None:
    pool = coordinator_pool(namespace="default", image="streams-k8s:1", replicas=3)
    args = pool["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["coordinator", "--mode", "shared", "--namespace", "default"]
    selector = ",".join(f"{k}={v}" for k, v in POOL_LABELS.items())
    async with Sandbox() as sb, await KubeClient.connect(str(sb.kubeconfig_path)) as client:
        await client.create(STATEFULSETS, pool)

        async def ready() -> bool:
            pods, _ = await client.list_all(PODS, "default", label_selector=selector)
            running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
            return len(running) == 3

        await eventually_async(ready, within=15)
    assert coordinator_pool(namespace="default", image="i")["spec"]["replicas"] == 0  # the scheduler sizes it
    with pytest.raises(ValueError, match="cannot have -1 pods"):
        coordinator_pool(namespace="default", image="i", replicas=-1)
