"""deploy/: the kustomize base renders, every object validates, and it grants what the operator uses;
the ServiceMonitor is an optional component, so the base applies on clusters without Prometheus."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from streams_k8s.api import KINDS, JobAutoscaler
from streams_k8s.consistent.manifests import coordinator_auth_delegation, coordinator_rbac
from streams_k8s.consistent.pool_manifests import POOL_NAME, coordinator_pool, pool_network_policy
from test_consistent_manifests import admitted

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
KUBERNETES_VERSION = "1.30"
OPERATOR = "streams-k8s-operator"
PART_OF = "app.kubernetes.io/part-of"


def kustomize(directory: Path) -> list[dict[str, Any]]:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed: cannot render the kustomize base")
    result = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return kustomize(DEPLOY)


@pytest.fixture(scope="module")
def with_monitoring(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The base with the ServiceMonitor component, through an overlay as deploy/README.md writes it."""
    overlay = tmp_path_factory.mktemp("overlay")
    base = os.path.relpath(DEPLOY, overlay)  # kustomize takes relative paths only
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [base],
                "components": [f"{base}/components/servicemonitor"],
            }
        )
    )
    return kustomize(overlay)


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in by_kind(objects, kind) if o["metadata"]["name"] == name)


def without_kustomize_labels(obj: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items() if k != PART_OF}
    metadata = (
        {**obj["metadata"], "labels": labels}
        if labels
        else {k: v for k, v in obj["metadata"].items() if k != "labels"}
    )
    return {**obj, "metadata": metadata}


def test_coordinator_rbac_is_the_builders(rendered: list[dict[str, Any]]) -> None:
    expected = [*coordinator_rbac("streams"), coordinator_auth_delegation("streams")]
    for obj in expected:
        found = without_kustomize_labels(named(rendered, obj["kind"], obj["metadata"]["name"]))
        assert found == obj


def test_the_optional_coordinator_pool_is_the_builders() -> None:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed: cannot render the kustomize component")
    result = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY / "coordinator-pool")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    objects = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    pool = coordinator_pool(namespace="streams", image="streams-k8s:0.1.0", replicas=3)
    assert without_kustomize_labels(named(objects, "StatefulSet", POOL_NAME)) == pool
    policy = without_kustomize_labels(named(objects, "NetworkPolicy", POOL_NAME))
    assert policy == pool_network_policy(namespace="streams")
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_every_built_in_object_validates(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in rendered)
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "ServiceAccount",  # the coordinators'
            "Role",
            "RoleBinding",
            "ClusterRoleBinding",
            "ClusterRoleBinding",  # the operator's system:auth-delegator
            "Deployment",
            "Service",
            "Service",
            "Service",  # the console's
            "NetworkPolicy",
        ]
    )
    for obj in rendered:  # built-in kinds only: `kubectl apply -k deploy/` needs no other CRDs
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_the_service_monitor_component_adds_only_it(
    rendered: list[dict[str, Any]], with_monitoring: list[dict[str, Any]]
) -> None:
    added = [o for o in with_monitoring if o not in rendered]
    assert [o["kind"] for o in added] == ["ServiceMonitor"]
    assert len(with_monitoring) == len(rendered) + 1
    (monitor,) = added
    assert monitor["metadata"]["namespace"] == "streams"
    assert monitor["metadata"]["labels"][PART_OF] == "streams-k8s"


def test_service_monitor_scrapes_the_metrics_port(with_monitoring: list[dict[str, Any]]) -> None:
    (monitor,) = by_kind(with_monitoring, "ServiceMonitor")
    metrics = next(
        s for s in by_kind(with_monitoring, "Service") if s["metadata"]["name"].endswith("-metrics")
    )
    assert monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in metrics["spec"]["ports"]]


def test_streams_api_routes_the_runtime_ports_to_the_serving_replica(rendered: list[dict[str, Any]]) -> None:
    api = next(s for s in by_kind(rendered, "Service") if s["metadata"]["name"] == "streams-api")
    assert {(p["name"], p["port"]) for p in api["spec"]["ports"]} == {("api", 10000), ("repository", 6379)}
    assert api["spec"]["selector"]["streams.ibm.com/serving"] == "true"
    (deployment,) = by_kind(rendered, "Deployment")
    pod = deployment["spec"]["template"]
    assert (
        api["spec"]["selector"].items() - {("streams.ibm.com/serving", "true")}
        <= pod["metadata"]["labels"].items()
    )
    assert {"app": "streams", "svc": "instance-operator"}.items() <= pod["metadata"]["labels"].items()
    container = pod["spec"]["containers"][0]
    assert container["args"][0] == "run"
    assert {e["name"] for e in container["env"]} >= {"POD_NAME", "POD_NAMESPACE"}
    ports = {p["name"] for p in container["ports"]}
    assert {"api", "repository", "metrics", "health"} <= ports


def _allowed(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r.get("apiGroups", []) and resource in r.get("resources", []) and verb in r.get("verbs", [])
        for r in rules
    )


def test_rbac_covers_what_the_operator_touches(rendered: list[dict[str, Any]]) -> None:
    role = named(rendered, "Role", OPERATOR)
    (cluster_role,) = by_kind(rendered, "ClusterRole")
    for kind in KINDS:
        if kind is JobAutoscaler:  # the user's: read, its status written, widths through /scale
            for verb in ("get", "list", "watch"):
                assert _allowed(role["rules"], "streams.ibm.com", kind.plural, verb), (kind.plural, verb)
            assert not _allowed(role["rules"], "streams.ibm.com", kind.plural, "create")
            for resource in (f"{kind.plural}/status", "streamsprs/scale"):
                assert _allowed(role["rules"], "streams.ibm.com", resource, "patch"), resource
            continue
        for verb in ("get", "list", "watch", "create", "patch", "delete"):
            assert _allowed(role["rules"], "streams.ibm.com", kind.plural, verb), (kind.plural, verb)
    for resource in ("streamsjobs/status", "streamspes/status"):
        assert _allowed(role["rules"], "streams.ibm.com", resource, "patch")
    for resource in ("configmaps", "services", "pods"):
        for verb in ("get", "list", "watch", "create", "update", "patch", "delete"):
            assert _allowed(role["rules"], "", resource, verb), (resource, verb)
    for verb in ("get", "create"):  # GitHub tokens by name; a TLS job's transport Secret
        assert _allowed(role["rules"], "", "secrets", verb)
    for verb in ("list", "watch", "update", "patch", "delete"):  # read by name only, never changed
        assert not _allowed(role["rules"], "", "secrets", verb)
    assert _allowed(role["rules"], "events.k8s.io", "events", "create")
    assert _allowed(role["rules"], "coordination.k8s.io", "leases", "update")
    for verb in ("get", "list", "watch", "create"):
        assert _allowed(role["rules"], "apps", "deployments", verb)
    for verb in ("get", "list", "watch", "create", "update"):  # watched and restored
        assert _allowed(role["rules"], "networking.k8s.io", "networkpolicies", verb)
    for verb in ("get", "list", "watch", "patch"):
        assert _allowed(cluster_role["rules"], "", "nodes", verb)
    assert not _allowed(cluster_role["rules"], "", "nodes", "update")  # labels and taints by patch only
    assert [r["resources"] for r in cluster_role["rules"]] == [["nodes"]]
    delegation = named(rendered, "ClusterRoleBinding", "streams-k8s-operator-auth-delegator")
    assert delegation["roleRef"]["name"] == "system:auth-delegator"
    assert delegation["subjects"] == [{"kind": "ServiceAccount", "name": OPERATOR, "namespace": "streams"}]
    binding = named(rendered, "ClusterRoleBinding", "streams-k8s-operator-nodes")
    assert binding["subjects"][0]["namespace"] == "streams"


def test_dockerfile_builds_the_wheel_with_maturin_and_runs_the_operator() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert len(stages) == 2
    assert "AS builder" in stages[0]
    assert "maturin build --release" in text
    assert 'ENTRYPOINT ["streams-k8s"]' in text
    assert 'CMD ["run"]' in text


def test_the_operator_network_policy_admits_only_what_needs_it(rendered: list[dict[str, Any]]) -> None:
    policy = named(rendered, "NetworkPolicy", OPERATOR)
    (deployment,) = by_kind(rendered, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    pe = {"app": "streams", "svc": "pe", "streams.ibm.com/job": "j"}
    assert admitted(policy, pe, 10000)
    assert admitted(policy, pe, 6379)
    assert not admitted(policy, pe, 8080)
    assert not admitted(policy, {"app": "curl"}, 10000)
    assert not admitted(policy, {"app": "streams", "svc": "instance-operator"}, 6379)
    assert admitted(policy, {"app.kubernetes.io/name": "prometheus"}, 8080, namespace="monitoring")
    assert not admitted(policy, {"app.kubernetes.io/name": "prometheus"}, 10000, namespace="monitoring")
    # The console authenticates each viewer (TokenReview), so any peer may reach it, e.g. an ingress.
    assert admitted(policy, {"app.kubernetes.io/name": "ingress-nginx"}, 8090, namespace="ingress")
    egress = {(p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert {(443, "TCP"), (6443, "TCP"), (53, "UDP"), (53, "TCP"), (10000, "UDP")} <= egress
    # the PEs' metrics, read by the operator (flow metrics), to PE pods only
    (metrics,) = [r for r in policy["spec"]["egress"] if {"port": 9696, "protocol": "TCP"} in r["ports"]]
    assert metrics["to"] == [{"podSelector": {"matchLabels": {"app": "streams", "svc": "pe"}}}]
