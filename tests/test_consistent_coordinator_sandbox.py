"""The Kubernetes coordinator end to end in the sandbox (dedicated mode): the simulated PE
runtime polls the coordinator's REST API and answers drains and resets; state is read back from
the ConsistentRegion status subresource over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from cr_cluster import ConnectivityToPeStatus, CoordinatorPod, JobWorld, dedicated, region_spec
from k8s_support import eventually_async
from operator_support import as_pe
from streams_k8s.consistent.kinds import CONSISTENT_REGIONS
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.cluster.consistent_region import ConsistentRegionParticipant
from tokens import allow_job_updates, token_for


@dataclass
class Scene:
    sandbox: Sandbox
    client: KubeClient
    participant: ConsistentRegionParticipant
    world: JobWorld
    pod: CoordinatorPod

    async def status(self, index: int = 0) -> dict[str, Any]:
        return await self.world.status(index)

    async def until(self, index: int, check: Any, within: float = 15.0) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def holds() -> bool:
            seen.update(await self.status(index))
            return bool(check(seen))

        await eventually_async(holds, within=within, every=0.05)
        return seen

    async def restart_coordinator(self) -> None:
        await self.pod.stop()
        self.pod = await CoordinatorPod(self.sandbox, self.pod.settings).start()
        self.participant.base_url = self.pod.url

    async def put(self, path: str, body: Any, pe: int | None = 1, token: str | None = None) -> int:
        """PUT from the pod of ``pe`` (None: from outside the job), with ``token`` if given."""
        url = f"{self.pod.url}/api/consistentregion{path}"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with contextlib.AsyncExitStack() as stack:
            if pe is None:
                http = await stack.enter_async_context(aiohttp.ClientSession())
            else:
                http = await stack.enter_async_context(as_pe(self.client, "j", pe))
            async with http.put(url, json=body, headers=headers) as answer:
                return answer.status


@contextlib.asynccontextmanager
async def scene(
    regions: dict[int, dict[str, Any]], participant: ConsistentRegionParticipant, **settings: Any
) -> AsyncIterator[Scene]:
    operator = ConnectivityToPeStatus()
    async with (
        Sandbox(pe_reporter=operator, pe_hooks=participant) as sb,
        await KubeClient.connect(str(sb.kubeconfig_path)) as client,
    ):
        operator.client = client
        pod = await CoordinatorPod(sb, dedicated("j", **settings)).start()
        participant.base_url = pod.url
        world = JobWorld(client, "j", regions)
        await world.create()
        s = Scene(sb, client, participant, world, pod)
        try:
            yield s
        finally:
            await s.pod.stop()


@pytest.fixture
async def periodic() -> AsyncIterator[Scene]:
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    async with scene({0: region_spec(0, [1, 2])}, participant) as s:
        yield s


def processing(status: dict[str, Any]) -> bool:
    return status.get("state") == "PROCESSING"


async def test_periodic_checkpoints_advance_and_are_persisted(periodic: Scene) -> None:
    status = await periodic.until(0, lambda s: s.get("lastCompletedSeqID", 0) >= 3)
    assert status["state"] in ("PROCESSING", "DRAINING")
    first = status["lastCompletedSeqID"]
    later = await periodic.until(0, lambda s: s.get("lastCompletedSeqID", 0) >= first + 2)
    assert later["currentSeqID"] > first
    kinds = {n.type for n in periodic.participant.seen}
    assert {"triggerDrain", "resumeSubmission"} <= kinds
    async with aiohttp.ClientSession() as http, http.get(periodic.pod.metrics_url) as answer:
        text = await answer.text()
    assert 'last_completed_drain_seq_id{ConsistentRegion="ConsistentRegion_0"}' in text
    assert "streams_cr_coordinator_status_writes_total" in text
    assert "streams_k8s_watch_events_total" in text  # the runtime's own health metrics


async def test_a_pe_pod_killed_mid_drain_makes_the_region_unhealthy_then_reset_to_the_checkpoint() -> None:
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    async with scene({0: region_spec(0, [1, 2], period=0.5)}, participant) as s:
        done = (await s.until(0, lambda st: st.get("lastCompletedSeqID", 0) >= 1))["lastCompletedSeqID"]
        participant.drain_delay = 2.0  # the next drain stays open long enough to kill a PE in it
        draining = await s.until(0, lambda st: st.get("state") == "DRAINING")
        checkpoint = draining["lastCompletedSeqID"]
        assert checkpoint >= done
        assert s.sandbox.cluster is not None
        await s.sandbox.cluster.fail_pod("default", s.world.pod_name(2), reason="Killed", message="test")
        await s.until(0, lambda st: st.get("state") == "UNHEALTHY")
        participant.drain_delay = 0.0
        await s.world.launch(2)  # the instance operator's relaunch, at launch count 2
        await s.until(0, processing)
        resets = [n for n in participant.seen if n.type == "triggerReset"]
        assert resets
        assert resets[0].message.startswith(f"seqId={checkpoint};")
        status = await s.status()
        assert status["lastCompletedSeqID"] == checkpoint or status["lastCompletedSeqID"] > checkpoint
        assert status["lastCompletedReset"] == checkpoint


async def test_max_reset_attempts_reached_then_a_forced_reset_recovers() -> None:
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    spec = region_spec(0, [1, 2], period=30.0, resetTimeout=0.3, maxConsecutiveResetAttempts=2)
    async with scene({0: spec}, participant) as s:
        await s.until(0, processing)
        participant.skip_resets = 10_000  # the PEs never complete a reset
        assert await s.put("/region/0/reset", {"request": {"force": "false"}}) == 204
        status = await s.until(0, lambda st: st.get("state") == "MAXIMUM_RESET_ATTEMPTS_REACHED")
        assert status["currentResetAttempt"] >= 2
        participant.skip_resets = 0
        assert await s.put("/region/0/reset", {"request": {"force": "true"}}) == 204
        await s.until(0, processing)
        assert participant.seen[-1].type == "resumeSubmission"


async def test_only_the_jobs_pe_pods_or_an_authorized_token_may_reset_a_region() -> None:
    """The fuzzer's attack: unauthenticated resets drove a region to MAXIMUM_RESET_ATTEMPTS_REACHED."""
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    spec = region_spec(0, [1, 2], period=30.0, resetTimeout=0.3, maxConsecutiveResetAttempts=1)
    async with scene({0: spec}, participant, token_review=True) as s:
        await s.until(0, processing)
        participant.skip_resets = 10_000  # a reset would never complete
        reset = {"request": {"force": "true"}}
        assert await s.put("/region/0/reset", reset, pe=None) == 401
        assert await s.put("/region/0/pe/2/checkpoint", 1, pe=1) == 403  # PE 1 reporting for PE 2
        assert await s.put("/region/0/reset", reset, pe=None, token="forged") == 401
        token = await token_for(s.client, "cli")
        assert await s.put("/region/0/reset", reset, pe=None, token=token) == 403
        await asyncio.sleep(0.5)
        assert (await s.status())["state"] == "PROCESSING"  # none of them reached the FSM
        await allow_job_updates(s.client, "editor", "j")
        allowed = await token_for(s.client, "editor")
        assert await s.put("/region/0/reset", reset, pe=None, token=allowed) == 204
        await s.until(0, lambda st: st.get("state") in ("RESETTING", "MAXIMUM_RESET_ATTEMPTS_REACHED"))


async def test_a_restarted_coordinator_resumes_from_the_status_and_forces_a_reset(periodic: Scene) -> None:
    before = await periodic.until(0, lambda s: s.get("lastCompletedSeqID", 0) >= 2)
    await periodic.restart_coordinator()
    resets_before = sum(1 for n in periodic.participant.seen if n.type == "triggerReset")
    status = await periodic.until(
        0, lambda s: s.get("lastCompletedReset", -1) >= before["lastCompletedSeqID"]
    )
    assert sum(1 for n in periodic.participant.seen if n.type == "triggerReset") > resets_before
    # Checkpoints go on from where the persisted status left them, never back.
    after = await periodic.until(0, lambda s: s.get("lastCompletedSeqID", 0) > status["lastCompletedSeqID"])
    assert after["currentSeqID"] > before["lastCompletedSeqID"]


async def test_a_deleted_region_stops_running_and_the_others_go_on() -> None:
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    async with scene({0: region_spec(0, [1, 2]), 1: region_spec(1, [3])}, participant) as s:
        await s.until(1, lambda st: st.get("lastCompletedSeqID", 0) >= 1)
        await s.client.delete(CONSISTENT_REGIONS, s.world.region_name(1), "default")
        assert s.pod.coordinator is not None
        coordinator = s.pod.coordinator

        async def dropped() -> bool:
            run = next(iter(coordinator.jobs.values()))
            return set(run.loop.regions) == {0}

        await eventually_async(dropped, within=10)
        floor = (await s.status(0))["lastCompletedSeqID"]
        await s.until(0, lambda st: st.get("lastCompletedSeqID", 0) > floor + 1)
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{s.pod.url}/api/consistentregion/region/1/state") as r,
        ):
            assert r.status == 404


async def test_a_region_persisted_mid_drain_is_reset_even_when_the_operator_never_recorded_a_start() -> None:
    operator = ConnectivityToPeStatus()
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    async with (
        Sandbox(pe_reporter=operator, pe_hooks=participant) as sb,
        await KubeClient.connect(str(sb.kubeconfig_path)) as client,
    ):
        operator.client = client
        world = JobWorld(client, "j", {0: region_spec(0, [1, 2], period=30.0)})
        await world.create()
        persisted = {"state": "DRAINING", "currentSeqID": 5, "lastCompletedSeqID": 4, "pendingSeqID": 5}
        await client.patch_status(CONSISTENT_REGIONS, world.region_name(0), persisted, "default")
        pod = await CoordinatorPod(sb, dedicated("j")).start()
        participant.base_url = pod.url
        try:

            async def reset_and_resumed() -> bool:
                status = await world.status(0)
                return status.get("state") == "PROCESSING" and status.get("lastCompletedReset") == 4

            await eventually_async(reset_and_resumed, within=15)
            assert next(n.message for n in participant.seen if n.type == "triggerReset").startswith(
                "seqId=4;"
            )
        finally:
            await pod.stop()


async def test_an_invalid_region_is_reported_on_the_cr_and_the_valid_ones_run() -> None:
    participant = ConsistentRegionParticipant("", poll_interval=0.02)
    broken = region_spec(1, [3])
    del broken["period"]  # periodic without a period: the FSM refuses it
    async with scene({0: region_spec(0, [1, 2]), 1: broken}, participant) as s:
        await s.until(0, lambda st: st.get("lastCompletedSeqID", 0) >= 1)
        events = Resource("events.k8s.io", "v1", "events", "Event")

        async def reported() -> bool:
            items, _ = await s.client.list_all(events, "default")
            return any(
                e.get("reason") == "InvalidRegion"
                and e.get("regarding", {}).get("name") == s.world.region_name(1)
                and "period" in e.get("note", "")
                for e in items
            )

        await eventually_async(reported, within=10)
        assert s.pod.coordinator is not None
        run = next(iter(s.pod.coordinator.jobs.values()))
        assert set(run.loop.regions) == {0}
        (condition,) = (await s.status(1))["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "Accepted",
            "False",
            "InvalidRegion",
        )
        # Fixed by its owner: it runs, and the refusal is withdrawn.
        await s.client.patch(CONSISTENT_REGIONS, s.world.region_name(1), {"spec": {"period": 0.3}}, "default")
        await s.until(1, lambda st: st.get("lastCompletedSeqID", 0) >= 1 and not st.get("conditions"))
