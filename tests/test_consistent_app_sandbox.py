"""`apps.consistent.ConsistentRegion` (an operator-driven region) under the Kubernetes
coordinator in the sandbox: the region's static fields come from the application's ADL, one PE
per operator (fusion is the instance operator's, not built yet); the test plays the trigger
operator and the data-driven checkpoints, the simulated PE runtime answers the resets."""

from __future__ import annotations

import io
import tarfile
import zipfile
from typing import Any

import pytest
from lxml import etree

from cr_cluster import ConnectivityToPeStatus, CoordinatorPod, JobWorld, dedicated
from k8s_support import eventually_async
from operator_support import as_pe
from repo_paths import SHARED_TESTDATA
from streams_k8s.k8s.client import KubeClient
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant

SAB = SHARED_TESTDATA / "apps" / "apps.consistent.ConsistentRegion.sab"
ADL_NS = {"a": "http://www.ibm.com/xmlns/prod/streams/application/v4200"}


def adl_of(sab: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(sab)) as bundle:
        inner = bundle.read("tar/bundle.tar")
    with tarfile.open(fileobj=io.BytesIO(inner)) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".adl"))
        extracted = tar.extractfile(member)
        assert extracted is not None
        return extracted.read()


def _values(annotation: Any) -> dict[str, str]:
    return {v.get("key"): (v.text or "").strip() for v in annotation.findall("a:value", ADL_NS)}


def regions_from_adl(adl: bytes) -> dict[int, dict[str, Any]]:
    """ConsistentRegion specs from the ADL's `consistentRegion` annotations; PE id = operator index."""
    root = etree.fromstring(adl)
    regions: dict[int, dict[str, Any]] = {}
    for note in root.iterfind(".//a:splAnnotation[@tag='consistentRegion']", ADL_NS):
        fields = _values(note)
        spec: dict[str, Any] = {
            "regionIndex": int(fields["index"]),
            "trigger": fields["trigger"],
            "drainTimeout": float(fields["drainTimeout"]),
            "resetTimeout": float(fields["resetTimeout"]),
            "maxConsecutiveResetAttempts": int(fields["maxConsecutiveResetAttempts"]),
            "pesInRegion": [],
            "operatorsToStartRegionMap": {},
            "operatorsToTriggerMap": {},
        }
        if "period" in fields:
            spec["period"] = float(fields["period"])
        regions[spec["regionIndex"]] = spec
    for operator in root.iterfind(".//a:primitiveOperInstance", ADL_NS):
        for entry in operator.iterfind("a:splAnnotation[@tag='consistentRegionEntry']", ADL_NS):
            fields = _values(entry)
            spec = regions[int(fields["index"])]
            spec["pesInRegion"].append(int(operator.get("index")))
            name = operator.get("name")
            if fields.get("isStartOfRegion") == "true":
                spec["operatorsToStartRegionMap"][name] = True
            if fields.get("isTriggerOperator") == "true":
                spec["operatorsToTriggerMap"][name] = True
    return regions


@pytest.fixture
def app_regions() -> dict[int, dict[str, Any]]:
    if not SAB.is_file():
        pytest.skip(f"shared test data not present: {SAB}")
    return regions_from_adl(adl_of(SAB.read_bytes()))


def test_the_region_is_read_from_the_adl(app_regions: dict[int, dict[str, Any]]) -> None:
    assert list(app_regions) == [0]
    region = app_regions[0]
    assert region["trigger"] == "operatorDriven"
    assert region["pesInRegion"] == [0, 1, 2]
    assert region["operatorsToTriggerMap"] == {"Beat": True}
    assert region["operatorsToStartRegionMap"] == {"Beat": True}


async def test_operator_driven_checkpoints_then_a_pe_failure_resets_to_the_last(
    app_regions: dict[int, dict[str, Any]],
) -> None:
    operator = ConnectivityToPeStatus()
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    async with (
        Sandbox(pe_reporter=operator, pe_hooks=participant) as sb,
        await KubeClient.connect(str(sb.kubeconfig_path)) as client,
    ):
        operator.client = client
        pod = await CoordinatorPod(sb, dedicated("consistent")).start()
        participant.base_url = pod.url
        world = JobWorld(client, "consistent", app_regions)
        api = f"{pod.url}/api/consistentregion/region/0"

        async def put(path: str, body: Any, pe: int) -> None:
            """From the PE's pod, as its runtime calls."""
            async with as_pe(client, "consistent", pe) as http, http.put(f"{api}{path}", json=body) as answer:
                assert answer.status == 204, await answer.text()

        async def state_is(*states: str) -> bool:
            return (await world.status(0)).get("state") in states

        try:
            await world.create()
            await eventually_async(lambda: state_is("PROCESSING"), within=15)
            for seq in (1, 2):  # Beat triggers a drain; the markers reach every PE, which checkpoint
                pes = app_regions[0]["pesInRegion"]
                await put("/drain", {"request": {"seqId": str(seq), "operator": "Beat"}}, pes[0])
                for pe in pes:
                    await put(f"/pe/{pe}/checkpoint", seq, pe)

                async def checkpointed(seq: int = seq) -> bool:
                    status = await world.status(0)
                    return status.get("lastCompletedSeqID") == seq and status.get("state") == "PROCESSING"

                await eventually_async(checkpointed, within=10)
            assert sb.cluster is not None
            await sb.cluster.fail_pod("default", world.pod_name(1), reason="Killed", message="test")
            await eventually_async(lambda: state_is("UNHEALTHY"), within=10)
            await world.launch(1)
            await eventually_async(lambda: state_is("PROCESSING"), within=15)
            resets = [n.message for n in participant.seen if n.type == "triggerReset"]
            assert resets
            assert resets[-1].startswith("seqId=2;")
            assert (await world.status(0))["lastCompletedReset"] == 2
        finally:
            await pod.stop()
