"""Run the component on its own: `streams-k8s run --controller streams_k8s.scheduler.kubernetes:setup`.

Configured by `STREAMS_K8S_VREPLICA_*` environment variables; vpods are custom resources
read by `CustomResourceVPodSource`:

    STREAMS_K8S_VREPLICA_NAMESPACE=eventing         # the StatefulSet's namespace
    STREAMS_K8S_VREPLICA_STATEFULSET=dispatcher
    STREAMS_K8S_VREPLICA_CAPACITY=20                # vreplicas per pod
    STREAMS_K8S_VREPLICA_VPODS=example.com/v1/consumers
    STREAMS_K8S_VREPLICA_VREPLICAS_FIELD=consumers  # spec field with the vreplicas [vreplicas]
    STREAMS_K8S_VREPLICA_SCHEDULER_CONFIGMAP=config-scheduler   # absent: MAXFILLUP
    STREAMS_K8S_VREPLICA_DESCHEDULER_CONFIGMAP=config-descheduler
    STREAMS_K8S_VREPLICA_REFRESH_PERIOD=100         # seconds between periodic autoscaler runs

The policy ConfigMaps (in the StatefulSet's namespace) use the seed's format and are read
once at startup; a missing or invalid one stops the start with a one-line reason.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.manager import Manager
from streams_k8s.scheduler.framework import PolicyError
from streams_k8s.scheduler.kubernetes.controller import SchedulerConfig, VReplicaScheduler
from streams_k8s.scheduler.kubernetes.source import CustomResourceVPodSource
from streams_k8s.scheduler.plugins import default_registry
from streams_k8s.scheduler.policy import MAXFILLUP, Policy, policy_from_configmap


class VReplicaSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STREAMS_K8S_VREPLICA_", extra="forbid")

    namespace: str = Field(min_length=1)
    statefulset: str = Field(min_length=1)
    capacity: int = Field(ge=1)
    vpods: str = Field(pattern=r"^[^/\s]+/[^/\s]+/[^/\s]+$", description="GROUP/VERSION/PLURAL")
    vreplicas_field: str = "vreplicas"
    vpod_namespace: str | None = None
    vpod_label_selector: str | None = None
    scheduler_configmap: str | None = None
    descheduler_configmap: str | None = None
    refresh_period: float = Field(100.0, gt=0)

    def vpod_resource(self) -> Resource:
        group, version, plural = self.vpods.split("/")
        return Resource(group, version, plural)


class SetupError(Exception):
    """The component cannot start; the message says why in one line."""


SettingsT = TypeVar("SettingsT", bound=BaseSettings)


def settings_from_environment(model: type[SettingsT]) -> SettingsT:
    """``model`` from its environment variables; the first bad one as a ``SetupError``."""
    try:
        return model()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = "_".join(str(p) for p in first["loc"]).upper()
        raise SetupError(f"{model.model_config.get('env_prefix', '')}{field}: {first['msg']}") from None


async def load_policy(client: KubeClient, namespace: str, name: str) -> Policy:
    try:
        configmap = await client.get(CONFIGMAPS, name, namespace)
    except ApiError as exc:
        raise SetupError(f"policy ConfigMap {namespace}/{name}: {exc}") from None
    try:
        return policy_from_configmap(configmap.get("data") or {}, default_registry())
    except PolicyError as exc:
        raise SetupError(f"policy ConfigMap {namespace}/{name}: {exc}") from None


async def setup(manager: Manager) -> VReplicaScheduler:
    """Declare the component on `manager` from the environment."""
    settings = settings_from_environment(VReplicaSettings)
    client = manager.client
    policy: Policy | str = MAXFILLUP
    if settings.scheduler_configmap:
        policy = await load_policy(client, settings.namespace, settings.scheduler_configmap)
    descheduler = None
    if settings.descheduler_configmap:
        descheduler = await load_policy(client, settings.namespace, settings.descheduler_configmap)
    config = SchedulerConfig(
        settings.namespace,
        settings.statefulset,
        settings.capacity,
        policy,
        descheduler,
        refresh_period=settings.refresh_period,
    )
    source = CustomResourceVPodSource(
        settings.vpod_resource(),
        vreplicas_field=settings.vreplicas_field,
        namespace=settings.vpod_namespace,
        label_selector=settings.vpod_label_selector,
    )
    return VReplicaScheduler(manager, config, source)
