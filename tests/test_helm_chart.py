"""charts/streams-k8s: by default the kustomize base's objects, object by object; every rendering
validates against the Kubernetes schemas; the values for the image, replicas, watched namespaces,
the console, metrics and the ServiceMonitor, resources and Pod Security do what they say; bad values
are refused by name. Helm is the real one (tests/helm_chart.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from helm_chart import CHART, helm, template, without_release_labels
from repo_paths import REPO
from test_deploy_manifests import DEPLOY, KUBERNETES_VERSION, by_kind, kustomize, named

Objects = list[dict[str, Any]]


def keyed(objects: Objects) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): without_release_labels(o)
        for o in objects
    }


def container(objects: Objects) -> dict[str, Any]:
    (deployment,) = by_kind(objects, "Deployment")
    (found,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(found)


@pytest.fixture(scope="module")
def base() -> Objects:
    return kustomize(DEPLOY)


def test_lint_is_clean() -> None:
    done = helm("lint", str(CHART), "--strict")
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_by_default_the_chart_renders_the_kustomize_base(base: Objects) -> None:
    # Helm keeps the release in its namespace, which therefore exists first: the chart renders
    # it only when asked (namespace.create), and then every object is the base's.
    assert keyed(template("namespace.create=true")) == keyed(base)
    without_namespace = {k: v for k, v in keyed(base).items() if k[0] != "Namespace"}
    assert keyed(template()) == without_namespace


def test_the_service_monitor_value_renders_the_kustomize_component(base: Objects) -> None:
    overlay = kustomize(DEPLOY / "components" / "servicemonitor")
    (component,) = by_kind(overlay, "ServiceMonitor")
    (monitor,) = by_kind(template("metrics.serviceMonitor.enabled=true"), "ServiceMonitor")
    assert without_release_labels(monitor)["spec"] == component["spec"]
    labelled = template("metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom")
    assert by_kind(labelled, "ServiceMonitor")[0]["metadata"]["labels"]["release"] == "prom"
    assert not by_kind(template(), "ServiceMonitor")


@pytest.mark.parametrize(
    "values",
    [
        (),
        ("namespace.create=true",),
        ("watchNamespaces={team-a,team-b}",),
        ("watchNamespaces={streams,team-a}", "replicas=2"),
        ("watchAllNamespaces=true",),
        ("console.enabled=false", "metrics.service=false", "networkPolicy.enabled=false"),
    ],
)
def test_every_rendered_object_validates(values: tuple[str, ...]) -> None:
    for obj in template(*values):
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_the_crds_are_the_repositorys() -> None:
    rendered = helm("template", "streams-k8s", str(CHART), "--include-crds").stdout
    shown = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "CustomResourceDefinition"]
    files = [yaml.safe_load(f.read_text()) for f in (REPO / "crds").glob("*.yaml")]
    assert sorted(shown, key=lambda c: c["metadata"]["name"]) == sorted(
        files, key=lambda c: c["metadata"]["name"]
    )


def test_image_replicas_resources_and_pod_security_values() -> None:
    objects = template(
        "image.repository=registry.example/streams-k8s",
        "image.tag=1.2.3",
        "image.pullPolicy=Always",
        "replicas=2",
        "resources.limits.memory=2Gi",
        "podSecurityContext.runAsUser=1000",
        "namespace.create=true",
        "namespace.podSecurityLevel=baseline",
    )
    found = container(objects)
    assert (found["image"], found["imagePullPolicy"]) == ("registry.example/streams-k8s:1.2.3", "Always")
    assert found["resources"]["limits"]["memory"] == "2Gi"
    (deployment,) = by_kind(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 1000
    (namespace,) = by_kind(objects, "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert container(template())["image"] == "streams-k8s:0.1.0"  # the chart's appVersion


def test_the_console_and_metrics_values() -> None:
    objects = template("console.enabled=false", "metrics.port=9090")
    args = container(objects)["args"]
    assert "--metrics-port=9090" in args
    assert not [a for a in args if a.startswith("--console")]
    assert {s["metadata"]["name"] for s in by_kind(objects, "Service")} == {
        "streams-api",
        "streams-k8s-operator-metrics",
    }
    policy = named(objects, "NetworkPolicy", "streams-k8s-operator")
    assert {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]} == {10000, 6379, 9090}


def operator_roles(objects: Objects) -> dict[str, dict[str, Any]]:
    """The operator's Roles by namespace."""
    roles = by_kind(objects, "Role")
    return {r["metadata"]["namespace"]: r for r in roles if r["metadata"]["name"] == "streams-k8s-operator"}


def _bindings_to_operator(objects: Objects, kind: str) -> list[dict[str, Any]]:
    operator = {"kind": "ServiceAccount", "name": "streams-k8s-operator", "namespace": "streams"}
    return [b for b in by_kind(objects, kind) if operator in b["subjects"]]


def test_watch_namespaces_render_a_role_in_each(base: Objects) -> None:
    objects = template("watchNamespaces={team-a,team-b}")
    assert "--namespace=team-a,team-b" in container(objects)["args"]
    roles = operator_roles(objects)
    assert set(roles) == {"team-a", "team-b", "streams"}
    base_rules = named(base, "Role", "streams-k8s-operator")["rules"]
    for watched in ("team-a", "team-b"):  # the base's, Leases too: each namespace's job-id counter
        assert roles[watched]["rules"] == base_rules
    # its own namespace, unwatched: its Lease and its own pods only
    assert [r["resources"] for r in roles["streams"]["rules"]] == [["pods"], ["leases"]]
    bound = {b["metadata"]["namespace"] for b in _bindings_to_operator(objects, "RoleBinding")}
    assert bound == {"team-a", "team-b", "streams"}
    accounts = {s["metadata"]["namespace"] for s in by_kind(objects, "ServiceAccount")}
    assert accounts == {"streams", "team-a", "team-b"}  # the operator's, the coordinators' in each
    services = by_kind(objects, "Service")
    apis = {s["metadata"]["namespace"]: s["spec"] for s in services if s["metadata"]["name"] == "streams-api"}
    assert apis["team-a"] == {"type": "ExternalName", "externalName": "streams-api.streams.svc.cluster.local"}
    assert apis["streams"]["type"] == "ClusterIP"
    policy = named(objects, "NetworkPolicy", "streams-k8s-operator")
    peers = policy["spec"]["ingress"][0]["from"]
    selectors = [p.get("namespaceSelector", {}).get("matchLabels", {}) for p in peers]
    assert [s.get("kubernetes.io/metadata.name") for s in selectors] == [None, "team-a", "team-b"]
    assert not by_kind(objects, "ClusterRole")[1:]  # only the nodes' one


def test_watching_its_own_namespace_among_others_gives_it_the_base_role_there(base: Objects) -> None:
    objects = template("watchNamespaces={streams,team-a,streams}")
    assert "--namespace=streams,team-a" in container(objects)["args"]
    roles = operator_roles(objects)
    assert sorted(roles) == ["streams", "team-a"]
    assert roles["streams"]["rules"] == named(base, "Role", "streams-k8s-operator")["rules"]


def test_watch_all_namespaces_uses_a_cluster_role(base: Objects) -> None:
    objects = template("watchAllNamespaces=true")
    assert not [a for a in container(objects)["args"] if a.startswith("--namespace")]
    cluster_role = named(objects, "ClusterRole", "streams-k8s-operator")
    base_rules = named(base, "Role", "streams-k8s-operator")["rules"]
    assert cluster_role["rules"] == base_rules
    assert [b["metadata"]["name"] for b in _bindings_to_operator(objects, "ClusterRoleBinding")] == [
        "streams-k8s-operator",
        "streams-k8s-operator-nodes",
        "streams-k8s-operator-auth-delegator",
    ]
    assert list(operator_roles(objects)) == ["streams"]
    assert [r["resources"] for r in operator_roles(objects)["streams"]["rules"]] == [["pods"], ["leases"]]
    policy = named(objects, "NetworkPolicy", "streams-k8s-operator")
    assert policy["spec"]["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {"app": "streams", "svc": "pe"}}, "namespaceSelector": {}}
    ]


@pytest.mark.parametrize(
    ("value", "named_in_error"),
    [
        ("replicas=0", "replicas"),
        ("watchNamespaces={Team_A}", "watchNamespaces"),
        ("console.auth=basic", "/console/auth"),
        ("imageTag=1.0", "imageTag"),
        ("namespace.podSecurityLevel=strict", "podSecurityLevel"),
    ],
)
def test_bad_values_are_refused_by_name(value: str, named_in_error: str) -> None:
    done = helm("template", "streams-k8s", str(CHART), "--set", value, check=False)
    assert done.returncode != 0
    assert named_in_error in done.stderr


def test_several_replicas_need_leader_election() -> None:
    done = helm(
        "template", "x", str(CHART), "--set", "replicas=2", "--set", "leaderElection=false", check=False
    )
    assert done.returncode != 0
    assert "leaderElection" in done.stderr
    assert "--no-leader-election" in container(template("leaderElection=false"))["args"]


def test_the_chart_lives_where_the_readme_says() -> None:
    assert "charts/streams-k8s" in (DEPLOY / "README.md").read_text()
    assert Path(CHART, "crds").resolve() == REPO / "crds"
