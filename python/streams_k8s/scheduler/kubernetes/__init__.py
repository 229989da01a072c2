"""The vreplica scheduler on Kubernetes: a controller component on `streams_k8s.k8s`.

    source = CustomResourceVPodSource(Resource("example.com", "v1", "consumers", "Consumer"))
    VReplicaScheduler(manager, SchedulerConfig("ns", "pool", capacity=10), source)

See `controller` for what it watches and does, `source` for the vpod protocol, and
`standalone` for running it alone: `streams-k8s run --controller streams_k8s.scheduler.kubernetes:setup`.
"""

from streams_k8s.scheduler.kubernetes.cluster import ClusterCache, StatefulSetMissing
from streams_k8s.scheduler.kubernetes.controller import (
    Evictor,
    SchedulerConfig,
    VReplicaScheduler,
    marking_evictor,
)
from streams_k8s.scheduler.kubernetes.source import (
    SCHEDULED,
    CustomResourceVPodSource,
    InvalidVPod,
    Outcome,
    VPodSource,
)
from streams_k8s.scheduler.kubernetes.standalone import SetupError, VReplicaSettings, setup

__all__ = [
    "SCHEDULED",
    "ClusterCache",
    "CustomResourceVPodSource",
    "Evictor",
    "InvalidVPod",
    "Outcome",
    "SchedulerConfig",
    "SetupError",
    "StatefulSetMissing",
    "VPodSource",
    "VReplicaScheduler",
    "VReplicaSettings",
    "marking_evictor",
    "setup",
]
