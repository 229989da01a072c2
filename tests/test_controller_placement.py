"""Host placement: SPL host constraints become node pins, node/pod affinities, labels and taints."""

from __future__ import annotations

from typing import Any

import pytest

from streams_k8s.api.contract import host_colocation_key, host_exlocation_key, host_isolation_key
from streams_k8s.api.host_pool import HostPoolSpec
from streams_k8s.api.processing_element import Placement, PoolLocation
from streams_k8s.api.spec_values import MembershipMode
from streams_k8s.controller.placement.constraints import (
    EXCLUSIVE_TAINT_KEY,
    HOSTPOOL_TAG_LABEL,
    NodeInfo,
    PlacedPe,
    PlacementError,
    PlacementPlan,
    Taint,
    plan_placement,
    pool_label_key,
)
from streams_k8s.controller.placement.label_values import sanitize_label_value


def test_seed_sha1_vectors() -> None:
    assert (
        host_colocation_key("together")
        == "streams.ibm.com/hostcolocation.9034FF9E2B8F00B47A44DFAF3C2A37176C101E2A"
    )
    assert (
        host_exlocation_key("apart")
        == "streams.ibm.com/hostexlocation.B76ADE163D874CC5BC0F408D70CFC165667EEC5F"
    )
    assert (
        host_isolation_key("Sink") == "streams.ibm.com/hostisolation.E53E8D5300C878019A997D4CFB7201C7ED2EE003"
    )


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("Main.Op[3]", "Main.Op-3"),
        ("trailing.", "trailing"),
        ("my::ns::Comp", "my.ns.Comp"),
        ("_hidden_", "u_hidden_u"),
        (".dotted", "d.dotted"),
        ("x" * 80, "x" * 63),
    ],
)
def test_label_values_are_sanitised_like_the_runtime(token: str, value: str) -> None:
    assert sanitize_label_value(token) == value


@pytest.mark.parametrize("token", ["has space", "ünïcode", "a/b", "@"])
def test_unrepresentable_tokens_are_refused(token: str) -> None:
    with pytest.raises(ValueError, match="cannot be a Kubernetes label value"):
        sanitize_label_value(token)


def node(name: str, *, tag: str | None = None, ip: str | None = None, **kwargs: Any) -> NodeInfo:
    labels = {"kubernetes.io/hostname": name, **({HOSTPOOL_TAG_LABEL: tag} if tag else {})}
    labels.update(kwargs.pop("labels", {}))
    return NodeInfo(name=name, labels=labels, addresses=(ip,) if ip else (), **kwargs)


NODES = [
    node("node-a", tag="source", ip="10.0.0.1"),
    node("node-b", tag="source", ip="10.0.0.2"),
    node("node-c", tag="sink", ip="10.0.0.3"),
    node("node-d", ip="10.0.0.4"),
]

DEFAULT_POOL = HostPoolSpec(name="$default", index=0)


def plan(pools: list[HostPoolSpec], pes: list[PlacedPe], nodes: list[NodeInfo] = NODES) -> PlacementPlan:
    return plan_placement(namespace="streams", job="apps", pools=[DEFAULT_POOL, *pools], pes=pes, nodes=nodes)


def pe(pe_id: int, **placement: Any) -> PlacedPe:
    return PlacedPe(id=pe_id, placement=Placement(**placement))


def test_host_by_name_and_by_ip_pin_the_node() -> None:
    result = plan([], [pe(0, host="node-b"), pe(1, host="10.0.0.3")])
    assert result.pods[0].node_name == "node-b"
    assert result.pods[1].node_name == "node-c"


def test_unknown_ip_fails_naming_it() -> None:
    with pytest.raises(PlacementError, match=r"PE 1: host '10\.9\.9\.9' is neither the name nor an address"):
        plan([], [pe(0), pe(1, host="10.9.9.9")])


def test_tagged_pool_becomes_required_node_affinity() -> None:
    sources = HostPoolSpec(name="source_hosts", index=1, tags=["source"])
    result = plan([sources], [pe(0, host_pool_location=PoolLocation(pool_index=1))])
    affinity = result.pods[0].affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTPOOL_TAG_LABEL, "operator": "In", "values": ["source"]}]}
        ]
    }
    assert result.node_labels == {}


def test_pool_too_small_fails_with_counts() -> None:
    sinks = HostPoolSpec(name="sink_hosts", index=1, tags=["sink"], size=2)
    with pytest.raises(
        PlacementError, match=r"'sink_hosts' needs 2 node\(s\) but only 1 .*sink.* node\(s\) match"
    ):
        plan([sinks], [pe(0, host_pool_location=PoolLocation(pool_index=1))])


def test_sized_pool_is_pinned_to_chosen_nodes() -> None:
    sources = HostPoolSpec(name="source_hosts", index=1, tags=["source"], size=1)
    result = plan([sources], [pe(0, host_pool_location=PoolLocation(pool_index=1))])
    key = pool_label_key("streams", "apps", 1)
    assert key == "streams.hostpool.streams.ibm.com/apps-1"
    assert result.pool_nodes == {1: ["node-a"]}
    assert result.node_labels == {"node-a": {key: "0"}}
    expression = result.pods[0].affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"][0]
    assert expression == {"key": key, "operator": "Exists"}


def test_replanning_keeps_a_pool_on_its_nodes() -> None:
    key = pool_label_key("streams", "apps", 1)
    # node-b was chosen before (it carries the pool label); node-a would win by name otherwise.
    nodes = [*NODES[:1], node("node-b", tag="source", labels={key: "0"}), *NODES[2:]]
    sources = HostPoolSpec(name="source_hosts", index=1, tags=["source"], size=1)
    assert plan([sources], [pe(0, host_pool_location=PoolLocation(pool_index=1))], nodes).pool_nodes == {
        1: ["node-b"]
    }


def test_exclusive_pool_taints_its_nodes_and_tolerates_them() -> None:
    sinks = HostPoolSpec(name="sink_hosts", index=1, tags=["sink"], membership_mode=MembershipMode.EXCLUSIVE)
    result = plan([sinks], [pe(0, host_pool_location=PoolLocation(pool_index=1)), pe(1)])
    assert result.node_taints == {"node-c": [Taint(EXCLUSIVE_TAINT_KEY, "streams.apps-1", "NoSchedule")]}
    assert result.pods[0].tolerations == [
        {"key": EXCLUSIVE_TAINT_KEY, "operator": "Equal", "value": "streams.apps-1", "effect": "NoSchedule"}
    ]
    assert result.pods[1].tolerations == []


def test_nodes_held_exclusively_by_another_job_are_not_candidates() -> None:
    taken = node("node-c", tag="sink", taints=(Taint(EXCLUSIVE_TAINT_KEY, "other.job-1", "NoSchedule"),))
    sinks = HostPoolSpec(name="sink_hosts", index=1, tags=["sink"], size=1)
    with pytest.raises(PlacementError, match="only 0"):
        plan([sinks], [pe(0, host_pool_location=PoolLocation(pool_index=1))], [*NODES[:2], taken, NODES[3]])


def test_indexed_pool_gets_a_per_index_label() -> None:
    sources = HostPoolSpec(name="source_hosts", index=1, tags=["source"])
    result = plan(
        [sources],
        [
            pe(0, host_pool_location=PoolLocation(pool_index=1, inpool_index=0)),
            pe(1, host_pool_location=PoolLocation(pool_index=1, inpool_index=1)),
        ],
    )
    key = pool_label_key("streams", "apps", 1)
    assert result.node_labels == {"node-a": {key: "0"}, "node-b": {key: "1"}}
    terms = [
        result.pods[i].affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        for i in (0, 1)
    ]
    assert terms[1] == [{"matchExpressions": [{"key": key, "operator": "In", "values": ["1"]}]}]


def test_index_beyond_the_pool_fails() -> None:
    sources = HostPoolSpec(name="source_hosts", index=1, tags=["source"])
    with pytest.raises(PlacementError, match="used with index 2 but has 2 node"):
        plan([sources], [pe(0, host_pool_location=PoolLocation(pool_index=1, inpool_index=2))])


def test_literal_pool_maps_names_and_ips_to_nodes() -> None:
    literal = HostPoolSpec(name="explicit", index=1, hosts=["10.0.0.4", "node-a"])
    result = plan([literal], [pe(0, host_pool_location=PoolLocation(pool_index=1))])
    assert result.pool_nodes == {1: ["node-d", "node-a"]}
    with pytest.raises(PlacementError, match="host 'node-z' is neither"):
        plan([HostPoolSpec(name="bad", index=1, hosts=["node-z"])], [pe(0)])


def test_cordoned_nodes_do_not_count() -> None:
    cordoned = node("node-b", tag="source", unschedulable=True)
    sources = HostPoolSpec(name="source_hosts", index=1, tags=["source"], size=2)
    with pytest.raises(PlacementError, match="only 1"):
        plan(
            [sources],
            [pe(0, host_pool_location=PoolLocation(pool_index=1))],
            [NODES[0], cordoned, *NODES[2:]],
        )


def test_colocation_exlocation_and_isolation() -> None:
    result = plan(
        [],
        [
            pe(0, co_locations=["together"], isolation_labels=["Sink"]),
            pe(1, co_locations=["together"], ex_locations=["apart"], isolation_labels=["Sink"]),
            pe(2, isolation="Sink"),
        ],
    )
    together, apart, sink = (
        host_colocation_key("together"),
        host_exlocation_key("apart"),
        host_isolation_key("Sink"),
    )
    assert result.pods[0].labels == {together: "together", sink: "Sink"}
    assert result.pods[1].labels == {together: "together", apart: "apart", sink: "Sink"}
    assert result.pods[2].labels == {}
    coloc = result.pods[1].affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert coloc == [
        {
            "labelSelector": {
                "matchExpressions": [{"key": together, "operator": "In", "values": ["together"]}]
            },
            "topologyKey": "kubernetes.io/hostname",
        }
    ]
    anti = result.pods[2].affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["labelSelector"]["matchExpressions"][0] == {
        "key": sink,
        "operator": "In",
        "values": ["Sink"],
    }


def test_unrepresentable_token_fails_submission_naming_the_pe() -> None:
    with pytest.raises(PlacementError, match="PE 3 hostColocation: 'side by side'"):
        plan([], [pe(3, co_locations=["side by side"])])


def test_unknown_pool_index_fails() -> None:
    with pytest.raises(PlacementError, match="host pool index 7"):
        plan([], [pe(0, host_pool_location=PoolLocation(pool_index=7))])


def test_nodes_read_from_the_api_shape() -> None:
    info = NodeInfo.from_wire(
        {
            "metadata": {"name": "n1", "labels": {"a": "b"}},
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.1.1.1"}]},
        }
    )
    assert info == NodeInfo("n1", {"a": "b"}, ("10.1.1.1",), True, (Taint("k", "", "NoSchedule"),))


SIZED_SOURCES = HostPoolSpec(name="source_hosts", index=1, tags=["source"], size=2)


@pytest.mark.parametrize(
    ("pools", "pes", "depends_on_nodes"),
    [
        ([], [pe(1, host="10.9.9.9")], True),  # a node with that address may join
        ([HostPoolSpec(name="bad", index=1, hosts=["node-z"])], [pe(0)], True),
        (
            [HostPoolSpec(name="s", index=1, tags=["sink"], size=2)],
            [pe(0, host_pool_location=PoolLocation(pool_index=1))],
            True,
        ),
        (  # a pool of every matching node grows when nodes are tagged
            [HostPoolSpec(name="s", index=1, tags=["source"])],
            [pe(0, host_pool_location=PoolLocation(pool_index=1, inpool_index=2))],
            True,
        ),
        (  # a pool of 2 used at index 2 is the application's mistake
            [SIZED_SOURCES],
            [pe(0, host_pool_location=PoolLocation(pool_index=1, inpool_index=2))],
            False,
        ),
        ([], [pe(0, host_pool_location=PoolLocation(pool_index=7))], False),
        ([], [pe(3, co_locations=["side by side"])], False),
    ],
    ids=[
        "unknown-ip",
        "unknown-pool-host",
        "too-few-tagged",
        "index-beyond-open-pool",
        "index-beyond-sized-pool",
        "unknown-pool-index",
        "unrepresentable-token",
    ],
)
def test_failures_say_whether_other_nodes_could_satisfy_them(
    pools: list[HostPoolSpec], pes: list[PlacedPe], depends_on_nodes: bool
) -> None:
    with pytest.raises(PlacementError) as failed:
        plan(pools, pes)
    assert failed.value.depends_on_nodes is depends_on_nodes


def test_pes_to_share_a_host_and_not_to_are_refused_naming_them() -> None:
    """Automatic fusion put each chain's exlocated head with its colocated tail: the real
    kube-scheduler left the first such PE Pending for ever."""
    with pytest.raises(PlacementError, match=r"PEs 0 and 1 are to share a host \(hostColocation 'tails'\)"):
        plan(
            [],
            [
                pe(0, co_locations=["tails"], ex_locations=["heads"]),
                pe(1, co_locations=["tails"], ex_locations=["heads"]),
                pe(2, ex_locations=["heads"]),
            ],
        )
    with pytest.raises(PlacementError, match=r"PEs 0 and 2 .*hostColocation 'a', 'b'.*hostExlocation 'x'"):
        plan(  # together through PE 1, which carries both tokens
            [],
            [
                pe(0, co_locations=["a"], ex_locations=["x"]),
                pe(1, co_locations=["a", "b"]),
                pe(2, co_locations=["b"], ex_locations=["x"]),
            ],
        )
    apart = plan([], [pe(0, co_locations=["a"], ex_locations=["x"]), pe(1, ex_locations=["x"])])
    assert set(apart.pods) == {0, 1}
