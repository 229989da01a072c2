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
from dataclasses import dataclass, field
from typing import Any

import orjson

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_PROPERTIES_DIR,
    APP_VALUE,
    APPLICATION_NAME_ANNOTATION,
    APPLICATION_SCOPE_ANNOTATION,
    CHECKPOINT_DIR,
    CONTENT_ID_ANNOTATION,
    CR_LABEL,
    DATA_DIR,
    FILE_SYSTEM_CHECKPOINT_CONFIG,
    GENERATION_LABEL,
    JOB_CONFIG_DIR,
    JOB_LABEL,
    JOB_NAME_ENV,
    LAUNCH_COUNT_LABEL,
    LIVENESS_FILE,
    PE_CONFIG_DIR,
    PE_ID_ENV,
    PE_LABEL,
    POD_TEMPLATE_ANNOTATION,
    RESTRICTED_PROPERTIES_DIR,
    SVC_LABEL,
    SVC_PE,
    pe_service_name,
    transport_secret_name,
)
from streams_k8s.api.job import Job
from streams_k8s.api.processing_element import (
    BuildType,
    ProcessingElement,
    ProcessingElementSpec,
    TransportSecurityType,
)
from streams_k8s.controller.children.pe_ports import container_ports
from streams_k8s.controller.placement.constraints import PodPlacement

RUN_AS_USER = 2098
RUN_AS_GROUP = 2015
# What a ptrace-using PE (debugger, valgrind) adds to its dropped capabilities.
PTRACE_CAPABILITIES = ["SYS_PTRACE"]


@dataclass(frozen=True, slots=True)
class PeRuntimeSettings:
    """Operator-wide settings of the PE runtime (from the operator's environment)."""

    registry: str = "docker.io"
    image_namespace: str = "openstreams"
    build_type: BuildType = BuildType.RELEASE
    install_dir: str = "/usr/local/streams"
    data_path: str | None = None
    checkpoint_path: str | None = None


# PE settings that steer only the controllers (restart policies) and the PE's code, which has its
# own content id: the pod template is everything else.
_NOT_IN_POD = frozenset(
    {
        "delete_failed_pod",
        "restart_completed_pod",
        "restart_deleted_pod",
        "restart_failed_pod",
        "restartable",
        "content_id",
        "suspended",
    }
)


def pod_template_hash(spec: ProcessingElementSpec) -> str:
    """A short hash of the PE settings its pods are made from: pods carry the one they were made
    with, and a PE whose settings hash otherwise gets a new pod (``pes.lifecycle``)."""
    fields = spec.model_dump(mode="json", exclude=set(_NOT_IN_POD))
    return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def pod_name(job: str, pe_id: int, pe_uid: str, launch_count: int) -> str:
    """`<job>-<peId>-<suffix>`, the suffix fixed by PE incarnation and launch so creation is idempotent."""
    digest = hashlib.sha1(f"{pe_uid}/{launch_count}".encode(), usedforsecurity=False).digest()
    suffix = "".join("bcdfghjklmnpqrstvwxz2456789"[b % 27] for b in digest[:5])
    return f"{pe_service_name(job, pe_id)}-{suffix}"


def container_security(*, ptrace: bool) -> dict[str, Any]:
    """The PE container's securityContext: Pod Security "restricted", plus SYS_PTRACE alone when
    the PE is debugged (a capability "restricted" and "baseline" refuse: level privileged)."""
    capabilities: dict[str, list[str]] = {"drop": ["ALL"]}
    if ptrace:
        capabilities["add"] = list(PTRACE_CAPABILITIES)
    return {"allowPrivilegeEscalation": False, "capabilities": capabilities}


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
    volumes = _Volumes.of(pe.spec, str(job.metadata.name), settings)
    checkpoints = _checkpoint_environment(pe.spec, settings, redis_config, volumes)  # mounts come in order
    volumes.add_secrets(pe.spec)
    env = [*_environment(job, pe, launch_count, settings), *checkpoints]
    container = _container(job, pe.spec, settings, env, volumes.mounts)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(job, pe, generation, launch_count, placement),
        "spec": _pod_spec(job, pe.spec, container, volumes.volumes, placement),
    }


def _env(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


def _environment(
    job: Job, pe: ProcessingElement, launch_count: int, settings: PeRuntimeSettings
) -> list[dict[str, str]]:
    """The runtime's STREAMS_* variables (those of a checkpoint store aside)."""
    spec, job_name = pe.spec, str(job.metadata.name)
    env = [
        _env("STREAMS_DOMAIN_ID", "kubernetes"),
        _env("STREAMS_INITIAL_TRACE_LEVEL", spec.runtime_trace_level.value),
        _env("STREAMS_INSTALL", settings.install_dir),
        _env("STREAMS_INSTANCE_ID", str(job.metadata.namespace)),
        _env(JOB_NAME_ENV, job_name),
        _env("STREAMS_NS", "K8S:"),
        _env(PE_ID_ENV, str(spec.id)),
        _env("STREAMS_PE_LAUNCH_COUNT", str(launch_count)),
        _env("STREAMS_PE_NAME", pe_service_name(job_name, spec.id)),
        _env("STREAMS_PE_USE_VALGRIND", "true" if spec.run_with_valgrind else "false"),
        _env("STREAMS_SAB_NAME", spec.sab_name or job.spec.bundle.name),
        _env("STREAMS_TRANSPORT_SECURITY_TYPE", spec.transport_security_type.value),
    ]
    if spec.app_trace_level is not None:
        env.append(_env("STREAMS_APP_TRACE_LEVEL", spec.app_trace_level.value))
    return env


@dataclass(slots=True)
class _Volumes:
    """The pod's volumes and the container's mounts of them, in the order they are added."""

    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, spec: ProcessingElementSpec, job: str, settings: PeRuntimeSettings) -> _Volumes:
        """The PE's and the job's ConfigMaps (with TLS, the job's one projected with its transport
        Secret into the same directory), then the data directory, if any."""
        volumes = cls()
        volumes.add("pe-config-volume", PE_CONFIG_DIR, {"configMap": {"name": pe_service_name(job, spec.id)}})
        job_config: dict[str, Any] = {"configMap": {"name": job}}
        if spec.transport_security_type is TransportSecurityType.TLS_V1_2:
            transport = {"secret": {"name": transport_secret_name(job)}}
            job_config = {"projected": {"sources": [job_config, transport]}}
        volumes.add("job-config-volume", JOB_CONFIG_DIR, job_config)
        if spec.data_volume_claim is not None:
            claim = spec.data_volume_claim
            volumes.add("data-volume", DATA_DIR, _claim(claim.name), claim.sub_path)
        elif (data_path := spec.data_path or settings.data_path) is not None:
            volumes.add("data-volume", DATA_DIR, _host_path(data_path))
        return volumes

    def add(self, name: str, path: str, source: dict[str, Any], sub_path: str | None = None) -> None:
        self.volumes.append({"name": name, **source})
        self.mounts.append({"name": name, "mountPath": path, **({"subPath": sub_path} if sub_path else {})})

    def add_secrets(self, spec: ProcessingElementSpec) -> None:
        """The application's properties and restricted properties, when the PE names their Secrets."""
        if spec.app_properties_secret:
            secret = {"secret": {"secretName": spec.app_properties_secret}}
            self.add("app-properties-secret-volume", APP_PROPERTIES_DIR, secret)
        if spec.restricted_properties_secret:
            secret = {"secret": {"secretName": spec.restricted_properties_secret}}
            self.add("restricted-properties-secret-volume", RESTRICTED_PROPERTIES_DIR, secret)


def _claim(name: str) -> dict[str, Any]:
    return {"persistentVolumeClaim": {"claimName": name}}


def _host_path(path: str) -> dict[str, Any]:
    return {"hostPath": {"path": path, "type": ""}}


def _checkpoint_environment(
    spec: ProcessingElementSpec, settings: PeRuntimeSettings, redis_config: str | None, volumes: _Volumes
) -> list[dict[str, str]]:
    """Where consistent-region checkpoints go (mounting a file-system store): the PE's file system
    or redis repository (redis needs the job's redis configuration), else the operator's
    checkpoint directory; nothing when the PE has no checkpoint repository."""
    repository = spec.checkpoint_repository
    if repository is None:
        return []
    if repository.file_system is not None:
        store = repository.file_system
        if store.volume_claim is not None:
            claim = store.volume_claim
            volumes.add("checkpoint-volume", CHECKPOINT_DIR, _claim(claim.name), claim.sub_path)
        else:
            volumes.add("checkpoint-volume", CHECKPOINT_DIR, _host_path(store.path))
        return _checkpoint_store("fileSystem", FILE_SYSTEM_CHECKPOINT_CONFIG)
    if repository.redis is not None and redis_config is not None:
        return _checkpoint_store("redis", redis_config)
    if settings.checkpoint_path is not None:
        volumes.add("checkpoint-volume", CHECKPOINT_DIR, _host_path(settings.checkpoint_path))
        return _checkpoint_store("fileSystem", FILE_SYSTEM_CHECKPOINT_CONFIG)
    return []


def _checkpoint_store(kind: str, configuration: str) -> list[dict[str, str]]:
    return [
        _env("STREAMS_CHECKPOINT_REPOSITORY", kind),
        _env("STREAMS_CHECKPOINT_REPOSITORY_CONFIGURATION", configuration),
    ]


def _container(
    job: Job,
    spec: ProcessingElementSpec,
    settings: PeRuntimeSettings,
    env: list[dict[str, str]],
    mounts: list[dict[str, Any]],
) -> dict[str, Any]:
    """The runtime's container: its image (the PE's, else the operator's registry and build type),
    bootstrap, ports (`pe_ports`), liveness probe and security."""
    build_type = (spec.effective_build_type or settings.build_type).value.lower()
    image = spec.image or f"{settings.registry}/{settings.image_namespace}/streams-runtime:6.{build_type}"
    return {
        "name": "pe",
        "image": image,
        "imagePullPolicy": (spec.image_pull_policy or job.spec.image_pull_policy).value,
        "args": [f"{settings.install_dir}/system/impl/bin/streams-k8s-bootstrap"],
        "env": env,
        "ports": container_ports(spec.input_ports),
        "resources": spec.resources.to_wire(),
        "livenessProbe": {
            "exec": {"command": ["cat", LIVENESS_FILE]},
            "initialDelaySeconds": spec.initial_probe_delay_in_seconds,
            "periodSeconds": spec.probe_interval_in_seconds,
            "failureThreshold": spec.probe_failure_threshold,
        },
        "volumeMounts": mounts,
        "securityContext": container_security(ptrace=spec.needs_ptrace),
    }


def _pod_spec(
    job: Job,
    spec: ProcessingElementSpec,
    container: dict[str, Any],
    volumes: list[dict[str, Any]],
    placement: PodPlacement,
) -> dict[str, Any]:
    """Never restarted in place (the controller relaunches, counting launches), no service-account
    token, Pod Security "restricted", and the PE's placement."""
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
    return pod_spec


def _metadata(
    job: Job, pe: ProcessingElement, generation: int, launch_count: int, placement: PodPlacement
) -> dict[str, Any]:
    """Name fixed by PE and launch, the runtime's labels (after the placement's), the PE's
    application annotations and content id, owned by the PE."""
    spec, job_name = pe.spec, str(job.metadata.name)
    annotations = {
        k: v
        for k, v in pe.metadata.annotations.items()
        if k in (APPLICATION_NAME_ANNOTATION, APPLICATION_SCOPE_ANNOTATION)
    }
    if spec.content_id:
        annotations[CONTENT_ID_ANNOTATION] = spec.content_id
    annotations[POD_TEMPLATE_ANNOTATION] = pod_template_hash(spec)
    return {
        "name": pod_name(job_name, spec.id, str(pe.metadata.uid), launch_count),
        "namespace": str(job.metadata.namespace),
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
        "ownerReferences": [pe.as_owner()],
    }
