"""Plain data the scheduler works on: vpods, placements and a snapshot of the cluster.

A vpod (virtual pod) is one resource that needs `vreplicas` virtual replicas; each virtual
replica runs inside one real pod of a shared StatefulSet, and each pod holds at most
`capacity` of them. An adapter turns the Kubernetes objects into a `ClusterSnapshot`; the
simulator CLI builds one from JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Pods carrying this annotation (any value `strconv.ParseBool` reads as true) get no new vreplicas.
UNSCHEDULABLE_ANNOTATION = "eventing.knative.dev/unschedulable"
ZONE_LABEL = "topology.kubernetes.io/zone"
UNKNOWN_ZONE = "unknown"
# Only this taint makes a node unschedulable for vreplicas (with effect NoExecute or NoSchedule).
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNREACHABLE_EFFECTS = frozenset({"NoExecute", "NoSchedule"})

_TRUE_WORDS = frozenset({"1", "t", "T", "TRUE", "true", "True"})


@dataclass(frozen=True, slots=True)
class Placement:
    """`vreplicas` virtual replicas of one vpod on the pod `pod_name`."""

    pod_name: str
    vreplicas: int


@dataclass(frozen=True, slots=True)
class VPod:
    """A virtual pod: its key (`namespace/name`), desired vreplicas and committed placements."""

    key: str
    vreplicas: int
    placements: tuple[Placement, ...] = ()


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    zone: str | None = None
    unschedulable: bool = False  # cordoned (`spec.unschedulable`)
    taints: tuple[Taint, ...] = ()

    @property
    def accepts_vreplicas(self) -> bool:
        """False when cordoned or tainted unreachable; other taints (not-ready, ...) do not count."""
        if self.unschedulable:
            return False
        return not any(t.key == UNREACHABLE_TAINT and t.effect in UNREACHABLE_EFFECTS for t in self.taints)


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod of the StatefulSet; `node` is empty while the pod is Pending."""

    name: str
    node: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def marked_unschedulable(self) -> bool:
        return self.annotations.get(UNSCHEDULABLE_ANNOTATION, "") in _TRUE_WORDS


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything the scheduler reads from the cluster, at one point in time."""

    statefulset_name: str
    replicas: int
    capacity: int
    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    vpods: tuple[VPod, ...] = ()
    namespace: str = ""

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"pod capacity must be at least 1, got {self.capacity}")
        if self.replicas < 0:
            raise ValueError(f"replicas must not be negative, got {self.replicas}")


def pod_name(statefulset_name: str, ordinal: int) -> str:
    return f"{statefulset_name}-{ordinal}"


def ordinal_of(statefulset_name: str, name: str) -> int | None:
    """The ordinal of a StatefulSet pod name, or None when the name is not `<statefulset>-<n>`.

    Upstream returned MaxInt32 for a malformed name, which then grew the free-capacity table
    to two billion entries; a name that is not ours simply is not one of our pods.
    """
    prefix, sep, digits = name.rpartition("-")
    if not sep or prefix != statefulset_name or not digits.isdigit() or digits != str(int(digits)):
        return None
    return int(digits)
