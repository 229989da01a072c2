"""Host placement: SPL host constraints of a job's PEs turned into Kubernetes scheduling.

A pure function of the job's host pools, its PEs' placement and the cluster's nodes.

- `host(name)` pins the pod with `nodeName`; `host(IP)` pins it to the node that has that address.
- A pool is *materialised* (given a fixed set of nodes) when it has a size, explicit hosts, is
  exclusive, or is used with an index (`host(Pool[i])`). Its nodes get the label
  `<namespace>.hostpool.streams.ibm.com/<job>-<poolIndex>=<i>` (i = the node's index in the pool)
  and the pool's pods a required node affinity on that key (`Exists`, or `In [i]` for an index).
  Nodes are picked deterministically: nodes that already carry the pool's label first (so a
  re-plan after a restart keeps the pool where it is), then by name.
- A pool with tags that is not materialised asks for nodes labelled `streams.ibm.com/hostpool`
  with one of its tags; the default pool asks for nothing.
- Exclusive pools also taint their nodes `streams.ibm.com/exclusive-pool=<owner>:NoSchedule`,
  and only the pool's pods tolerate it. The controller removes labels and taints when the job goes.
- hostColocation / hostExlocation / hostIsolation become pod labels with required pod
  (anti-)affinity on `kubernetes.io/hostname`, under the runtime's SHA-1 label keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.api.contract import (
    host_colocation_key,
    host_exlocation_key,
    host_isolation_key,
    token_digest,
)
from streams_k8s.api.host_pool import HostPoolSpec
from streams_k8s.api.processing_element import Placement
from streams_k8s.api.spec_values import MembershipMode
from streams_k8s.app import specs
from streams_k8s.controller.placement.label_values import LabelValueError, sanitize_label_value

# A PE's placement and a host pool as a PE or HostPool object states them, or as the plan does
# (`app.specs`, the same fields): a plan is checked without making a model of each PE's.
PeLocation = Placement | specs.Placement
PoolSpec = HostPoolSpec | specs.HostPoolSpec

HOSTPOOL_TAG_LABEL = "streams.ibm.com/hostpool"
EXCLUSIVE_TAINT_KEY = "streams.ibm.com/exclusive-pool"
HOSTNAME = "kubernetes.io/hostname"
_MAX_NAME = 63


class PlacementError(ValueError):
    """Host constraints the cluster cannot satisfy; the message says which and why.

    `depends_on_nodes`: other nodes (more of them, other names, addresses or labels) could satisfy
    them, so the same job may place later; otherwise only a different job or bundle can.
    """

    def __init__(self, message: str, *, depends_on_nodes: bool = False) -> None:
        super().__init__(message)
        self.depends_on_nodes = depends_on_nodes


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def to_wire(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What placement needs to know of a Node."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    addresses: tuple[str, ...] = ()
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()

    @classmethod
    def from_wire(cls, node: Mapping[str, Any]) -> NodeInfo:
        spec, status, meta = node.get("spec", {}), node.get("status", {}), node["metadata"]
        return cls(
            name=meta["name"],
            labels=dict(meta.get("labels") or {}),
            addresses=tuple(a["address"] for a in status.get("addresses") or ()),
            unschedulable=bool(spec.get("unschedulable")),
            taints=tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in spec.get("taints") or ()),
        )

    def exclusive_owner(self) -> str | None:
        return next((t.value for t in self.taints if t.key == EXCLUSIVE_TAINT_KEY), None)


@dataclass(frozen=True, slots=True)
class PlacedPe:
    """A PE as placement sees it: its id and its placement spec."""

    id: int
    placement: PeLocation


@dataclass(slots=True)
class PodPlacement:
    node_name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] = field(default_factory=dict)
    tolerations: list[dict[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class PlacementPlan:
    pods: dict[int, PodPlacement]
    # Pool index → the nodes chosen for a materialised pool, in in-pool index order.
    pool_nodes: dict[int, list[str]]
    # Node name → labels / taints the controller must add for this job.
    node_labels: dict[str, dict[str, str]]
    node_taints: dict[str, list[Taint]]


def _label_safe(text: str) -> str:
    """Keep a generated name within 63 characters while staying unique."""
    if len(text) <= _MAX_NAME:
        return text
    return f"{text[: _MAX_NAME - 13]}.{token_digest(text)[:12].lower()}"


def pool_label_key(namespace: str, job: str, pool_index: int) -> str:
    return f"{namespace}.hostpool.streams.ibm.com/{_label_safe(f'{job}-{pool_index}')}"


def exclusive_owner(namespace: str, job: str, pool_index: int) -> str:
    return _label_safe(f"{namespace}.{job}-{pool_index}")


class _Cluster:
    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.name)
        self.by_name = {n.name: n for n in self.nodes}
        self.by_address = {a: n for n in self.nodes for a in n.addresses}

    def find(self, host: str) -> NodeInfo | None:
        return self.by_name.get(host) or self.by_address.get(host)


def _pool_label(pool: PoolSpec) -> str:
    return f"host pool '{pool.name}'"


def _candidates(pool: PoolSpec, cluster: _Cluster, owner: str) -> list[NodeInfo]:
    usable = [n for n in cluster.nodes if not n.unschedulable and n.exclusive_owner() in (None, owner)]
    if pool.hosts:
        chosen = []
        for host in pool.hosts:
            node = cluster.find(host)
            if node is None:
                raise PlacementError(
                    f"{_pool_label(pool)}: host '{host}' is neither the name nor an address of a node",
                    depends_on_nodes=True,
                )
            if node not in usable:
                raise PlacementError(
                    f"{_pool_label(pool)}: node '{node.name}' (host '{host}') is not schedulable",
                    depends_on_nodes=True,
                )
            chosen.append(node)
        return chosen
    if pool.tags:
        return [n for n in usable if n.labels.get(HOSTPOOL_TAG_LABEL) in pool.tags]
    return usable


def _materialise(
    pool: PoolSpec, cluster: _Cluster, key: str, owner: str, max_index: int | None
) -> list[NodeInfo]:
    candidates = _candidates(pool, cluster, owner)

    # Nodes already in the pool keep their place; then by name.
    def prior_position(node: NodeInfo) -> int:
        value = node.labels.get(key, "")
        return int(value) if value.isdecimal() else len(cluster.nodes)

    if not pool.hosts:  # explicit hosts keep their declared order: host(Pool[i]) is the i-th
        candidates.sort(key=lambda n: (prior_position(n), n.name))
    wanted = pool.size if pool.size is not None else len(candidates)
    where = f"with tags {sorted(pool.tags)}" if pool.tags else "schedulable"
    if len(candidates) < wanted or not candidates:
        needed, found = max(wanted, 1), len(candidates)
        raise PlacementError(
            f"{_pool_label(pool)} needs {needed} node(s) but only {found} {where} node(s) match",
            depends_on_nodes=True,
        )
    chosen = candidates[:wanted]
    if max_index is not None and max_index >= len(chosen):
        # A pool of every matching node grows with the cluster; a sized or listed one does not.
        raise PlacementError(
            f"{_pool_label(pool)} is used with index {max_index} but has {len(chosen)} node(s)",
            depends_on_nodes=pool.size is None and not pool.hosts,
        )
    return chosen


def _add_pod_term(affinity: dict[str, Any], kind: str, key: str, value: str) -> None:
    """A required (anti-)affinity to pods labelled key=value, per node."""
    terms = affinity.setdefault(kind, {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
    expression = {"key": key, "operator": "In", "values": [value]}
    terms.append({"labelSelector": {"matchExpressions": [expression]}, "topologyKey": HOSTNAME})


def _sanitized(token: str, what: str) -> str:
    try:
        return sanitize_label_value(token)
    except LabelValueError as err:
        raise PlacementError(f"{what}: {err}") from err


def plan_placement(
    *,
    namespace: str,
    job: str,
    pools: Sequence[PoolSpec],
    pes: Sequence[PlacedPe],
    nodes: Iterable[NodeInfo],
    with_pods: bool = True,
) -> PlacementPlan:
    """Scheduling constraints for every PE, and the node labels/taints the job needs; without
    ``with_pods`` only the pools' nodes (what the node-placement controller needs on every PE it
    sees added: each PE's constraints would make its reconcile cost grow with the job)."""
    _check_host_constraints(pes)
    cluster = _Cluster(nodes)
    by_index = {pool.index: pool for pool in pools}
    indexed: dict[int, int] = {}
    for pe in pes:
        location = pe.placement.host_pool_location
        if location is None:
            continue
        if location.pool_index not in by_index:
            raise PlacementError(
                f"PE {pe.id} refers to host pool index {location.pool_index}, which the job lacks"
            )
        if location.inpool_index is not None:
            indexed[location.pool_index] = max(indexed.get(location.pool_index, 0), location.inpool_index)

    pool_nodes: dict[int, list[str]] = {}
    node_labels: dict[str, dict[str, str]] = {}
    node_taints: dict[str, list[Taint]] = {}
    for pool in pools:
        exclusive = pool.membership_mode is MembershipMode.EXCLUSIVE
        if not (pool.size is not None or pool.hosts or exclusive or pool.index in indexed):
            continue
        key = pool_label_key(namespace, job, pool.index)
        owner = exclusive_owner(namespace, job, pool.index)
        chosen = _materialise(pool, cluster, key, owner, indexed.get(pool.index))
        pool_nodes[pool.index] = [n.name for n in chosen]
        for position, node in enumerate(chosen):
            node_labels.setdefault(node.name, {})[key] = str(position)
            if exclusive:
                node_taints.setdefault(node.name, []).append(Taint(EXCLUSIVE_TAINT_KEY, owner, "NoSchedule"))

    pods = (
        {pe.id: _pod_placement(pe, namespace, job, by_index, pool_nodes, cluster) for pe in pes}
        if with_pods
        else {}
    )
    return PlacementPlan(pods=pods, pool_nodes=pool_nodes, node_labels=node_labels, node_taints=node_taints)


def _check_host_constraints(pes: Sequence[PlacedPe]) -> None:
    """PEs that are to share a host (hostColocation, also through others) and not to (hostExlocation)
    can never all run: kube-scheduler would leave one Pending for ever. Fusion makes this out of
    constraints that hold operator by operator (a chain's head, exlocated, fused with its tail,
    colocated with the other tails): the job is refused, saying which PEs and tokens."""
    together: dict[int, int] = {}  # PE -> a PE of its colocation class (union-find)

    def root(pe: int) -> int:
        while together.get(pe, pe) != pe:
            together[pe] = together.get(together[pe], together[pe])  # path halving
            pe = together[pe]
        return pe

    first: dict[str, int] = {}
    for pe in pes:
        for token in pe.placement.co_locations:
            other = first.setdefault(token, pe.id)
            together[root(pe.id)] = root(other)
    tokens = {pe.id: pe.placement.co_locations for pe in pes}
    for token in sorted({t for pe in pes for t in pe.placement.ex_locations}):
        seen: dict[int, int] = {}
        for pe in pes:
            if token not in pe.placement.ex_locations:
                continue
            other = seen.setdefault(root(pe.id), pe.id)
            if other != pe.id:
                shared = sorted(set(tokens[other]) | set(tokens[pe.id]))
                raise PlacementError(
                    f"PEs {other} and {pe.id} are to share a host (hostColocation "
                    f"{', '.join(repr(t) for t in shared)}) and to be on different hosts "
                    f"(hostExlocation {token!r}): fuse the operators apart (a larger fusion.manual, "
                    "or fusion.legacy) or change the constraints"
                )


def _pod_placement(
    pe: PlacedPe,
    namespace: str,
    job: str,
    pools: Mapping[int, PoolSpec],
    pool_nodes: Mapping[int, list[str]],
    cluster: _Cluster,
) -> PodPlacement:
    placement = pe.placement
    result = PodPlacement()
    if placement.host is not None:
        node = cluster.find(placement.host)
        if node is None:
            raise PlacementError(
                f"PE {pe.id}: host '{placement.host}' is neither the name nor an address of a node",
                depends_on_nodes=True,
            )
        result.node_name = node.name

    for token in placement.co_locations:
        value = _sanitized(token, f"PE {pe.id} hostColocation")
        result.labels[host_colocation_key(token)] = value
        _add_pod_term(result.affinity, "podAffinity", host_colocation_key(token), value)
    for token in placement.ex_locations:
        value = _sanitized(token, f"PE {pe.id} hostExlocation")
        result.labels[host_exlocation_key(token)] = value
        _add_pod_term(result.affinity, "podAntiAffinity", host_exlocation_key(token), value)
    for operator in placement.isolation_labels:
        result.labels[host_isolation_key(operator)] = _sanitized(operator, f"PE {pe.id} hostIsolation")
    if placement.isolation is not None:
        value = _sanitized(placement.isolation, f"PE {pe.id} hostIsolation")
        _add_pod_term(result.affinity, "podAntiAffinity", host_isolation_key(placement.isolation), value)

    location = placement.host_pool_location
    if location is not None:
        pool = pools[location.pool_index]
        expression: dict[str, Any] | None = None
        if location.pool_index in pool_nodes:
            key = pool_label_key(namespace, job, pool.index)
            expression = (
                {"key": key, "operator": "Exists"}
                if location.inpool_index is None
                else {"key": key, "operator": "In", "values": [str(location.inpool_index)]}
            )
            if pool.membership_mode is MembershipMode.EXCLUSIVE:
                owner = exclusive_owner(namespace, job, pool.index)
                result.tolerations.append(
                    {"key": EXCLUSIVE_TAINT_KEY, "operator": "Equal", "value": owner, "effect": "NoSchedule"}
                )
        elif pool.tags:
            expression = {"key": HOSTPOOL_TAG_LABEL, "operator": "In", "values": sorted(pool.tags)}
        if expression is not None:
            result.affinity["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
    return result
