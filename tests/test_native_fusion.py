"""The native fusion boundary: named node specs in, PEs and named notices out, errors with attributes."""

from __future__ import annotations

from typing import Any

import pytest

from streams_k8s._native import FusionError, FusionNode, fuse


def node(**fields: Any) -> FusionNode:
    base: dict[str, Any] = {
        "colocations": [],
        "exlocations": [],
        "isolated": False,
        "host_colocations": [],
        "host_exlocations": [],
        "host_isolated": False,
        "host_key": 0,
        "consistent_region": None,
        "restartable": True,
        "relocatable": True,
        "jvm": None,
        "channel": None,
    }
    return FusionNode(**{**base, **fields})


def test_a_node_spec_keeps_every_field_by_name() -> None:
    spec = node(colocations=(3, 4), host_exlocations=[7], host_key=2, consistent_region=1, jvm=5, channel=9)
    assert spec.colocations == [3, 4]
    assert spec.host_exlocations == [7]
    assert (spec.host_key, spec.consistent_region, spec.jvm, spec.channel) == (2, 1, 5, 9)
    assert not spec.isolated
    assert not spec.host_isolated
    assert spec.restartable
    assert spec.relocatable
    assert "consistent_region=1" in repr(spec)
    with pytest.raises(TypeError):
        FusionNode(colocations=[])  # type: ignore[call-arg]  # every field is required


def test_fusion_reads_the_named_fields() -> None:
    # Different consistent regions never share a PE: the partitioner saw the field.
    pes, notices = fuse([node(consistent_region=0), node(consistent_region=1)], [(0, 1)], manual=1)
    assert pes == [[0], [1]]
    [notice] = notices
    assert (notice.kind, notice.asked, notice.got) == ("more", 1, 2)
    assert (notice.constraint, notice.nodes) == ("consistent region", (0, 1))


def test_too_few_units_is_a_fewer_notice_without_a_constraint() -> None:
    pes, [notice] = fuse([node(), node()], [(0, 1)], manual=5)
    assert len(pes) == 2
    assert (notice.kind, notice.asked, notice.got) == ("fewer", 5, 2)
    assert notice.constraint is None
    assert notice.nodes is None


def test_an_impossible_colocation_names_its_constraint_and_nodes() -> None:
    # Nodes 0 and 2 are colocated but also exlocated: no partition can hold them.
    bad = node(colocations=[0], exlocations=[1])
    with pytest.raises(FusionError) as err:
        fuse([bad, node(), bad], [(0, 1), (1, 2)], manual=1)
    assert err.value.constraint == "partitionExlocation"
    assert err.value.nodes == (0, 2)
    assert str(err.value) == (
        "nodes 0 and 2 must share a PE but their partitionExlocation constraints forbid it"
    )
    assert isinstance(err.value, ValueError)


def test_fuse_takes_node_specs_only() -> None:
    with pytest.raises(TypeError):
        fuse([([], [], False, [], [], False, 0, None, True, True, None, None)], [])  # type: ignore[list-item]
