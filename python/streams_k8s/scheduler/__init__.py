"""Multi-tenant vreplica scheduler: many vpods share the pods of one StatefulSet.

Pure core, no I/O: an adapter feeds it a `ClusterSnapshot` and applies what comes back
(placements for each vpod's status, StatefulSet replicas, evictions, annotation removals).
Faithful to the plugin-era Knative Eventing scheduler, minus its known defects.
"""

from streams_k8s.scheduler.autoscaler import Autoscaler, AutoscaleResult, Eviction, Evictor
from streams_k8s.scheduler.framework import (
    FilterPlugin,
    PluginError,
    PluginRegistry,
    PolicyError,
    ScorePlugin,
    SpreadView,
)
from streams_k8s.scheduler.model import (
    UNKNOWN_ZONE,
    UNSCHEDULABLE_ANNOTATION,
    ZONE_LABEL,
    ClusterSnapshot,
    Node,
    Placement,
    Pod,
    Taint,
    VPod,
)
from streams_k8s.scheduler.plugins import default_registry
from streams_k8s.scheduler.policy import MAXFILLUP, PluginSpec, Policy, policy_from_configmap
from streams_k8s.scheduler.scheduler import NotEnoughReplicas, Scheduler, ScheduleResult
from streams_k8s.scheduler.state import State

__all__ = [
    "MAXFILLUP",
    "UNKNOWN_ZONE",
    "UNSCHEDULABLE_ANNOTATION",
    "ZONE_LABEL",
    "AutoscaleResult",
    "Autoscaler",
    "ClusterSnapshot",
    "Eviction",
    "Evictor",
    "FilterPlugin",
    "Node",
    "NotEnoughReplicas",
    "Placement",
    "PluginError",
    "PluginRegistry",
    "PluginSpec",
    "Pod",
    "Policy",
    "PolicyError",
    "ScheduleResult",
    "Scheduler",
    "ScorePlugin",
    "SpreadView",
    "State",
    "Taint",
    "VPod",
    "default_registry",
    "policy_from_configmap",
]
