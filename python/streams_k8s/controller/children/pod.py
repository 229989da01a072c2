"""The PE pod, exactly as the Streams runtime expects it (env, mounts, probe, ports, security).

A pure function of the Job, the PE, its launch count and placement; the controller only creates it.

Security: the pod meets Pod Security "restricted" (non-root user 2098/2015, no privilege
escalation, every capability dropped, the RuntimeDefault seccomp profile, no service-account
token: the runtime never calls the Kubernetes API). Two PE settings need more, and only they:
`allowPtrace` / `runWithValgrind` add the single capability `SYS_PTRACE` (never SYS_ADMIN), and a
`hostPath` data or checkpoint directory mounts the node's file system; Pod Security admits
either only at level `privileged` (baseline allows neither), as the README says.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_PROPERTIES_DIR,
    APP_VALUE,
    APPLICATION_NAME_ANNOTATION,
    APPLICATION_SCOPE_ANNOTATION,
    CHECKPOINT_DIR,
    CONSISTENT_REGION_CONTAINER_PORT_NAME,
    CONSISTENT_REGION_PORT,
    CONTENT_ID_ANNOTATION,
    CR_LABEL,
    DATA_DIR,
    GENERATION_LABEL,
    JOB_CONFIG_DIR,
    JOB_LABEL,
    LAUNCH_COUNT_LABEL,
    METRICS_PORT,
    NOTIFICATIONS_CONTAINER_PORT_NAME,
    NOTIFICATIONS_PORT,
    PE_CONFIG_DIR,
    PE_LABEL,
    PE_PORT_BASE,
    RESTRICTED_PROPERTIES_DIR,
    SVC_LABEL,
    SVC_PE,
    pe_service_name,
)
from streams_k8s.api.job import Job
from streams_k8s.api.processing_element import BuildType, ProcessingElement
from streams_k8s.controller.placement.constraints import PodPlacement

RUN_AS_USER = 2098
RUN_AS_GROUP = 2015
# What a ptrace-using PE (debugger, valgrind) adds to its dropped capabilities.
PTRACE_CAPABILITIES = ["SYS_PTRACE"]
# Exact text the runtime parses for a file-system checkpoint store.
FILE_SYSTEM_CHECKPOINT_CONFIG = '{ "Dir" : "/checkpoint" }'


@dataclass(frozen=True, slots=True)
class PeRuntimeSettings:
    """Operator-wide settings of the PE runtime (from the operator's environment)."""

    registry: str = "docker.io"
    image_namespace: str = "openstreams"
    build_type: BuildType = BuildType.RELEASE
    install_dir: str = "/usr/local/streams"
    data_path: str | None = None
    checkpoint_path: str | None = None


def pod_name(job: str, pe_id: int, pe_uid: str, launch_count: int) -> str:
    """`<job>-<peId>-<suffix>`, the suffix fixed by PE incarnation and launch so creation is idempotent."""
    digest = hashlib.sha1(f"{pe_uid}/{launch_count}".encode(), usedforsecurity=False).digest()
    suffix = "".join("bcdfghjklmnpqrstvwxz2456789"[b % 27] for b in digest[:5])
    return f"{pe_service_name(job, pe_id)}-{suffix}"


def pe_config_map_name(job: str, pe_id: int) -> str:
    return pe_service_name(job, pe_id)


def owner_reference(obj: Job | ProcessingElement) -> dict[str, Any]:
    return {
        "apiVersion": obj.api_version,
        "kind": obj.kind,
        "name": obj.metadata.name,
        "uid": obj.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def container_security(*, ptrace: bool) -> dict[str, Any]:
    """The PE container's securityContext: Pod Security "restricted", plus SYS_PTRACE alone when
    the PE is debugged (a capability "restricted" and "baseline" refuse: level privileged)."""
    capabilities: dict[str, list[str]] = {"drop": ["ALL"]}
    if ptrace:
        capabilities["add"] = list(PTRACE_CAPABILITIES)
    return {"allowPrivilegeEscalation": False, "capabilities": capabilities}


def _env(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


def build_pod(
    *,
    job: Job,
    pe: ProcessingElement,
    generation: int,
    launch_count: int,
    placement: PodPlacement,
    settings: PeRuntimeSettings,
    redis_config: str | None = None,
) -> dict[str, Any]:
    """The pod manifest of one launch of one PE."""
    spec = pe.spec
    job_name, namespace = str(job.metadata.name), str(job.metadata.namespace)
    pe_name = pe_service_name(job_name, spec.id)
    build_type = (spec.effective_build_type or settings.build_type).value.lower()
    image = spec.image or f"{settings.registry}/{settings.image_namespace}/streams-runtime:6.{build_type}"

    env = [
        _env("STREAMS_DOMAIN_ID", "kubernetes"),
        _env("STREAMS_INITIAL_TRACE_LEVEL", spec.runtime_trace_level.value),
        _env("STREAMS_INSTALL", settings.install_dir),
        _env("STREAMS_INSTANCE_ID", namespace),
        _env("STREAMS_JOB_NAME", job_name),
        _env("STREAMS_NS", "K8S:"),
        _env("STREAMS_PE_ID", str(spec.id)),
        _env("STREAMS_PE_LAUNCH_COUNT", str(launch_count)),
        _env("STREAMS_PE_NAME", pe_name),
        _env("STREAMS_PE_USE_VALGRIND", "true" if spec.run_with_valgrind else "false"),
        _env("STREAMS_SAB_NAME", spec.sab_name or job.spec.bundle.name),
        _env("STREAMS_TRANSPORT_SECURITY_TYPE", spec.transport_security_type.value),
    ]
    if spec.app_trace_level is not None:
        env.append(_env("STREAMS_APP_TRACE_LEVEL", spec.app_trace_level.value))

    volumes: list[dict[str, Any]] = [
        {"name": "pe-config-volume", "configMap": {"name": pe_config_map_name(job_name, spec.id)}},
        {"name": "job-config-volume", "configMap": {"name": job_name}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "pe-config-volume", "mountPath": PE_CONFIG_DIR},
        {"name": "job-config-volume", "mountPath": JOB_CONFIG_DIR},
    ]

    def mount(name: str, path: str, source: dict[str, Any], sub_path: str | None = None) -> None:
        volumes.append({"name": name, **source})
        mounts.append({"name": name, "mountPath": path, **({"subPath": sub_path} if sub_path else {})})

    if spec.data_volume_claim is not None:
        claim = spec.data_volume_claim
        mount("data-volume", DATA_DIR, {"persistentVolumeClaim": {"claimName": claim.name}}, claim.sub_path)
    elif (data_path := spec.data_path or settings.data_path) is not None:
        mount("data-volume", DATA_DIR, {"hostPath": {"path": data_path, "type": ""}})

    repository = spec.checkpoint_repository
    if repository is not None and repository.file_system is not None:
        store = repository.file_system
        env += [
            _env("STREAMS_CHECKPOINT_REPOSITORY", "fileSystem"),
            _env("STREAMS_CHECKPOINT_REPOSITORY_CONFIGURATION", FILE_SYSTEM_CHECKPOINT_CONFIG),
        ]
        if store.volume_claim is not None:
            claim_source = {"persistentVolumeClaim": {"claimName": store.volume_claim.name}}
            mount("checkpoint-volume", CHECKPOINT_DIR, claim_source, store.volume_claim.sub_path)
        else:
            mount("checkpoint-volume", CHECKPOINT_DIR, {"hostPath": {"path": store.path, "type": ""}})
    elif repository is not None and repository.redis is not None and redis_config is not None:
        env += [
            _env("STREAMS_CHECKPOINT_REPOSITORY", "redis"),
            _env("STREAMS_CHECKPOINT_REPOSITORY_CONFIGURATION", redis_config),
        ]
    elif repository is not None and settings.checkpoint_path is not None:
        env += [
            _env("STREAMS_CHECKPOINT_REPOSITORY", "fileSystem"),
            _env("STREAMS_CHECKPOINT_REPOSITORY_CONFIGURATION", FILE_SYSTEM_CHECKPOINT_CONFIG),
        ]
        mount(
            "checkpoint-volume", CHECKPOINT_DIR, {"hostPath": {"path": settings.checkpoint_path, "type": ""}}
        )

    if spec.app_properties_secret:
        mount(
            "app-properties-secret-volume",
            APP_PROPERTIES_DIR,
            {"secret": {"secretName": spec.app_properties_secret}},
        )
    if spec.restricted_properties_secret:
        secret = {"secret": {"secretName": spec.restricted_properties_secret}}
        mount("restricted-properties-secret-volume", RESTRICTED_PROPERTIES_DIR, secret)

    ports = [
        {"name": f"sys-{i}", "containerPort": PE_PORT_BASE + i, "protocol": "TCP"}
        for i in range(spec.input_ports)
    ]
    ports += [
        {"name": "sys-metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        {"name": NOTIFICATIONS_CONTAINER_PORT_NAME, "containerPort": NOTIFICATIONS_PORT, "protocol": "UDP"},
        {
            "name": CONSISTENT_REGION_CONTAINER_PORT_NAME,
            "containerPort": CONSISTENT_REGION_PORT,
            "protocol": "UDP",
        },
    ]
    container: dict[str, Any] = {
        "name": "pe",
        "image": image,
        "imagePullPolicy": (spec.image_pull_policy or job.spec.image_pull_policy).value,
        "args": [f"{settings.install_dir}/system/impl/bin/streams-k8s-bootstrap"],
        "env": env,
        "ports": ports,
        "resources": spec.resources.to_wire(),
        "livenessProbe": {
            "exec": {"command": ["cat", "/tmp/live"]},
            "initialDelaySeconds": spec.initial_probe_delay_in_seconds,
            "periodSeconds": spec.probe_interval_in_seconds,
            "failureThreshold": spec.probe_failure_threshold,
        },
        "volumeMounts": mounts,
        "securityContext": container_security(ptrace=spec.needs_ptrace),
    }

    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": {
            "runAsUser": RUN_AS_USER,
            "runAsGroup": RUN_AS_GROUP,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "dnsConfig": {"options": [{"name": "single-request-reopen"}]},
        "containers": [container],
        "volumes": volumes,
    }
    if pull_secret := spec.image_pull_secret or job.spec.image_pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
    if placement.node_name is not None:
        pod_spec["nodeName"] = placement.node_name
    if placement.affinity:
        pod_spec["affinity"] = placement.affinity
    if placement.tolerations:
        pod_spec["tolerations"] = placement.tolerations

    annotations = {
        k: v
        for k, v in pe.metadata.annotations.items()
        if k in (APPLICATION_NAME_ANNOTATION, APPLICATION_SCOPE_ANNOTATION)
    }
    if spec.content_id:
        annotations[CONTENT_ID_ANNOTATION] = spec.content_id
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job_name, spec.id, str(pe.metadata.uid), launch_count),
            "namespace": namespace,
            "labels": {
                **placement.labels,
                APP_LABEL: APP_VALUE,
                SVC_LABEL: SVC_PE,
                JOB_LABEL: job_name,
                GENERATION_LABEL: str(generation),
                PE_LABEL: str(spec.id),
                LAUNCH_COUNT_LABEL: str(launch_count),
                CR_LABEL: "true" if spec.regions else "false",
            },
            "annotations": annotations,
            "ownerReferences": [owner_reference(pe)],
        },
        "spec": pod_spec,
    }
