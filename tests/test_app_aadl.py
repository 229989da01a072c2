"""AADL content: PE ports, static connections and the name table agree; injected threads; content ids."""

from __future__ import annotations

import hashlib

from lxml import etree

from aadl_oracle import AUG, BASE
from repo_paths import real_adl
from streams_k8s.api.job import Fusion, ParallelRegionWidth
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.plan import Plan, plan_application
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl

A = f"{{{AUG}}}"
B = f"{{{BASE}}}"


def _plan(n: int, width: int = 2) -> Plan:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=3, length=4, regions=2, width=width)))
    return plan_application(app, Fusion(manual=n), job_name="job", job_id=9)


def test_static_connections_match_the_name_table() -> None:
    plan = _plan(3)
    for pe in plan.pes:
        root = etree.fromstring(pe.aadl.encode())
        assert root.get("id") == str(pe.id)
        assert hashlib.sha256(pe.aadl.encode()).hexdigest() == pe.content_id
        outputs = root.find(f"{A}outputPorts")
        assert outputs is not None
        for port in outputs:
            for static in port.iterfind(f"{A}staticConnections/{A}staticConnection"):
                label = f"9.{static.get('iOperInstanceIndex')}.{static.get('iOperInstancePortIndex')}"
                assert plan.name_table[label] == f"{static.get('peId')}.{static.get('iportId')}@9"
        inputs = root.find(f"{A}inputPorts")
        assert inputs is not None
        ids = [int(p.get("id", "-1")) for p in inputs]
        assert ids == list(range(len(ids))), "PE port ids are dense and in order"


def test_input_ports_are_ordered_by_their_lowest_sending_pe() -> None:
    plan = _plan(6, width=3)
    for pe in plan.pes:
        keys = [min((s for s, _ in p.senders), default=2**63) for p in pe.inputs]
        assert keys == sorted(keys)
        keys = [min((r for r, _ in p.receivers), default=2**63) for p in pe.outputs]
        assert keys == sorted(keys)


def test_intra_pe_channel_connections_get_an_injected_thread() -> None:
    plan = _plan(1)
    (pe,) = plan.pes
    root = etree.fromstring(pe.aadl.encode())
    injected = root.findall(f".//{B}inputPort/{B}threadedPort[@isInjected='true']")
    # every channel of the two regions is fed through a splitter inside the one PE
    assert len(injected) == 2 * 2


def test_content_id_changes_only_with_the_aadl() -> None:
    one, two = _plan(3), _plan(3)
    assert [p.content_id for p in one.pes] == [p.content_id for p in two.pes]
    wider = plan_application(
        one.topology.app,
        Fusion(manual=3),
        job_name="job",
        job_id=9,
        widths=[ParallelRegionWidth(alias="C0_2", width=3)],
    )
    assert {p.content_id for p in wider.pes} != {p.content_id for p in one.pes}


def test_exported_and_imported_streams_reach_the_pe_ports() -> None:
    exporter = parse_adl(real_adl("apps.pubsub.Exporter.sab"))
    (pe,) = plan_application(exporter, Fusion(manual=1), job_name="x").pes
    root = etree.fromstring(pe.aadl.encode())
    streams = root.findall(f"{A}outputPorts/{A}outputPort/{A}exportedStream")
    assert [s.get("exportOperName") for s in streams] == ["ExportOp0", "ExportOp1", "ExportOp2"]
    assert [s.get("name") for s in streams] == ["entSectorBargains", None, "hcSectorBargains"]
    values = [v.text for v in streams[1].iterfind(f"{B}properties/{B}property[@name='tickers']/{B}value")]
    assert values == ['"IBM"', '"GOOG"', '"MSFT"']
    importer = parse_adl(real_adl("apps.pubsub.Importer.sab"))
    (pe,) = plan_application(importer, Fusion(manual=1), job_name="y").pes
    root = etree.fromstring(pe.aadl.encode())
    ports = root.findall(f"{A}inputPorts/{A}inputPort")
    assert len(ports) == 4  # one per import-fed operator input port
    assert root.find(f".//{A}importedStreams/{B}propertyBasedImport") is not None


def test_runtime_constants_take_the_submitted_values() -> None:
    app = parse_adl(real_adl("apps.pubsub.Exporter.sab"))
    (pe,) = plan_application(app, Fusion(manual=1), job_name="x", submission_values={"portId": 'a"b'}).pes
    root = etree.fromstring(pe.aadl.encode())
    constants = root.findall(f".//{B}runtimeConstant[@submissionTimeValueIndex]")
    by_index = {(c.get("submissionTimeValueIndex"), c.get("value")) for c in constants}
    assert by_index == {("0", '"a\\"b"'), ("1", '"60"')}  # given value as SPL; the other keeps its default


def test_dedicated_threading_injects_a_thread_on_every_fused_connection() -> None:
    from streams_k8s.api.job import ThreadingModel

    app = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=3)))
    plain = plan_application(app, Fusion(manual=1), job_name="j").pes[0]
    dedicated = plan_application(
        app, Fusion(manual=1), job_name="j", threading=ThreadingModel(dedicated=True)
    ).pes[0]
    injected = f".//{B}inputPort/{B}threadedPort[@isInjected='true']"
    assert etree.fromstring(plain.aadl.encode()).findall(injected) == []
    # every operator but the source has one fused input port: 2 chains x 3 + the sink
    assert len(etree.fromstring(dedicated.aadl.encode()).findall(injected)) == 7
    assert plain.content_id != dedicated.content_id
