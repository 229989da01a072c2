"""Multi-tenant vreplica scheduler: many vpods share the pods of one StatefulSet.

Pure core, no I/O. An adapter feeds it a `ClusterSnapshot` (`Scheduler.state`), calls
`Scheduler.schedule(state, key)` per vpod and writes the placements to the vpod's status
(requeueing after `NotEnoughReplicas.requeue_after` on an error), runs `Autoscaler.autoscale`
on the same kind of state (on demand after a shortfall, and periodically with scale-down),
then applies the replicas, the evictions (through its evictor callback) and the annotation
removals.
`streams_k8s.scheduler.kubernetes` is that adapter, as a controller component on the
project's runtime (the only part of this package that does I/O).

Faithful to the plugin-era Knative Eventing scheduler (knative/eventing v0.43), except for
its known defects, which are fixed here:
- scores are exact integers; upstream's wrapping uint64 sum inverted descheduler choices;
- ties are broken deterministically (lowest ordinal when adding, highest when removing)
  instead of at random;
- the state is built once per snapshot and updated per vreplica instead of being rebuilt
  from the listers for every vreplica;
- a reservation is the vpod's whole intended placement, dropped once its status shows it or
  the vpod is gone (upstream merged passes into it and leaked capacity);
- the descheduler only considers pods the vpod still occupies; the even-spread filter and
  score treat full pods alike; MAXFILLUP never picks a missing or unschedulable pod;
- a malformed pod name is not one of our pods (upstream mapped it to ordinal 2^31-1), and
  a pod whose node is unknown is unschedulable instead of failing the whole state;
- no policy can put a vreplica on a full pod, with or without PodFitsResources;
- policies are validated when loaded: unknown plugins, weights outside 0..10 and bad
  arguments are errors, never a skipped plugin or an empty policy;
- MAXFILLUP sizing does not count pods stranded on lost or cordoned nodes as capacity;
- in plugin mode the autoscaler shrinks the set down to the last pod holding vreplicas,
  where upstream never went below the last schedulable pod (idle pods kept forever);
- compaction counts the top pods from the replicas and evicts placements left on pods past
  them; emptied pods still annotated unschedulable below the needed size are unmarked.
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
