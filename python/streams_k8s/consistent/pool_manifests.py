"""The shared coordinator pool of a namespace (shared mode): its StatefulSet, the NetworkPolicy
admitting PEs of consistent regions to it, and its vreplica scheduler (`consistent.pool`) with the
scheduler's service account and RBAC. Deployment-level objects (``deploy/coordinator-pool``), not
per job: jobs run on the pool's pods, placed there by the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streams_k8s.api.contract import APP_LABEL, APP_VALUE, CR_LABEL, METRICS_PORT, SVC_LABEL, SVC_PE
from streams_k8s.api.processing_element import ImagePullPolicy, TraceLevel
from streams_k8s.consistent.manifests import (
    CONTAINER_SECURITY,
    HEALTH_PORT,
    INSTANCE_OPERATOR_LABELS,
    LOG_LEVELS,
    POD_SECURITY,
    SERVICE_ACCOUNT,
    coordinator_pod_spec,
    ingress_policy,
    operator_peer,
    service_account_role,
)

POOL_NAME = "streams-consistent-region-coordinators"


# The shared coordinator pool's pods (the StatefulSet of `coordinator_pool`).
POOL_LABELS: Mapping[str, str] = {APP_LABEL: APP_VALUE, SVC_LABEL: "consistent-region-coordinator"}


# PE pods (of the namespace) that take part in consistent regions.
_REGION_PES: Mapping[str, str] = {APP_LABEL: APP_VALUE, SVC_LABEL: SVC_PE, CR_LABEL: "true"}


def coordinator_pool(
    *,
    namespace: str,
    image: str,
    replicas: int = 0,
    pull_policy: ImagePullPolicy = ImagePullPolicy.IF_NOT_PRESENT,
    pull_secret: str | None = None,
    log_level: TraceLevel = TraceLevel.INFO,
    service_account: str = SERVICE_ACCOUNT,
) -> dict[str, Any]:
    """The shared coordinator pool of a namespace: a StatefulSet whose pods run the jobs of
    shared mode, placed on them by the pool's vreplica scheduler (``consistent.pool``), which
    also owns ``spec.replicas`` once it runs (create this object, do not keep re-applying the
    count). Pods start and stop in parallel: placement needs no order."""
    if replicas < 0:
        raise ValueError(f"the coordinator pool cannot have {replicas} pods")
    labels = dict(POOL_LABELS)
    pod_spec = coordinator_pod_spec(
        image=image,
        pull_policy=pull_policy,
        pull_secret=pull_secret,
        args=["--mode", "shared", "--namespace", namespace],
        env=[],
        log_level=log_level,
        service_account=service_account,
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": POOL_NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "serviceName": POOL_NAME,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def pool_network_policy(
    *,
    namespace: str,
    instance_operator: Mapping[str, str] = INSTANCE_OPERATOR_LABELS,
    instance_operator_namespace: str | None = None,
    metrics_scrapers: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Ingress to the pool: the REST API from PE pods of consistent regions of the namespace and
    the instance operator. Coarser than a dedicated coordinator's policy: a job's PEs can reach
    the pool pods of other jobs (which still answer only for the job named in the request)."""
    pes = {"podSelector": {"matchLabels": dict(_REGION_PES)}}
    return ingress_policy(
        POOL_NAME,
        namespace,
        dict(POOL_LABELS),
        pes,
        operator_peer(instance_operator, instance_operator_namespace),
        metrics_scrapers,
        owner=None,
    )


POOL_SCHEDULER_NAME = f"{POOL_NAME}-scheduler"


POOL_SCHEDULER_LABELS: Mapping[str, str] = {
    APP_LABEL: APP_VALUE,
    SVC_LABEL: "consistent-region-pool-scheduler",
}


def pool_scheduler(
    *,
    namespace: str,
    image: str,
    capacity: int,
    replicas: int = 2,
    scheduler_configmap: str | None = None,
    descheduler_configmap: str | None = None,
    pull_policy: ImagePullPolicy = ImagePullPolicy.IF_NOT_PRESENT,
    pull_secret: str | None = None,
    log_level: TraceLevel = TraceLevel.INFO,
) -> list[dict[str, Any]]:
    """The pool's vreplica scheduler (``consistent.pool``): a Deployment whose replicas elect a
    leader on a Lease, its service account, and what it may do (`_pool_scheduler_access`)."""
    if capacity < 1:
        raise ValueError(f"a coordinator pod must hold at least one region, not {capacity}")
    name, labels = POOL_SCHEDULER_NAME, dict(POOL_SCHEDULER_LABELS)
    env: list[dict[str, Any]] = [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "STREAMS_K8S_LOG_LEVEL", "value": LOG_LEVELS[log_level]},
        {"name": "STREAMS_K8S_CR_POOL_NAMESPACE", "value": namespace},
        {"name": "STREAMS_K8S_CR_POOL_STATEFULSET", "value": POOL_NAME},
        {"name": "STREAMS_K8S_CR_POOL_CAPACITY", "value": str(capacity)},
    ]
    for variable, configmap in (
        ("STREAMS_K8S_CR_POOL_SCHEDULER_CONFIGMAP", scheduler_configmap),
        ("STREAMS_K8S_CR_POOL_DESCHEDULER_CONFIGMAP", descheduler_configmap),
    ):
        if configmap:
            env.append({"name": variable, "value": configmap})
    pod_spec: dict[str, Any] = {
        "serviceAccountName": name,
        "securityContext": dict(POD_SECURITY),
        "containers": [_pool_scheduler_container(image, pull_policy, env)],
    }
    if pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }
    return [*_pool_scheduler_access(name, namespace), deployment]


def _pool_scheduler_container(
    image: str, pull_policy: ImagePullPolicy, env: list[dict[str, Any]]
) -> dict[str, Any]:
    """`streams-k8s run --controller streams_k8s.consistent.pool:setup` under its own Lease."""
    probe = {"periodSeconds": 10, "failureThreshold": 3}
    return {
        "name": "pool-scheduler",
        "image": image,
        "imagePullPolicy": pull_policy.value,
        "args": [  # after the image's ENTRYPOINT ["streams-k8s"], as in coordinator_pod_spec
            "run",
            "--controller",
            "streams_k8s.consistent.pool:setup",
            "--metrics-port",
            str(METRICS_PORT),
            "--lease-name",
            POOL_SCHEDULER_NAME,
        ],
        "env": env,
        "ports": [
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}, **probe},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, **probe},
        "resources": {"requests": {"cpu": "50m", "memory": "96Mi"}, "limits": {"memory": "384Mi"}},
        "securityContext": dict(CONTAINER_SECURITY),
    }


def _pool_scheduler_access(name: str, namespace: str) -> list[dict[str, Any]]:
    """The scheduler's service account and what it may do: read the pool's StatefulSet, pods and
    (cluster-wide) nodes, scale the StatefulSet, mark pool pods unschedulable, read the
    ConsistentRegionOperators and write their status, read its policy ConfigMaps, hold its Lease,
    record Events."""
    rules = [
        {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["statefulsets/scale"], "verbs": ["patch", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
        {"apiGroups": ["streams.ibm.com"], "resources": ["streamscros"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["streams.ibm.com"], "resources": ["streamscros/status"], "verbs": ["patch", "update"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    ]
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    cluster_role = f"{name}-{namespace}-nodes"
    return [
        *service_account_role(name, namespace, rules),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": cluster_role},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": cluster_role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [subject],
        },
    ]
