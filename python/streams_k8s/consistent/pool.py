"""The shared coordinator pool's scheduler: the vreplica scheduler over ConsistentRegionOperators.

In shared mode each job's ConsistentRegionOperator is a vpod whose vreplicas are its regions
(``spec.numRegions``); the vreplica scheduler (``streams_k8s.scheduler.kubernetes``) places
them on the pods of the pool StatefulSet, at most ``capacity`` regions per pod, writes the
placements to the operator's ``status.placements``, grows the StatefulSet on demand and
compacts it when jobs go. The coordinator pods read the placements (``PlacedJobs``): a job runs
on the pod holding most of its regions. An eviction (compaction, a pod on a lost node) takes
the job's placements off a pod; the scheduler puts them elsewhere, and the coordinator there
takes the job over and forces a reset of its regions, as after a restart.

Run it once per pool, with leader election (one replica schedules, the others wait):

    streams-k8s run --controller streams_k8s.consistent.pool:setup --lease-name streams-cr-pool

configured by ``STREAMS_K8S_CR_POOL_*`` variables:

    STREAMS_K8S_CR_POOL_NAMESPACE=streams      # the pool's namespace (its jobs are there too)
    STREAMS_K8S_CR_POOL_STATEFULSET=streams-consistent-region-coordinators
    STREAMS_K8S_CR_POOL_CAPACITY=32            # regions one coordinator pod drives at most
    STREAMS_K8S_CR_POOL_SCHEDULER_CONFIGMAP=   # policy in the seed's ConfigMap form [MAXFILLUP]
    STREAMS_K8S_CR_POOL_DESCHEDULER_CONFIGMAP=
    STREAMS_K8S_CR_POOL_REFRESH_PERIOD=100     # seconds between scale-down / compaction runs

Default policy: MAXFILLUP. A job is driven from one pod whatever its placements, so spreading
its regions over pods, nodes or zones buys no availability (losing any of those pods moves
the whole job anyway) and only splits the job, which makes its runner drive regions its
placements count elsewhere. MAXFILLUP fills the lowest ordinals first, so a job is split only
when no pod has room for it whole, the pool stays as small as the regions need (ceil of
regions / capacity pods) and compaction empties the highest ordinals. A plugin policy (for
example the HA profile: ``AvailabilityZonePriority`` + ``EvenPodSpread``) is still available
through the ConfigMaps, for operators who prefer spreading each job's load.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams_k8s.consistent.kinds import REGION_OPERATORS
from streams_k8s.consistent.pool_manifests import POOL_LABELS, POOL_NAME
from streams_k8s.k8s.manager import Manager
from streams_k8s.scheduler.kubernetes import (
    CustomResourceVPodSource,
    SchedulerConfig,
    VReplicaScheduler,
)
from streams_k8s.scheduler.kubernetes.standalone import load_policy, settings_from_environment
from streams_k8s.scheduler.model import VPod
from streams_k8s.scheduler.policy import MAXFILLUP, Policy

SHARED = "shared"


class RegionOperatorVPods(CustomResourceVPodSource):
    """Shared-mode ConsistentRegionOperators as vpods: ``spec.numRegions`` vreplicas each.

    Operators of dedicated-mode jobs are not vpods (their coordinator has its own Deployment):
    to the scheduler they do not exist."""

    def __init__(self, namespace: str) -> None:
        super().__init__(
            REGION_OPERATORS,
            vreplicas_field="numRegions",
            namespace=namespace,
            component="consistent-region-pool",
        )

    def _shared(self, key: str) -> bool:
        obj = self._object(key)
        return obj is not None and (obj.get("spec") or {}).get("mode") == SHARED

    def keys(self) -> Iterable[str]:
        return list(filter(self._shared, super().keys()))

    def get(self, key: str) -> VPod | None:
        return super().get(key) if self._shared(key) else None


class PoolSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STREAMS_K8S_CR_POOL_", extra="forbid")

    namespace: str = Field(min_length=1)
    statefulset: str = Field(POOL_NAME, min_length=1)
    capacity: int = Field(32, ge=1, description="regions one coordinator pod drives at most")
    scheduler_configmap: str | None = None
    descheduler_configmap: str | None = None
    refresh_period: float = Field(100.0, gt=0)


async def setup(manager: Manager, settings: PoolSettings | None = None) -> VReplicaScheduler:
    """Declare the pool's scheduler on ``manager`` (settings from the environment by default)."""
    if settings is None:
        settings = settings_from_environment(PoolSettings)
    policy: Policy | str = MAXFILLUP
    if settings.scheduler_configmap:
        policy = await load_policy(manager.client, settings.namespace, settings.scheduler_configmap)
    descheduler = None
    if settings.descheduler_configmap:
        descheduler = await load_policy(manager.client, settings.namespace, settings.descheduler_configmap)
    config = SchedulerConfig(
        settings.namespace,
        settings.statefulset,
        settings.capacity,
        policy,
        descheduler,
        refresh_period=settings.refresh_period,
        pod_label_selector=",".join(f"{k}={v}" for k, v in POOL_LABELS.items()),
    )
    return VReplicaScheduler(manager, config, RegionOperatorVPods(settings.namespace))
