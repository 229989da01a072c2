"""ADL parser: the real ADLs become a typed model; unsafe or broken XML is refused clearly."""

from __future__ import annotations

import pytest

from repo_paths import real_adl
from streams_k8s.app.adl import AdlError, parse_adl
from streams_k8s.app.model import OperatorKind, SplitterKind


def _real(name: str) -> bytes:
    return real_adl(name)


def test_parallel_application_model() -> None:
    app = parse_adl(_real("apps.parallel.Parallel.sab"))
    assert app.name == "apps.parallel::Parallel"
    assert app.adl_version == "v4200"
    names = {op.index: op.name for op in app.operators.values()}
    assert names == {0: "Source", 1: "Sink", 2: "Result.Region1", 3: "Result.Region2", 4: "Result.Region3"}
    assert [r.name for r in app.parallel_regions] == ["Result.Region1", "Result.Region2", "Result.Region3"]
    assert app.parallel_regions[0].width_value_index == 0
    assert app.parallel_regions[0].splitters[0].kind is SplitterKind.ROUND_ROBIN
    width1 = next(v for v in app.submission_time_values if v.name == "width1")
    assert width1.default_value == '"1"'
    assert app.composites[6].parent == 5
    assert app.operators[1].input_ports[0].is_control


def test_nested_regions_isolation_and_metrics() -> None:
    app = parse_adl(_real("spl.runtime.udpNestedPEBoundary.adl"))
    assert [(r.name, r.constant_width) for r in app.parallel_regions] == [
        ("P1", 2),
        ("P1.H2", 4),
        ("P1.H2.F2", 3),
    ]
    assert app.operators[0].partitions.isolation
    assert [m.name for m in app.custom_metrics] == ["nFilesOpened", "nTupleWriteErrors"]


def test_consistent_region_annotations() -> None:
    app = parse_adl(_real("apps.consistent.ConsistentRegion.sab"))
    (region,) = app.consistent_regions
    assert (region.index, region.trigger, region.drain_timeout) == (0, "operatorDriven", 180.0)
    beat = app.operators[0]
    entry = beat.annotation("consistentRegionEntry")
    assert entry is not None
    assert entry.get("isStartOfRegion") == "true"
    assert beat.partitions.colocations == ("fused1",)


def test_host_pools_and_host_placement() -> None:
    pools = parse_adl(_real("apps.hostpools.HostPools.sab"))
    assert [(p.name, p.tags) for p in pools.hostpools] == [
        ("source_hosts", ("source_hosts",)),
        ("$default", ()),
        ("sink_hosts", ("sink_hosts",)),
    ]
    placement = parse_adl(_real("apps.hostplacement.HostPlacement_nodename.sab"))
    assert placement.hostpools == ()
    assert placement.operators[0].placement.host == "c0321.pok.hpc-ng.ibm.com"


def test_import_and_export_operators() -> None:
    exporter = parse_adl(_real("apps.pubsub.Exporter.sab"))
    exports = [op for op in exporter.operators.values() if op.kind is OperatorKind.EXPORT]
    assert [op.export_spec.stream_name for op in exports if op.export_spec] == [
        "entSectorBargains",
        None,
        "hcSectorBargains",
    ]
    props = exports[1].export_spec.properties if exports[1].export_spec else ()
    assert [p.name for p in props] == ["kind", "category", "tickers"]
    importer = parse_adl(_real("apps.pubsub.Importer.sab"))
    imports = {
        op.name: op.import_spec for op in importer.operators.values() if op.kind is OperatorKind.IMPORT
    }
    assert imports["TechBargains"] is not None
    assert imports["TechBargains"].subscription == '(kind == "bargains") && (category == "tech")'


XXE = b"""<?xml version="1.0"?>
<!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<applicationSet xmlns="http://www.ibm.com/xmlns/prod/streams/application/v4200">&xxe;</applicationSet>"""

LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<applicationSet xmlns="http://www.ibm.com/xmlns/prod/streams/application/v4200">&lol3;</applicationSet>"""

NS = b'xmlns="http://www.ibm.com/xmlns/prod/streams/application/v4200"'


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (XXE, "DOCTYPE"),
        (LAUGHS, "DOCTYPE"),
        (b"<applicationSet", "not well-formed"),
        (b'<applicationSet xmlns="urn:other"/>', "is not a v4200/v4000 ADL"),
        (b"<applicationSet " + NS + b"/>", "exactly one <splApplication>"),
        (b"<applicationSet " + NS + b"><splApplication name='x'/></applicationSet>", "no main composite"),
        (
            b"<applicationSet " + NS + b"><splApplication name='x'><composites><compositeOperInstances>"
            b"<compositeOperInstance index='1' definitionIndex='0' name='M'>"
            b"<primitiveOperInstance index='x' name='A' definitionIndex='0'/>"
            b"</compositeOperInstance></compositeOperInstances></composites></splApplication></applicationSet>",
            "is not an integer",
        ),
        (
            b"<applicationSet " + NS + b"><splApplication name='x'><composites><compositeOperInstances>"
            b"<compositeOperInstance index='1' definitionIndex='0' name='M'>"
            b"<primitiveOperInstance index='-1' name='A' definitionIndex='0'/>"
            b"</compositeOperInstance></compositeOperInstances></composites></splApplication></applicationSet>",
            "is negative",
        ),
    ],
)
def test_bad_adl_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(AdlError, match=message):
        parse_adl(data)


def test_size_limit() -> None:
    from streams_k8s.app.safe_xml import UnsafeXmlError, parse_untrusted

    with pytest.raises(UnsafeXmlError, match="exceeds"):
        parse_untrusted(b"<a/>" + b" " * 100, what="doc", max_bytes=50)
