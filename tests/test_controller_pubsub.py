"""Import/Export without a cluster: subscription expressions, the board, datagrams, the CRs a
submission makes, and the XML documents of the subscription REST API."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from repo_paths import shared_testdata
from streams_k8s.api.contract import APPLICATION_NAME_ANNOTATION, APPLICATION_SCOPE_ANNOTATION, JOB_LABEL
from streams_k8s.api.import_export import StreamProperty
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.subscription_expression import SubscriptionError, parse_subscription
from streams_k8s.app.synthetic import Exported, Imported, SyntheticSpec, synthetic_adl
from streams_k8s.controller.children.desired import desired_objects
from streams_k8s.controller.planning import JobFailure, plan_job, validate_job
from streams_k8s.controller.pubsub.board import compute_board
from streams_k8s.controller.pubsub.bodies import (
    imported_streams_of,
    imported_streams_xml,
    names_of,
    properties_of,
    properties_xml,
)
from streams_k8s.controller.pubsub.broker import FETCH, MAX_DATAGRAM_BYTES, datagram
from streams_k8s.controller.rest.api import RestError

PROPS = [
    StreamProperty(name="kind", type="rstring", values=['"temp"']),
    StreamProperty(name="loc", type="list<rstring>", values=['"A"', '"B"']),
    StreamProperty(name="rank", type="int64", values=["7"]),
    StreamProperty(name="ratio", type="float64", values=["0.5"]),
    StreamProperty(name="codes", type="list<int64>", values=["3", "9"]),
]


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        ('kind == "temp"', True),
        ('kind != "temp"', False),
        ('kind == "temp" && (loc[0] == "B" || loc[1] == "B")', True),
        ('kind == "x" || "A" in loc', True),
        ('"C" in loc', False),
        ("9 in codes", True),
        ("rank > 6 && rank <= 7 && ratio < 1", True),
        ("rank % 4 == 3", True),
        ("rank % 4 == 2", False),
        ("ratio >= 0.5 && ratio == 0.5", True),
        ('kind < "tz"', True),
        ("missing == 1", False),  # a property the export lacks
        ('rank == "7"', False),  # of another type
        ('loc[5] == "A"', False),  # out of range
        ('loc == "A"', False),  # a list is not a scalar
        ("ratio % 2 == 0", False),  # modulo of a float
        ('kind == "te\\"mp"', False),
    ],
)
def test_subscriptions_match_as_documented(expression: str, matches: bool) -> None:
    assert parse_subscription(expression).matches(PROPS) is matches


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty"),
        ("kind ==", "position 8"),
        ("kind = 1", "unexpected character '='"),
        ("(kind == 1", "expected ')'"),
        ("kind == 1 rank", "expected '&&', '||' or the end"),
        ('"A" in', "list property name"),
        ("rank % 0 == 1", "must not be 0"),
        ("loc[x] == 1", "list index"),
        ("kind == 1 &&", "a property name"),
    ],
)
def test_bad_subscriptions_say_where(expression: str, message: str) -> None:
    with pytest.raises(SubscriptionError) as caught:
        parse_subscription(expression)
    assert message in str(caught.value)


@given(st.text(max_size=40))
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        subscription = parse_subscription(text)
    except SubscriptionError:
        return
    assert isinstance(subscription.matches(PROPS), bool)


# --- the board -----------------------------------------------------------------------------


def _obj(
    kind: str, job: str, pe: int, port: int, spec: dict[str, Any], app: str = "a::Exp"
) -> dict[str, Any]:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": kind,
        "metadata": {
            "name": f"{job}-{pe}-{port}",
            "namespace": "default",
            "labels": {JOB_LABEL: job},
            "annotations": {APPLICATION_NAME_ANNOTATION: app, APPLICATION_SCOPE_ANNOTATION: "Default"},
        },
        "spec": {"jobId": 1 if job == "exp" else 2, "peId": pe, "portId": port, **spec},
    }


def export(pe: int, port: int, *, name: str | None = None, allow_filter: bool = True) -> dict[str, Any]:
    stream: dict[str, Any] = {"exportOperName": "E", "allowFilter": allow_filter}
    if name is not None:
        stream["name"] = name
    else:
        stream["properties"] = [p.to_wire() for p in PROPS]
    return _obj("Export", "exp", pe, port, {"type": "ByName" if name else "ByProperties", "stream": stream})


def import_(port: int, *, streams: dict[str, Any], job: str = "imp") -> dict[str, Any]:
    return _obj("Import", job, 0, port, {"portIndex": port, "streams": streams}, app="a::Imp")


def by_name(stream: str, app: str = "", scope: str | None = None) -> dict[str, Any]:
    entry = {"applicationName": app, "importOperName": "I", "streamName": stream}
    return {"nameBasedImports": {"1": {**entry, "applicationScope": scope}}}


def by_subscription(expression: str, scope: str | None = None) -> dict[str, Any]:
    entry = {"subscription": expression, "importOperName": "I", "index": 2, "applicationScope": scope}
    return {"propertyBasedImport": entry}


def test_the_board_matches_by_name_and_by_properties() -> None:
    exports = [export(0, 0, name="temps"), export(1, 0), export(1, 1, name="other", allow_filter=False)]
    imports = [
        import_(0, streams=by_name("temps", app="a::Exp", scope="Default")),
        import_(1, streams=by_name("temps", app="b::Wrong")),  # another application
        import_(2, streams=by_name("temps", scope="Elsewhere")),  # another scope
        import_(3, streams=by_subscription('"B" in loc')),
        import_(4, streams=by_subscription('kind == "wind"')),
        import_(5, streams={**by_name("other"), "filter": "i > 1"}),  # the export allows no filter
        import_(6, streams={**by_name("temps"), "filter": "i > 1"}),
        import_(7, streams=by_subscription('"B" in loc', scope="Elsewhere")),
    ]
    board = compute_board(exports, imports, ["exp", "imp"])
    exp0 = board.document("exp", 0)["exports"]["exp-0-0"]
    assert exp0["portId"] == 0
    assert set(exp0["entries"]) == {"imp-0-0", "imp-0-6"}
    assert exp0["entries"]["imp-0-6"] == {
        "jobId": 2,
        "peId": 0,
        "portId": 6,
        "portIndex": 6,
        "filter": "i > 1",
    }
    exp1 = board.document("exp", 1)["exports"]
    assert set(exp1["exp-1-0"]["entries"]) == {"imp-0-3"}
    assert exp1["exp-1-1"]["entries"] == {}
    imported = board.document("imp", 0)["imports"]
    assert imported["imp-0-3"] == {"portId": 3, "entries": {"exp-1-0": {"jobId": 1, "peId": 1, "portId": 0}}}
    assert {name for name, entry in imported.items() if not entry["entries"]} == {
        "imp-0-1",
        "imp-0-2",
        "imp-0-4",
        "imp-0-5",
        "imp-0-7",
    }
    assert board.invalid == {}


def test_jobs_that_are_gone_take_no_part_and_bad_subscriptions_are_reported() -> None:
    exports = [export(0, 0, name="temps")]
    imports = [import_(0, streams=by_name("temps")), import_(1, streams=by_subscription("kind =="))]
    board = compute_board(exports, imports, ["imp"])
    assert board.documents.keys() == {("imp", 0)}
    assert board.document("imp", 0)["imports"]["imp-0-0"]["entries"] == {}
    assert "kind ==" in board.invalid["imp-0-1"]
    assert board.document("exp", 0) == {"exports": {}, "imports": {}}
    assert compute_board(exports, imports, []).documents == {}


def test_a_document_too_large_for_the_runtime_is_sent_as_deadbeef() -> None:
    small = {"exports": {}, "imports": {}}
    assert datagram(small) == b'{"exports":{},"imports":{}}'
    entries = {f"imp-{i}-0": {"jobId": 2, "peId": i, "portId": 0} for i in range(MAX_DATAGRAM_BYTES // 20)}
    assert datagram({"exports": {}, "imports": {"x": {"portId": 0, "entries": entries}}}) == FETCH


# --- the CRs of a submission ---------------------------------------------------------------


def _children(spec: SyntheticSpec, name: str) -> dict[str, dict[str, Any]]:
    app = parse_adl(synthetic_adl(spec), what=name)
    manifest = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"bundle": {"name": "x.sab", "file": {"path": "x.sab"}}, "fusion": {"manual": 2}},
    }
    job = validate_job(manifest)
    plan = plan_job(job, app, job_id=4, nodes=1)
    children = desired_objects(job, "uid-1", plan, generation=0, stamp="now")
    kinds = [c.body["kind"] for c in children]
    assert kinds.index("ProcessingElement") > max(
        (i for i, k in enumerate(kinds) if k in ("Export", "Import")), default=-1
    )  # PEs come last
    return {c.name: c.body for c in children if c.body["kind"] in ("Export", "Import")}


def test_a_submission_makes_one_export_per_exporting_port_and_one_import_per_importing_port() -> None:
    exporter = SyntheticSpec(
        name="p::Exp",
        chains=2,
        length=2,
        exports=(
            Exported(stream="s"),
            Exported(properties=(("kind", "rstring", ('"t"',)),), allow_filter=False),
        ),
    )
    made = _children(exporter, "exp")
    assert {b["kind"] for b in made.values()} == {"Export"}
    specs = sorted((b["spec"] for b in made.values()), key=lambda s: s["type"])
    assert specs[0]["type"] == "ByName"
    assert specs[0]["stream"] == {"name": "s", "exportOperName": "Export0", "allowFilter": True}
    assert specs[1]["stream"]["properties"] == [{"name": "kind", "type": "rstring", "values": ['"t"']}]
    assert specs[1]["stream"]["allowFilter"] is False
    for name, body in made.items():
        assert name == f"exp-{body['spec']['peId']}-{body['spec']['portId']}"
        assert body["spec"]["jobId"] == 4
        assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-1"

    importer = SyntheticSpec(
        name="p::Imp",
        chains=2,
        length=2,
        imports=(
            Imported(application="p::Exp", stream="s", filter="i > 2"),
            Imported(subscription='kind == "t"'),
        ),
    )
    made = _children(importer, "imp")
    streams = sorted((b["spec"]["streams"] for b in made.values()), key=lambda s: bool(s["nameBasedImports"]))
    assert streams[0]["propertyBasedImport"]["subscription"] == 'kind == "t"'
    assert list(streams[1]["nameBasedImports"].values()) == [
        {"applicationName": "p::Exp", "importOperName": "Import0", "streamName": "s"}
    ]
    assert streams[1]["filter"] == "i > 2"


def test_a_subscription_that_does_not_parse_fails_the_submission() -> None:
    bad = SyntheticSpec(name="p::Bad", chains=1, length=1, imports=(Imported(subscription='kind == "t" &&'),))
    with pytest.raises(JobFailure) as caught:
        _children(bad, "bad")
    assert (caught.value.condition, caught.value.reason) == ("Planned", "InvalidSubscription")
    assert "Import operator 'Import0'" in caught.value.message
    assert "a property name" in caught.value.message


# --- XML of the REST API ------------------------------------------------------------------


def test_stream_properties_round_trip_through_xml() -> None:
    body = (
        b'<streamProperties xmlns="http://www.ibm.com/xmlns/prod/streams/application">'
        b'<property name="loc" type="list&lt;rstring&gt;"><value>"A"</value><value>"B"</value></property>'
        b"</streamProperties>"
    )
    parsed = properties_of(body)
    assert parsed == [{"name": "loc", "type": "list<rstring>", "values": ['"A"', '"B"']}]
    assert properties_of(properties_xml(parsed)) == parsed


def test_property_names_accept_both_shapes() -> None:
    nested = (
        b'<streamPropertyNames scope="listed"><name><name>kind</name></name><name>loc</name>'
        b"</streamPropertyNames>"
    )
    assert names_of(nested) == ["kind", "loc"]
    assert names_of(b'<streamPropertyNames scope="all"/>') is None


def test_imported_streams_round_trip_and_refuse_bad_documents() -> None:
    body = (
        b'<importedStreams filter="i &gt; 1"><nameBasedImport applicationName="a::B" importOperName="I" '
        b'streamName="s" index="3"/><propertyBasedImport subscription="k == 1" importOperName="J" index="4"/>'
        b"</importedStreams>"
    )
    streams = imported_streams_of(body)
    assert streams["filter"] == "i > 1"
    assert streams["nameBasedImports"]["3"]["streamName"] == "s"
    assert streams["propertyBasedImport"]["index"] == 4
    assert imported_streams_of(imported_streams_xml(streams)) == streams
    for bad in (
        b"<importedStreams><nameBasedImport index='x' importOperName='I'/></importedStreams>",
        b"<importedStreams><propertyBasedImport subscription='k ==' importOperName='I' index='1'/>"
        b"</importedStreams>",
        b"<other/>",
        b"<importedStreams>",
        b'<!DOCTYPE x [<!ENTITY e "e">]><importedStreams/>',
    ):
        with pytest.raises(RestError) as caught:
            imported_streams_of(bad)
        assert caught.value.status == 400


def test_the_xml_answers_follow_the_sam_schema() -> None:
    schema_path = shared_testdata("schema", "SAM", "applicationModel.xsd")
    schema = etree.XMLSchema(etree.parse(str(schema_path)))
    props = [{"name": "loc", "type": "list<rstring>", "values": ['"A"']}]
    streams = imported_streams_of(
        b'<importedStreams><nameBasedImport applicationName="a::B" importOperName="I" streamName="s" '
        b'index="3"/></importedStreams>'
    )
    for document in (properties_xml(props), imported_streams_xml(streams)):
        root = etree.fromstring(document)
        assert schema.validate(root), schema.error_log
