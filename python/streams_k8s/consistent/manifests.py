"""The objects the instance operator renders for a job with consistent regions (dedicated mode).

Pure functions of the job's ConsistentRegionOperator: the coordinator Deployment, its API
Service ``streams-<job>-consistentregion-api`` (what the PE runtime calls, ports ``sys-api``
10000/TCP and ``sys-metrics`` 9696/TCP) and a NetworkPolicy that admits only the job's own PE
pods and the instance operator; plus the namespace's RBAC for coordinators. Every per-job object
is owned by the ConsistentRegionOperator, so deleting the job deletes them. The shared mode's
coordinator pool is `consistent.pool_manifests`.

Trust model (see the README): the runtime sends no credentials, so the NetworkPolicy is what
keeps other pods from driving a job's regions; a client outside that policy's reach (the CLI
through a port-forward) presents a bearer token, checked with TokenReview.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streams_k8s.api.consistent_region import ConsistentRegionOperator, CoordinatorMode
from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    COORDINATOR_API_PORT,
    COORDINATOR_API_PORT_NAME,
    GENERATION_LABEL,
    JOB_LABEL,
    JOB_NAME_ENV,
    METRICS_PORT,
    METRICS_PORT_NAME,
    SVC_LABEL,
    SVC_PE,
    coordinator_name,
    coordinator_service_name,
)
from streams_k8s.api.processing_element import ImagePullPolicy, TraceLevel

COORDINATOR_SVC = "consistent-region-operator"
SERVICE_ACCOUNT = "streams-consistent-region"
HEALTH_PORT = 8081
# The image's user (deploy/Dockerfile: USER 65532:65532), given so that runAsNonRoot can be checked.
RUN_AS = 65532
# Pod Security "restricted", for every pod these builders render.
POD_SECURITY: Mapping[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
# The instance operator's pods (spec: Deployment streams-instance-operator).
INSTANCE_OPERATOR_LABELS: Mapping[str, str] = {APP_LABEL: APP_VALUE, SVC_LABEL: "instance-operator"}

LOG_LEVELS = {
    TraceLevel.OFF: "ERROR",
    TraceLevel.ERROR: "ERROR",
    TraceLevel.WARN: "WARNING",
    TraceLevel.INFO: "INFO",
    TraceLevel.DEBUG: "DEBUG",
    TraceLevel.TRACE: "DEBUG",
}


def coordinator_labels(job: str, generation: int) -> dict[str, str]:
    """Labels and selector of a job's coordinator pod, Deployment and Service."""
    return {
        APP_LABEL: APP_VALUE,
        JOB_LABEL: job,
        GENERATION_LABEL: str(generation),
        SVC_LABEL: COORDINATOR_SVC,
    }


def _metadata(
    operator: ConsistentRegionOperator, name: str, namespace: str, generation: int
) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": coordinator_labels(operator.spec.job_name, generation),
        "ownerReferences": [operator.as_owner()],
    }


def coordinator_pod_spec(
    *,
    image: str,
    pull_policy: ImagePullPolicy,
    pull_secret: str | None,
    args: list[str],
    env: list[dict[str, Any]],
    log_level: TraceLevel,
    service_account: str,
) -> dict[str, Any]:
    """The coordinator's pod: `streams-k8s coordinator ARGS`, API 10000, metrics 9696, probes.

    The image's ``ENTRYPOINT ["streams-k8s"]`` (deploy/Dockerfile) is the program: the container
    gives only its arguments, as the operator's own Deployment does (``args: [run, ...]``)."""
    field_env = [
        {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
        for name, path in (
            ("POD_NAME", "metadata.name"),
            ("POD_NAMESPACE", "metadata.namespace"),
            ("POD_IP", "status.podIP"),
        )
    ]
    probe = {"periodSeconds": 10, "failureThreshold": 3}
    container = {
        "name": "consistent-region-operator",
        "image": image,
        "imagePullPolicy": pull_policy.value,
        "args": ["coordinator", *args],
        "env": [*field_env, {"name": "STREAMS_K8S_LOG_LEVEL", "value": LOG_LEVELS[log_level]}, *env],
        "ports": [
            {"name": COORDINATOR_API_PORT_NAME, "containerPort": COORDINATOR_API_PORT, "protocol": "TCP"},
            {"name": METRICS_PORT_NAME, "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}, **probe},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, **probe},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": dict(CONTAINER_SECURITY),
    }
    pod_spec: dict[str, Any] = {
        "serviceAccountName": service_account,
        "securityContext": dict(POD_SECURITY),
        "containers": [container],
    }
    if pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
    return pod_spec


def coordinator_deployment(
    operator: ConsistentRegionOperator,
    *,
    namespace: str,
    generation: int,
    image: str,
    service_account: str = SERVICE_ACCOUNT,
) -> dict[str, Any]:
    """The job's coordinator: one replica, replaced with ``Recreate`` so two coordinators never
    write the same regions' status at once. Dedicated mode only (shared-mode jobs run on the
    coordinator pool)."""
    spec = operator.spec
    if spec.mode is not CoordinatorMode.DEDICATED:
        raise ValueError(f"job {spec.job_name} runs on the shared coordinator pool: it has no Deployment")
    labels = coordinator_labels(spec.job_name, generation)
    pod_spec = coordinator_pod_spec(
        image=image,
        pull_policy=spec.image_pull_policy,
        pull_secret=spec.image_pull_secret,
        args=["--mode", "dedicated", "--job", spec.job_name],
        # The original's variables, for tools that read them.
        env=[
            {"name": JOB_NAME_ENV, "value": spec.job_name},
            {"name": "STREAMS_JOB_ID", "value": spec.job_uid},
            {"name": "STREAMS_GENERATION_ID", "value": str(generation)},
            {"name": "NUM_CONSISTENT_REGIONS", "value": str(spec.num_regions)},
        ],
        log_level=spec.log_level,
        service_account=service_account,
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(operator, coordinator_name(spec.job_name), namespace, generation),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def coordinator_service(
    operator: ConsistentRegionOperator, *, namespace: str, generation: int
) -> dict[str, Any]:
    """``streams-<job>-consistentregion-api``: headless, where the job's PEs reach the coordinator.

    Dedicated mode: it selects the job's coordinator pod. Shared mode: it has no selector; the
    pool pod that runs the job publishes itself as its Endpoints."""
    job = operator.spec.job_name
    dedicated = operator.spec.mode is CoordinatorMode.DEDICATED
    selector = {"selector": coordinator_labels(job, generation)} if dedicated else {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(operator, coordinator_service_name(job), namespace, generation),
        "spec": {
            "clusterIP": "None",
            **selector,
            "ports": [
                {
                    "name": COORDINATOR_API_PORT_NAME,
                    "port": COORDINATOR_API_PORT,
                    "targetPort": COORDINATOR_API_PORT,
                    "protocol": "TCP",
                },
                {
                    "name": METRICS_PORT_NAME,
                    "port": METRICS_PORT,
                    "targetPort": METRICS_PORT,
                    "protocol": "TCP",
                },
            ],
        },
    }


def operator_peer(labels: Mapping[str, str], namespace: str | None) -> dict[str, Any]:
    peer: dict[str, Any] = {"podSelector": {"matchLabels": dict(labels)}}
    if namespace is not None:
        peer["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return peer


def ingress_policy(
    name: str,
    namespace: str,
    pods: dict[str, str],
    pes: dict[str, Any],
    operator_peer: dict[str, Any],
    metrics_scrapers: Sequence[Mapping[str, Any]],
    owner: dict[str, Any] | None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    api = [{"port": COORDINATOR_API_PORT, "protocol": "TCP"}]
    metrics = [{"port": METRICS_PORT, "protocol": "TCP"}]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or dict(pods)}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata,
        "spec": {
            "podSelector": {"matchLabels": pods},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [pes, operator_peer], "ports": api},
                {"from": [operator_peer, *(dict(peer) for peer in metrics_scrapers)], "ports": metrics},
            ],
        },
    }


def coordinator_network_policy(
    operator: ConsistentRegionOperator,
    *,
    namespace: str,
    generation: int,
    instance_operator: Mapping[str, str] = INSTANCE_OPERATOR_LABELS,
    instance_operator_namespace: str | None = None,
    metrics_scrapers: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Ingress to a dedicated coordinator: the REST API only from the job's own PE pods and the
    instance operator; the metrics port from the instance operator and ``metrics_scrapers``
    (NetworkPolicy peers, e.g. the monitoring namespace). Anything else is dropped.

    ``instance_operator_namespace``: where the instance operator runs, when not in the job's
    namespace (matched by the ``kubernetes.io/metadata.name`` namespace label)."""
    job = operator.spec.job_name
    job_pes = {"podSelector": {"matchLabels": {APP_LABEL: APP_VALUE, SVC_LABEL: SVC_PE, JOB_LABEL: job}}}
    return ingress_policy(
        coordinator_name(job),
        namespace,
        {APP_LABEL: APP_VALUE, JOB_LABEL: job, SVC_LABEL: COORDINATOR_SVC},
        job_pes,
        operator_peer(instance_operator, instance_operator_namespace),
        metrics_scrapers,
        owner=operator.as_owner(),
        labels=coordinator_labels(job, generation),
    )


def coordinator_rbac(namespace: str, service_account: str = SERVICE_ACCOUNT) -> list[dict[str, Any]]:
    """What every coordinator of a namespace may do: read its job's objects, write region and
    operator status, publish a shared job's EndpointSlice, record Events. Reviewing tokens
    (TokenReview, SubjectAccessReview) is cluster-scoped: bind the service account to the
    built-in ClusterRole ``system:auth-delegator`` too (``coordinator_auth_delegation``)."""
    rules = [
        {
            "apiGroups": ["streams.ibm.com"],
            "resources": ["streamscrs", "streamscros", "streamspes"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["streams.ibm.com"],
            "resources": ["streamscrs/status", "streamscros/status"],
            "verbs": ["patch", "update"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        # Shared mode: the pool pod running a job publishes itself as its API Service's endpoint.
        {
            "apiGroups": ["discovery.k8s.io"],
            "resources": ["endpointslices"],
            "verbs": ["get", "create", "update"],
        },
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    ]
    return service_account_role(service_account, namespace, rules)


def service_account_role(name: str, namespace: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ServiceAccount with a Role of these rules, bound to it (all three named `name`)."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]


def coordinator_auth_delegation(namespace: str, service_account: str = SERVICE_ACCOUNT) -> dict[str, Any]:
    """The ClusterRoleBinding that lets the namespace's coordinators create TokenReviews and
    SubjectAccessReviews (to accept writes from clients presenting bearer tokens)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{service_account}-{namespace}-auth-delegator"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:auth-delegator",
        },
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }
