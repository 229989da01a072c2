"""The instance operator renders each consistent-region job's coordinator objects, and the whole
loop runs: operator → coordinator (a `streams-k8s coordinator` process, which the sandbox's
kubelet runs in the Deployment's pod) → simulated PE runtime (which reports connectivity to the
operator and answers resets through the coordinator's Service; the test plays the trigger operator
and the PEs' checkpoints of an operator-driven region)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cr_cluster import coordinator_accounts, coordinator_url
from k8s_support import eventually_async
from operator_support import SUBMITTED, as_pe, free_port, job_manifest, operator, wait_for_phase
from streams_k8s import __version__
from streams_k8s.api.contract import JOB_LABEL, coordinator_service_name
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import CONSISTENT_REGION_OPERATORS, CONSISTENT_REGIONS, JOBS
from streams_k8s.controller.settings import OperatorSettingError, OperatorSettings
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EVENTS
from streams_k8s.k8s.kinds import DEPLOYMENTS, NETWORK_POLICIES, PODS, SERVICES
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant

API_PORT = free_port()
PARTICIPANT = ConsistentRegionParticipant(poll_interval=0.02)  # at the job's coordinator Service
CRO = "cr-consistent-region-operator"


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def get_or_none(client: KubeClient, resource: Resource, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, "default")
    except ApiError as err:
        if err.not_found:
            return None
        raise


async def appears(client: KubeClient, resource: Resource, name: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def there() -> bool:
        found.update(await get_or_none(client, resource, name) or {})
        return bool(found)

    await eventually_async(there, within=15)
    return found


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    ref = obj["metadata"]["ownerReferences"][0]
    return (ref["kind"], ref["uid"], ref["controller"]) == (
        "ConsistentRegionOperator",
        owner["metadata"]["uid"],
        True,
    )


@pytest.mark.sandbox(nodes=2, controller_url=f"http://127.0.0.1:{API_PORT}", pe_hooks=PARTICIPANT)
async def test_dedicated_coordinator_objects_and_checkpoints_end_to_end(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMS_K8S_COORDINATOR_IMAGE", "registry.test/streams-k8s:dev")
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, consistent_chains=1))
    await coordinator_accounts(client)
    async with operator(sandbox, monkeypatch, tmp_path / "cache", api_port=API_PORT):
        await client.create(JOBS, job_manifest("cr", bundle, fusion={"manual": 3}))
        await wait_for_phase(client, "cr", *SUBMITTED)
        cro = await client.get(CONSISTENT_REGION_OPERATORS, CRO, "default")
        assert cro["spec"]["mode"] == "dedicated"

        deployment = await appears(client, DEPLOYMENTS, "cr-consistent-region-operator")
        service = await appears(client, SERVICES, coordinator_service_name("cr"))
        policy = await appears(client, NETWORK_POLICIES, "cr-consistent-region-operator")
        for obj in (deployment, service, policy):
            assert owned_by(obj, cro)
            assert obj["metadata"]["labels"][JOB_LABEL] == "cr"
            assert obj["metadata"]["labels"]["svc"] == "consistent-region-operator"
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "registry.test/streams-k8s:dev"
        assert container["args"][-2:] == ["--job", "cr"]
        assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
        ports = {p["name"]: (p["port"], p["protocol"]) for p in service["spec"]["ports"]}
        assert ports == {"sys-api": (10000, "TCP"), "sys-metrics": (9696, "TCP")}
        peers = policy["spec"]["ingress"][0]["from"]
        assert peers[0]["podSelector"]["matchLabels"] == {"app": "streams", "svc": "pe", JOB_LABEL: "cr"}

        # A deleted object comes back.
        await client.delete(SERVICES, coordinator_service_name("cr"), "default")
        await eventually_async(lambda: _exists(client, SERVICES, coordinator_service_name("cr")), within=10)
        # So does the NetworkPolicy, deleted or opened to everyone.
        policy_name = "cr-consistent-region-operator"
        await client.delete(NETWORK_POLICIES, policy_name, "default")
        await eventually_async(lambda: _exists(client, NETWORK_POLICIES, policy_name), within=10)
        opened = {"spec": {"ingress": [{}]}}  # one empty rule: every source, every port
        await client.patch(NETWORK_POLICIES, policy_name, opened, "default")

        async def restored() -> bool:
            current = await get_or_none(client, NETWORK_POLICIES, policy_name)
            return current is not None and current["spec"] == policy["spec"]

        await eventually_async(restored, within=10)

        # The generated region is operator-driven but declares no trigger operator (the
        # synthetic ADL's entries all say isTriggerOperator=false): its start operator plays one.
        region = (await client.get(CONSISTENT_REGIONS, "cr-cr0", "default"))["spec"]
        trigger = next(op for op, start in region["operatorsToStartRegionMap"].items() if start)
        await client.patch(
            CONSISTENT_REGIONS, "cr-cr0", {"spec": {"operatorsToTriggerMap": {trigger: True}}}, "default"
        )
        # The coordinator runs in its Deployment's pod; the PE runtime answers its drains.
        api = f"{await coordinator_url(sandbox, client, 'cr')}/api/consistentregion/region/0"
        await wait_for_phase(client, "cr", "Running")

        async def state(*states: str) -> bool:
            status = (await client.get(CONSISTENT_REGIONS, "cr-cr0", "default")).get("status") or {}
            return status.get("state") in states

        await eventually_async(lambda: state("PROCESSING"), within=15)

        async def put(path: str, body: Any, pe: int) -> None:
            """As the PE's pod, as its runtime calls."""
            async with as_pe(client, "cr", pe) as http, http.put(f"{api}{path}", json=body) as answer:
                assert answer.status == 204, await answer.text()

        for seq in (1, 2):  # the trigger drains; its markers reach every PE, which checkpoint
            await put(
                "/drain", {"request": {"seqId": str(seq), "operator": trigger}}, region["pesInRegion"][0]
            )
            for pe in region["pesInRegion"]:
                await put(f"/pe/{pe}/checkpoint", seq, pe)

            async def checkpointed(seq: int = seq) -> bool:
                obj = await client.get(CONSISTENT_REGIONS, "cr-cr0", "default")
                status = obj.get("status") or {}
                return status.get("lastCompletedSeqID") == seq and status.get("state") == "PROCESSING"

            await eventually_async(checkpointed, within=15)

        await client.delete(JOBS, "cr", "default")

        async def collected() -> bool:
            names = (
                (DEPLOYMENTS, "cr-consistent-region-operator"),
                (SERVICES, coordinator_service_name("cr")),
            )
            return [await get_or_none(client, r, n) for r, n in names] == [None, None]

        await eventually_async(collected, within=15)


async def _exists(client: KubeClient, resource: Resource, name: str) -> bool:
    return await get_or_none(client, resource, name) is not None


@pytest.mark.sandbox(nodes=1)
async def test_shared_mode_renders_only_the_selectorless_api_service(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMS_K8S_COORDINATOR_MODE", "shared")
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, consistent_chains=1))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("pooled", bundle))
        await wait_for_phase(client, "pooled", *SUBMITTED)
        cro = await client.get(CONSISTENT_REGION_OPERATORS, "pooled-consistent-region-operator", "default")
        assert cro["spec"]["mode"] == "shared"
        service = await appears(client, SERVICES, coordinator_service_name("pooled"))
        assert owned_by(service, cro)
        assert "selector" not in service["spec"]
        assert service["spec"]["clusterIP"] == "None"
        assert await get_or_none(client, DEPLOYMENTS, "pooled-consistent-region-operator") is None


@pytest.mark.sandbox(nodes=1, disabled_apis=["networking.k8s.io/v1"])
async def test_without_network_policy_api_the_coordinator_still_runs_with_a_warning(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, consistent_chains=1))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("open", bundle))
        await appears(client, DEPLOYMENTS, "open-consistent-region-operator")

        async def warned() -> bool:
            items, _ = await client.list_all(EVENTS, "default")
            return any(e.get("reason") == "NetworkPolicyUnavailable" for e in items)

        await eventually_async(warned, within=10)


@pytest.mark.sandbox(nodes=1)
async def test_dedicated_coordinators_run_the_operators_own_image(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The operator's pod, as deploy/deployment.yaml makes it after an overlay set its image.
    image = "registry.test/team/streams-k8s:7"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "streams-k8s-operator-5d9f8", "namespace": "default"},
        "spec": {"containers": [{"name": "controller", "image": image, "args": ["run"]}]},
    }
    await client.create(PODS, pod)
    monkeypatch.setenv("POD_NAME", pod["metadata"]["name"])
    monkeypatch.setenv("POD_NAMESPACE", "default")
    monkeypatch.delenv("STREAMS_K8S_COORDINATOR_IMAGE", raising=False)
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, consistent_chains=1))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("own", bundle))
        deployment = await appears(client, DEPLOYMENTS, "own-consistent-region-operator")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    assert "command" not in container  # the image's ENTRYPOINT runs the arguments
    assert container["args"] == ["coordinator", "--mode", "dedicated", "--job", "own"]


def test_coordinator_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("STREAMS_K8S_COORDINATOR_MODE", "STREAMS_K8S_COORDINATOR_IMAGE"):
        monkeypatch.delenv(variable, raising=False)
    settings = OperatorSettings.from_environment()
    assert settings.coordinator_mode.value == "dedicated"
    assert settings.coordinator_image_or("registry.test/streams-k8s:7") == "registry.test/streams-k8s:7"
    # Outside a pod: the tag deploy/Dockerfile's build documents.
    assert settings.coordinator_image_or(None) == f"streams-k8s:{__version__.split('+', 1)[0]}"
    monkeypatch.setenv("STREAMS_K8S_COORDINATOR_IMAGE", "mine:1")
    assert OperatorSettings.from_environment().coordinator_image_or("x") == "mine:1"
    monkeypatch.setenv("STREAMS_K8S_COORDINATOR_MODE", "pool")
    with pytest.raises(OperatorSettingError, match="STREAMS_K8S_COORDINATOR_MODE='pool'"):
        OperatorSettings.from_environment()
