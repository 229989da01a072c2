"""Import/Export between jobs through the operator and the sandbox: the CRs, the board over HTTP,
UDP notifications, recreation, REST mutations and bad input."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from lxml import etree

from k8s_support import eventually_async
from operator_support import SUBMITTED, Running, condition, job_manifest, operator, wait_for_phase
from repo_paths import shared_testdata
from streams_k8s.api.contract import (
    APPLICATION_NAME_ANNOTATION,
    APPLICATION_SCOPE_ANNOTATION,
    GENERATION_LABEL,
    JOB_LABEL,
)
from streams_k8s.app.synthetic import Exported, Imported, SyntheticSpec, write_sab
from streams_k8s.controller.kinds import EXPORTS, IMPORTS, JOBS, PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox
from tokens import admin_token

EXPORTER = SyntheticSpec(
    name="pub::Exporter",
    chains=2,
    length=2,
    exports=(
        Exported(stream="temps"),
        Exported(properties=(("kind", "rstring", ('"temp"',)), ("loc", "list<rstring>", ('"A"', '"B"')))),
    ),
)
IMPORTER = SyntheticSpec(
    name="pub::Importer",
    chains=4,
    length=2,
    imports=(
        Imported(application="pub::Exporter", stream="temps"),
        Imported(subscription='kind == "temp" && ("B" in loc || loc[0] == "Z")'),
        Imported(subscription='kind == "humidity"'),
        Imported(subscription='kind == "none"'),  # edited below into one that does not parse
    ),
)


BAD_IMPORTER = SyntheticSpec(name="pub::Bad", chains=1, length=1, imports=(Imported(subscription="kind > "),))


class _Inbox(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.received: list[bytes] = []

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.received.append(data)


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def http(client: KubeClient) -> AsyncIterator[aiohttp.ClientSession]:
    """A client whose token's user may write on every job (the PE pods' own calls are the
    simulated runtime's; these tests edit subscriptions as a tool would)."""
    token = await admin_token(client)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session:
        yield session


@pytest.fixture
async def inbox(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[_Inbox]:
    """Where the operator sends every PE's datagrams (the sandbox's PE names do not resolve)."""
    transport, protocol = await asyncio.get_running_loop().create_datagram_endpoint(
        _Inbox, local_addr=("127.0.0.1", 0), family=socket.AF_INET
    )
    monkeypatch.setenv("STREAMS_K8S_PE_NOTIFICATION_HOST", "127.0.0.1")
    monkeypatch.setenv("STREAMS_K8S_PE_NOTIFICATION_PORT", str(transport.get_extra_info("sockname")[1]))
    yield protocol
    transport.close()


async def call(
    http: aiohttp.ClientSession, method: str, url: str, body: bytes | None = None
) -> tuple[int, Any]:
    async with http.request(method, url, data=body) as response:
        text = await response.text()
        return response.status, orjson.loads(text) if response.content_type == "application/json" else text


async def owned(client: KubeClient, resource: Any, job: str) -> dict[str, dict[str, Any]]:
    items, _ = await client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job}")
    return {i["metadata"]["name"]: i for i in items}


async def board(http: aiohttp.ClientSession, running: Running, job: str, pe: int) -> dict[str, Any]:
    status, doc = await call(http, "GET", f"{running.api}/api/subscriptions/job/{job}/pe/{pe}")
    assert status == 200, doc
    return dict(doc)


def subscribers(doc: dict[str, Any], export: str) -> set[str]:
    return set(doc["exports"][export]["entries"])


def by_import_operator(imports: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Import operator name → Import object name."""
    out = {}
    for name, obj in imports.items():
        streams = obj["spec"]["streams"]
        for entry in [*streams["nameBasedImports"].values(), streams.get("propertyBasedImport")]:
            if entry:
                out[entry["importOperName"]] = name
    return out


@pytest.mark.sandbox(nodes=2)
async def test_generated_exporter_and_importer_jobs_subscribe(
    sandbox: Sandbox,
    client: KubeClient,
    http: aiohttp.ClientSession,
    inbox: _Inbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = write_sab(tmp_path / "exp.sab", EXPORTER)
    importer = write_sab(tmp_path / "imp.sab", IMPORTER)
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        exp_job = await client.create(JOBS, job_manifest("exp", exporter))
        await client.create(JOBS, job_manifest("imp", importer))
        await wait_for_phase(client, "exp", *SUBMITTED)
        await wait_for_phase(client, "imp", *SUBMITTED)

        # --- the CRs: one Export per exporting PE port, one Import per importing PE port
        exports, imports = await owned(client, EXPORTS, "exp"), await owned(client, IMPORTS, "imp")
        assert await owned(client, IMPORTS, "exp") == {}
        by_type = {e["spec"]["type"]: e for e in exports.values()}
        assert set(by_type) == {"ByName", "ByProperties"}
        named, propertied = by_type["ByName"], by_type["ByProperties"]
        assert named["spec"]["stream"]["name"] == "temps"
        assert named["spec"]["stream"]["exportOperName"] == "Export0"
        assert [p["name"] for p in propertied["spec"]["stream"]["properties"]] == ["kind", "loc"]
        for export in exports.values():
            spec, m = export["spec"], export["metadata"]
            assert m["name"] == f"exp-{spec['peId']}-{spec['portId']}"
            assert spec["jobId"] == (await client.get(JOBS, "exp", "default"))["status"]["id"]
            assert m["labels"][GENERATION_LABEL] == "0"
            assert m["annotations"][APPLICATION_NAME_ANNOTATION] == "pub::Exporter"
            assert m["annotations"][APPLICATION_SCOPE_ANNOTATION] == "Default"
            ref = m["ownerReferences"][0]
            assert (ref["kind"], ref["uid"], ref["controller"]) == ("Job", exp_job["metadata"]["uid"], True)
        assert len(imports) == 4
        operators = by_import_operator(imports)
        by_name, matching, other, invalid = (operators[f"Import{i}"] for i in range(4))
        assert imports[by_name]["spec"]["streams"]["nameBasedImports"]
        assert imports[invalid]["spec"]["streams"]["propertyBasedImport"]["subscription"] == 'kind == "none"'

        # --- the board: importing and exporting PEs list each other (once the broker saw every object)
        exp_pe = propertied["spec"]["peId"]

        async def subscribed() -> bool:
            for name, obj in imports.items():
                if name not in (await board(http, running, "imp", obj["spec"]["peId"]))["imports"]:
                    return False
            named_doc = await board(http, running, "exp", named["spec"]["peId"])
            propertied_doc = await board(http, running, "exp", exp_pe)
            return subscribers(named_doc, named["metadata"]["name"]) == {by_name} and subscribers(
                propertied_doc, propertied["metadata"]["name"]
            ) == {matching}

        await eventually_async(subscribed, within=10)
        imp_spec = imports[by_name]["spec"]
        imp_doc = await board(http, running, "imp", imp_spec["peId"])
        entry = imp_doc["imports"][by_name]
        assert entry["portId"] == imp_spec["portId"]
        assert entry["entries"] == {
            named["metadata"]["name"]: {
                "jobId": named["spec"]["jobId"],
                "peId": named["spec"]["peId"],
                "portId": named["spec"]["portId"],
            }
        }
        exp_entry = (await board(http, running, "exp", named["spec"]["peId"]))["exports"][
            named["metadata"]["name"]
        ]["entries"][by_name]
        assert exp_entry == {
            "jobId": imp_spec["jobId"],
            "peId": imp_spec["peId"],
            "portId": imp_spec["portId"],
            "portIndex": imp_spec["portIndex"],
            "filter": None,
        }
        other_spec = imports[other]["spec"]
        assert (await board(http, running, "imp", other_spec["peId"]))["imports"][other]["entries"] == {}

        # --- each side's status says whom it is connected to (`kubectl get stx,sti` shows it)
        async def statuses_written() -> bool:
            got = {n: (await client.get(IMPORTS, n, "default")).get("status") or {} for n in (by_name, other)}
            exp = (await client.get(EXPORTS, named["metadata"]["name"], "default")).get("status") or {}
            return (
                got[by_name].get("connectedTo") == "exp/temps"
                and got[other].get("connectionCount") == 0
                and exp.get("connectedTo") == "imp/Import0"
            )

        await eventually_async(statuses_written, within=10)
        imported = (await client.get(IMPORTS, by_name, "default"))["status"]
        assert imported["streams"] == "temps"  # what it asks for, shown for an import by name too
        assert imported["connections"] == [
            {
                "name": named["metadata"]["name"],
                "job": "exp",
                "jobId": named["spec"]["jobId"],
                "peId": named["spec"]["peId"],
                "portId": named["spec"]["portId"],
            }
        ]
        assert (await client.get(IMPORTS, invalid, "default"))["status"]["streams"] == 'kind == "none"'

        # --- an invalid subscription: in an application, the submission fails and says why; in an
        # edited Import, its condition and an Event say why; nothing crashes
        await client.create(JOBS, job_manifest("bad", write_sab(tmp_path / "bad.sab", BAD_IMPORTER)))
        failed = await wait_for_phase(client, "bad", "Failed")
        planned = condition(failed, "Planned")
        assert (planned["status"], planned["reason"]) == ("False", "InvalidSubscription")
        assert "Import operator 'Import0'" in planned["message"]
        assert "kind >" in planned["message"]
        await client.patch(
            IMPORTS,
            invalid,
            {"spec": {"streams": {"propertyBasedImport": {"subscription": "kind =="}}}},
            "default",
        )

        async def reported() -> bool:
            obj = await client.get(IMPORTS, invalid, "default")
            conditions = (obj.get("status") or {}).get("conditions") or []
            return any(c["type"] == "SubscriptionValid" and c["status"] == "False" for c in conditions)

        await eventually_async(reported, within=10)

        async def warned() -> bool:
            events, _ = await client.list_all(EVENTS, "default")
            return any(
                e["regarding"]["name"] == invalid
                and e["reason"] == "InvalidSubscription"
                and "kind ==" in e["note"]
                for e in events
            )

        await eventually_async(warned, within=10)

        # --- UDP: the importing PE got its board document
        async def notified() -> bool:
            wanted = await board(http, running, "imp", imp_spec["peId"])
            return any(orjson.loads(d) == wanted for d in inbox.received)

        await eventually_async(notified, within=10)

        # --- bad input is a 4xx with a JSON body
        base = f"{running.api}/api/subscriptions/job/imp/pe/{imp_spec['peId']}"
        for method, url, body, code in (
            ("GET", f"{running.api}/api/subscriptions/job/nope/pe/0", None, 404),
            ("GET", f"{running.api}/api/subscriptions/job/imp/pe/99", None, 404),
            ("GET", f"{base}/import/x", None, 400),
            ("GET", f"{base}/export/{imp_spec['portId']}", None, 404),
            ("PUT", f"{base}/import/{imp_spec['portId']}/streams", b"<importedStreams><oops", 400),
            (
                "PUT",
                f"{base}/import/{imp_spec['portId']}/streams",
                b'<importedStreams><propertyBasedImport subscription="a ==" importOperName="I" index="1"/>'
                b"</importedStreams>",
                400,
            ),
            # a filter that could not be read back (the runtime's lookup answered a plain-text 500)
            ("PUT", f"{base}/import/{imp_spec['portId']}/filter", b"price > 1\x01", 400),
            ("PUT", f"{base}/import/{imp_spec['portId']}/filter", b"(price > 1", 400),
            ("PUT", f"{base}/import/{imp_spec['portId']}/filter", b"x" * (9 * 1024), 400),
            (
                "PUT",
                f"{base}/import/{imp_spec['portId']}/streams",
                b'<importedStreams filter="a &#9;&amp;&amp; (b"/>',
                400,
            ),
        ):
            status, answer = await call(http, method, url, body)
            assert status == code, (method, url, answer)
            assert answer["status"] == code
            assert answer["message"]
        exp_base = f"{running.api}/api/subscriptions/job/exp/pe/{named['spec']['peId']}"
        status, answer = await call(http, "GET", f"{exp_base}/export/{named['spec']['portId']}/property/kind")
        assert status == 404  # by name: no properties
        assert "by name" in answer["message"]

        # --- mutations: the exported properties change, the subscriptions follow
        prop_url = (
            f"{running.api}/api/subscriptions/job/exp/pe/{exp_pe}/export/{propertied['spec']['portId']}"
        )
        status, answer = await call(
            http,
            "PATCH",
            f"{prop_url}/property/kind",
            b'<streamProperty name="kind" type="rstring"><value>"humidity"</value></streamProperty>',
        )
        assert status == 204, answer
        status, xml = await call(http, "GET", f"{prop_url}/property/kind")
        assert status == 200
        assert '"humidity"' in xml

        async def moved() -> bool:
            doc = await board(http, running, "exp", exp_pe)
            return subscribers(doc, propertied["metadata"]["name"]) == {other}

        await eventually_async(moved, within=10)
        status, answer = await call(
            http,
            "PUT",
            f"{prop_url}/properties",
            b'<streamProperties><property name="kind" type="rstring"><value>"x"</value></property>'
            b"</streamProperties>",
        )
        assert status == 409, answer
        for bad in (
            b'<streamProperty name="kind" type="blob"><value>x</value></streamProperty>',  # no SPL type
            b'<streamProperty name="kind" type="int64"><value>many</value></streamProperty>',
            b'<streamProperty name="kind" type="rstring"><value>a</value><value>b</value></streamProperty>',
        ):
            status, answer = await call(http, "PATCH", f"{prop_url}/property/kind", bad)
            assert (status, answer["message"].startswith("property 'kind'")) == (400, True), answer
        status, answer = await call(
            http,
            "PATCH",
            f"{prop_url}/properties",
            b'<streamProperties><property name="1st" type="int64"><value>1</value></property>'
            b"</streamProperties>",
        )
        assert (status, "SPL identifier" in answer["message"]) == (400, True), answer

        # --- a deleted Export comes back
        await client.delete(EXPORTS, named["metadata"]["name"], "default")

        async def back() -> bool:
            try:
                obj = await client.get(EXPORTS, named["metadata"]["name"], "default")
            except ApiError as err:
                if err.not_found:
                    return False
                raise
            if obj["metadata"]["uid"] == named["metadata"]["uid"]:
                return False
            # and on the board again: else the job's deletion below would change no document
            return bool((await board(http, running, "imp", imp_spec["peId"]))["imports"][by_name]["entries"])

        await eventually_async(back, within=10)

        # --- the exporter job goes: the importer's board empties, and the importer hears of it
        before = len(inbox.received)
        await client.delete(JOBS, "exp", "default")

        async def emptied() -> bool:
            doc = await board(http, running, "imp", imp_spec["peId"])
            return all(not i["entries"] for i in doc["imports"].values())

        await eventually_async(emptied, within=10)

        async def told() -> bool:
            wanted = await board(http, running, "imp", imp_spec["peId"])
            return any(orjson.loads(d) == wanted for d in inbox.received[before:])

        await eventually_async(told, within=10)


@pytest.mark.sandbox(nodes=1)
async def test_the_real_pubsub_bundles_subscribe(
    sandbox: Sandbox,
    client: KubeClient,
    http: aiohttp.ClientSession,
    inbox: _Inbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = shared_testdata("apps", "apps.pubsub.Exporter.sab")
    importer = shared_testdata("apps", "apps.pubsub.Importer.sab")
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        await client.create(JOBS, job_manifest("exporter", exporter))
        await client.create(JOBS, job_manifest("importer", importer))
        await wait_for_phase(client, "exporter", *SUBMITTED)
        await wait_for_phase(client, "importer", *SUBMITTED)
        exports, imports = await owned(client, EXPORTS, "exporter"), await owned(client, IMPORTS, "importer")
        streams = {e["spec"]["stream"].get("name") for e in exports.values()}
        assert streams == {"entSectorBargains", "hcSectorBargains", None}
        assert len(imports) == 4  # Sink0's port imports all three streams, Sink1's ports one each

        wanted = {name: set[str]() for name in imports}
        for name, obj in imports.items():
            streams_spec = obj["spec"]["streams"]
            names = {i["streamName"] for i in streams_spec["nameBasedImports"].values()}
            for export_name, export in exports.items():
                stream = export["spec"]["stream"]
                if stream.get("name") in names or (
                    stream.get("name") is None and streams_spec.get("propertyBasedImport")
                ):
                    wanted[name].add(export_name)

        async def matched() -> bool:
            for name, obj in imports.items():
                doc = await board(http, running, "importer", obj["spec"]["peId"])
                known = doc["imports"].get(name)  # the REST API's cache may not hold the Import yet
                if known is None or set(known["entries"]) != wanted[name]:
                    return False
            return True

        await eventually_async(matched, within=10)
        assert all(wanted.values())


def _exported_by(aadl: str, port: int) -> str | None:
    """The export operator of PE output port ``port`` in a PE's AADL."""
    root = etree.fromstring(aadl.encode())
    for out in root.iter("{*}outputPort"):
        if out.get("peId") is not None and out.get("index") == str(port):  # a PE port, not an operator's
            stream = next(out.iter("{*}exportedStream"), None)
            return None if stream is None else stream.get("exportOperName")
    return None


def _imported_by(aadl: str, port: int) -> set[str]:
    root = etree.fromstring(aadl.encode())
    for inp in root.iter("{*}inputPort"):
        if inp.get("peId") is not None and inp.get("index") == str(port):
            return {
                str(i.get("importOperName")) for i in inp.iter("{*}nameBasedImport", "{*}propertyBasedImport")
            }
    return set()


async def _ports_follow_the_pes(client: KubeClient, job: str, generation: str) -> bool:
    """Every Export/Import names a port of a current PE whose AADL exports/imports it."""
    exports, imports = await owned(client, EXPORTS, job), await owned(client, IMPORTS, job)
    if sorted(e["spec"]["stream"]["exportOperName"] for e in exports.values()) != ["Export0", "Export1"]:
        return False
    if len(imports) != 1:
        return False
    for obj in [*exports.values(), *imports.values()]:
        spec = obj["spec"]
        if obj["metadata"]["name"] != f"{job}-{spec['peId']}-{spec['portId']}":
            return False
        if obj["metadata"]["labels"][GENERATION_LABEL] != generation:
            return False
        try:
            aadl = (await client.get(CONFIGMAPS, f"{job}-{spec['peId']}", "default"))["data"]["aadl.xml"]
        except ApiError as err:
            if err.not_found:
                return False
            raise
        if obj["kind"] == "Export" and _exported_by(aadl, spec["portId"]) != spec["stream"]["exportOperName"]:
            return False
        if obj["kind"] == "Import" and _imported_by(aadl, spec["portId"]) != {"Import0"}:
            return False
    return True


@pytest.mark.sandbox(nodes=2)
async def test_exports_and_imports_follow_a_width_change(
    sandbox: Sandbox,
    client: KubeClient,
    http: aiohttp.ClientSession,
    inbox: _Inbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = SyntheticSpec(
        name="pub::Wide",
        chains=2,
        length=3,
        regions=2,
        width=2,
        exports=(Exported(stream="a"), Exported(properties=(("kind", "rstring", ('"k1"',)),))),
        imports=(Imported(subscription='kind == "k2"'),),
    )
    bundle = write_sab(tmp_path / "wide.sab", spec)
    async with operator(sandbox, monkeypatch, tmp_path / "cache") as running:
        await client.create(JOBS, job_manifest("wide", bundle, fusion={"manual": 3}))
        await wait_for_phase(client, "wide", *SUBMITTED)
        await eventually_async(lambda: _ports_follow_the_pes(client, "wide", "0"), within=10)
        before = {n: o["spec"] for n, o in (await owned(client, EXPORTS, "wide")).items()}
        # the runtime edits the exported properties: now the job's own import subscribes
        (by_properties,) = (e for e in before.values() if e["type"] == "ByProperties")
        url = (
            f"{running.api}/api/subscriptions/job/wide/pe/{by_properties['peId']}/export/"
            f"{by_properties['portId']}/property/kind"
        )
        body = b'<streamProperty name="kind" type="rstring"><value>"k2"</value></streamProperty>'
        assert (await call(http, "PUT", url, body))[0] == 409  # PUT adds: "kind" exists
        assert (await call(http, "PATCH", url, body))[0] == 204

        async def subscribed() -> bool:
            imports = await owned(client, IMPORTS, "wide")
            if len(imports) != 1:
                return False
            ((name, imported),) = imports.items()
            doc = await board(http, running, "wide", imported["spec"]["peId"])
            entries = doc["imports"].get(name, {}).get("entries", {})
            exports = await owned(client, EXPORTS, "wide")
            return [exports[e]["spec"]["stream"]["exportOperName"] for e in entries if e in exports] == [
                "Export1"
            ]

        await eventually_async(subscribed, within=10)

        regions, _ = await client.list_all(PARALLEL_REGIONS, "default")
        for region in regions:
            await client.patch(
                PARALLEL_REGIONS, region["metadata"]["name"], {"spec": {"width": 4}}, "default"
            )

        async def resized() -> bool:
            job = await client.get(JOBS, "wide", "default")
            generation = str(job["status"].get("generationId"))
            return generation == "2" and await _ports_follow_the_pes(client, "wide", generation)

        await eventually_async(resized, within=30)
        after = {n: o["spec"] for n, o in (await owned(client, EXPORTS, "wide")).items()}
        assert after != before  # re-fusion moved the exporting ports
        (moved,) = (e for e in after.values() if e["type"] == "ByProperties")
        assert moved["stream"]["properties"] == [{"name": "kind", "type": "rstring", "values": ['"k2"']}]
        await eventually_async(subscribed, within=10)  # the moved Import still matches the moved Export
