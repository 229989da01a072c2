"""The objects the instance operator renders for a job with consistent regions (dedicated mode).

Pure functions of the job's ConsistentRegionOperator: the coordinator Deployment, its API
Service ``streams-<job>-consistentregion-api`` (what the PE runtime calls, ports ``sys-api``
10000/TCP and ``sys-metrics`` 9696/TCP) and a NetworkPolicy that admits only the job's own PE
pods and the instance operator; plus the namespace's RBAC for coordinators. Every per-job object
is owned by the ConsistentRegionOperator, so deleting the job deletes them.

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
    CR_LABEL,
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
POOL_NAME = "streams-consistent-region-coordinators"
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
# The shared coordinator pool's pods (the StatefulSet of `coordinator_pool`).
POOL_LABELS: Mapping[str, str] = {APP_LABEL: APP_VALUE, SVC_LABEL: "consistent-region-coordinator"}
# PE pods (of the namespace) that take part in consistent regions.
_REGION_PES: Mapping[str, str] = {APP_LABEL: APP_VALUE, SVC_LABEL: SVC_PE, CR_LABEL: "true"}

_LOG_LEVELS = {
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


def _pod_spec(
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
        "env": [*field_env, {"name": "STREAMS_K8S_LOG_LEVEL", "value": _LOG_LEVELS[log_level]}, *env],
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
    pod_spec = _pod_spec(
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
    pod_spec = _pod_spec(
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
    return _ingress_policy(
        POOL_NAME,
        namespace,
        dict(POOL_LABELS),
        pes,
        _operator_peer(instance_operator, instance_operator_namespace),
        metrics_scrapers,
        owner=None,
    )


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


def _operator_peer(labels: Mapping[str, str], namespace: str | None) -> dict[str, Any]:
    peer: dict[str, Any] = {"podSelector": {"matchLabels": dict(labels)}}
    if namespace is not None:
        peer["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return peer


def _ingress_policy(
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
    return _ingress_policy(
        coordinator_name(job),
        namespace,
        {APP_LABEL: APP_VALUE, JOB_LABEL: job, SVC_LABEL: COORDINATOR_SVC},
        job_pes,
        _operator_peer(instance_operator, instance_operator_namespace),
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
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": service_account, "namespace": namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": service_account, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": service_account, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": service_account},
            "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
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
    leader on a Lease, its service account, and what it may do: read the pool's StatefulSet,
    pods and (cluster-wide) nodes, scale the StatefulSet, mark pool pods unschedulable, read the
    ConsistentRegionOperators and write their status, read its policy ConfigMaps, hold its
    Lease, record Events."""
    if capacity < 1:
        raise ValueError(f"a coordinator pod must hold at least one region, not {capacity}")
    name, labels = POOL_SCHEDULER_NAME, dict(POOL_SCHEDULER_LABELS)
    env = [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "STREAMS_K8S_LOG_LEVEL", "value": _LOG_LEVELS[log_level]},
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
    probe = {"periodSeconds": 10, "failureThreshold": 3}
    container = {
        "name": "pool-scheduler",
        "image": image,
        "imagePullPolicy": pull_policy.value,
        "args": [  # after the image's ENTRYPOINT ["streams-k8s"], as in _pod_spec
            "run",
            "--controller",
            "streams_k8s.consistent.pool:setup",
            "--metrics-port",
            str(METRICS_PORT),
            "--lease-name",
            name,
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
    pod_spec: dict[str, Any] = {
        "serviceAccountName": name,
        "securityContext": dict(POD_SECURITY),
        "containers": [container],
    }
    if pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
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
            "subjects": [subject],
        },
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
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        },
    ]
