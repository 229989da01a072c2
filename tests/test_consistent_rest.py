"""The consistent-region REST API over HTTP, on a local coordinator: the runtime's exact bodies,
400/404 JSON errors, and the checkpoint/reset loop with write-before-notify."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from streams_k8s.api.consistent_region import ConsistentRegionSpec, ConsistentRegionStatus, RegionState
from streams_k8s.consistent.fsm import Health, Notify, RegionMachine
from streams_k8s.consistent.local import LocalCoordinator, UnknownRegion
from streams_k8s.consistent.rest import BASE_PATH, consistent_region_api


def spec(
    index: int, trigger: str = "periodic", period: float | None = 0.02, pes: Sequence[int] = (3, 5)
) -> Any:
    return ConsistentRegionSpec.model_validate(
        {
            "regionIndex": index,
            "trigger": trigger,
            "period": period,
            "drainTimeout": 30.0,
            "resetTimeout": 30.0,
            "maxConsecutiveResetAttempts": 2,
            "pesInRegion": list(pes),
            "operatorsToStartRegionMap": {"Beacon": True},
            "operatorsToTriggerMap": {"Beacon": True},
        }
    )


class Api:
    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def get(self, path: str) -> tuple[int, Any]:
        async with self.session.get(self.base + path) as r:
            body = await r.read()
            return r.status, orjson.loads(body) if body else None

    async def put(self, path: str, body: bytes) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        async with self.session.put(self.base + path, data=body, headers=headers) as r:
            data = await r.read()
            return r.status, orjson.loads(data) if data else None


@asynccontextmanager
async def serving(coordinator: LocalCoordinator) -> AsyncIterator[Api]:
    app = web.Application()
    app.add_subapp(BASE_PATH, consistent_region_api(coordinator))
    runner = asyncio.create_task(coordinator.run())
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as session:
        try:
            yield Api(session, str(server.make_url(BASE_PATH)))
        finally:
            runner.cancel()


async def wait_for(predicate: Any, within: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def test_periodic_checkpoint_loop_through_the_api() -> None:
    writes: list[tuple[int, RegionState, int]] = []
    pushes: list[tuple[int, tuple[int, ...], str, int]] = []

    async def persist(index: int, status: ConsistentRegionStatus) -> None:
        writes.append((index, status.state, status.current_seq_id))

    async def push(index: int, pes: Sequence[int], note: Notify) -> None:
        # Each push comes after the write of the state it announces.
        pushes.append((index, tuple(pes), note.message, len(writes)))

    coordinator = LocalCoordinator([RegionMachine(spec(0))], persist=persist, push=push)
    async with serving(coordinator) as api:
        assert await api.get("/pe/3") == (
            404,
            {"status": 404, "reason": "Not Found", "message": "no notifications for PE 3"},
        )
        coordinator.submit(0, Health(True, True))
        await wait_for(lambda: coordinator.board.entry(3, 0) is not None)
        assert await api.get("/pe/3") == (200, {"0": {"type": "triggerDrain", "message": "seqId=1"}})
        assert await api.get("/pe/5/region/0") == (200, {"type": "triggerDrain", "message": "seqId=1"})
        assert await api.get("/region/0/state") == (200, "DRAINING")
        # The runtime reports a checkpoint with a bare number as the body.
        assert await api.put("/region/0/pe/3/checkpoint", b"1") == (204, None)
        assert await api.put("/region/0/pe/5/checkpoint", b"1") == (204, None)
        await wait_for(lambda: coordinator.regions[0].snapshot()["lastCompletedSeqID"] == 1)
        # The next drain starts after the period; its board entry replaced the resume.
        await wait_for(
            lambda: (note := coordinator.board.entry(3, 0)) is not None and note.message == "seqId=2"
        )
        assert await api.get("/region/0/lastcompletedseqid") == (200, 1)
    assert pushes[0] == (0, (3, 5), "seqId=1", 2)
    assert pushes[1] == (0, (3, 5), "seqId=2;retId=0;pendCkpt=0", 4)
    assert [w[1] for w in writes[:4]] == [
        RegionState.PROCESSING,
        RegionState.DRAINING,
        RegionState.DRAINING,
        RegionState.PROCESSING,
    ]


async def test_reset_loop_with_the_runtimes_string_numbers() -> None:
    coordinator = LocalCoordinator([RegionMachine(spec(1, "operatorDriven", None))])
    async with serving(coordinator) as api:
        coordinator.submit(1, Health(True, True))
        await coordinator.idle()
        assert await api.get("/region/1/state") == (200, "PROCESSING")
        body = b'{"request":{"seqId":"1","operator":"Beacon"}}'
        assert await api.put("/region/1/drain", body) == (204, None)
        body = b'{"request":{"operator":"Beacon","force":"false"}}'
        assert await api.put("/region/1/reset", body) == (204, None)
        await coordinator.idle()
        assert await api.get("/pe/5") == (
            200,
            {"1": {"type": "triggerReset", "message": "seqId=0;resetAttempt=0"}},
        )
        for pe in (3, 5):
            body = b'{"progress":{"seqId":"0","resetAttempt":"0"}}'
            assert await api.put(f"/region/1/pe/{pe}/reset", body) == (204, None)
        await coordinator.idle()
        resume = {"type": "resumeSubmission", "message": "seqId=2;retId=0;pendCkpt=0"}
        assert await api.get("/pe/3/region/1") == (200, resume)
        # A late duplicate is accepted over HTTP (the runtime ignores non-204 anyway) and
        # refused by the FSM without harm.
        body = b'{"progress":{"seqId":"0","resetAttempt":"0"}}'
        assert await api.put("/region/1/pe/3/reset", body) == (204, None)
        await coordinator.idle()
        assert coordinator.rejected == 1
        assert await api.get("/region/1/state") == (200, "PROCESSING")


async def test_region_settings() -> None:
    coordinator = LocalCoordinator(
        [RegionMachine(spec(0, period=2.5)), RegionMachine(spec(4, "operatorDriven", None))]
    )
    async with serving(coordinator) as api:
        assert await api.get("/region/0/trigger") == (200, "periodic")
        assert await api.get("/region/4/trigger") == (200, "operator driven")
        assert await api.get("/region/0/period") == (200, 2.5)
        assert await api.get("/region/4/period") == (200, 0.0)
        assert await api.get("/region/0/draintimeout") == (200, 30.0)
        assert await api.get("/region/0/resettimeout") == (200, 30.0)
        assert await api.get("/region/0/maxconsecutiveresetattempts") == (200, 2)
        assert await api.get("/region/4/state") == (200, "STARTED")
        assert await api.get("/region/4/lastcompletedseqid") == (200, 0)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("PUT", "/region/0/pe/3/checkpoint", b"", 400, "the request has no body"),
        ("PUT", "/region/0/pe/3/checkpoint", b"one", 400, "the body is not JSON"),
        ("PUT", "/region/0/pe/3/checkpoint", b"-1", 400, "must be between 0 and 18446744073709551615"),
        ("PUT", "/region/0/pe/3/checkpoint", b"1.5", 400, "must be a non-negative integer, got 1.5"),
        ("PUT", "/region/0/pe/3/checkpoint", b"true", 400, "must be a non-negative integer, got true"),
        ("PUT", "/region/0/pe/3/blockingcheckpoint", b"18446744073709551616", 400, "non-negative integer"),
        ("PUT", "/region/0/pe/3/blockingcheckpoint", b'"18446744073709551616"', 400, "must be between 0 and"),
        ("PUT", "/region/0/pe/3/reset", b'{"progress":{"seqId":"1"}}', 400, "progress lacks resetAttempt"),
        ("PUT", "/region/0/pe/3/reset", b'{"seqId":"1","resetAttempt":"0"}', 400, '{"progress": {...}}'),
        (
            "PUT",
            "/region/0/pe/3/reset",
            b'{"progress":{"seqId":"x","resetAttempt":"0"}}',
            400,
            'progress.seqId must be a non-negative integer, got "x"',
        ),
        ("PUT", "/region/0/drain", b'{"request":{"seqId":"1"}}', 400, "request lacks operator"),
        (
            "PUT",
            "/region/0/drain",
            b'{"request":{"seqId":"1","operator":7}}',
            400,
            "request.operator must be",
        ),
        (
            "PUT",
            "/region/0/reset",
            b'{"request":{"force":"maybe"}}',
            400,
            'request.force must be true or false, got "maybe"',
        ),
        (
            "PUT",
            "/region/x/reset",
            b'{"request":{}}',
            400,
            "region id in the path must be a non-negative integer, got 'x'",
        ),
        ("GET", "/pe/-3", b"", 400, "PE id in the path must be a non-negative integer"),
        ("GET", "/pe/\u00b2", b"", 400, "PE id in the path must be a non-negative integer"),
        ("PUT", "/region/9/reset", b'{"request":{}}', 404, "no consistent region 9"),
        ("PUT", "/region/0/pe/4/checkpoint", b"1", 404, "PE 4 is not in consistent region 0"),
        ("GET", "/region/9/state", b"", 404, "no consistent region 9"),
        ("GET", "/region/0/colour", b"", 404, "no region field 'colour'"),
        ("GET", "/pe/3/region/0", b"", 404, "no notification for PE 3 in region 0"),
        ("GET", "/nowhere", b"", 404, "Not Found"),
        ("GET", "/region/0/pe/3/checkpoint", b"", 405, "Method Not Allowed"),
    ],
)
async def test_bad_requests_get_json_errors(
    method: str, path: str, body: bytes, status: int, message: str
) -> None:
    coordinator = LocalCoordinator([RegionMachine(spec(0))])
    async with serving(coordinator) as api, api.session.request(method, api.base + path, data=body) as r:
        assert r.status == status
        assert r.content_type == "application/json"
        doc = await r.json()
    assert doc["status"] == status
    assert message in doc["message"]
    # Nothing reached the FSM.
    assert coordinator.regions[0].state is RegionState.STARTED


async def test_force_reset_accepts_booleans_and_strings() -> None:
    coordinator = LocalCoordinator([RegionMachine(spec(0))])
    async with serving(coordinator) as api:
        for body in (
            b'{"request":{"force":true}}',
            b'{"request":{"operator":"Beacon","force":"TRUE"}}',
            b'{"request":{}}',
        ):
            assert await api.put("/region/0/reset", body) == (204, None)
        await coordinator.idle()
    status = coordinator.regions[0].status()
    # In STARTED a reset request only arms the reset for when the region is healthy.
    assert status.must_reset
    assert status.current_max_reset_attempts == 2


async def test_failed_writes_are_retried_before_anyone_is_notified() -> None:
    failures = [RuntimeError("409 conflict"), RuntimeError("timeout")]
    written: list[RegionState] = []

    async def persist(index: int, status: ConsistentRegionStatus) -> None:
        if failures:
            raise failures.pop(0)
        written.append(status.state)

    coordinator = LocalCoordinator([RegionMachine(spec(0))], persist=persist)
    coordinator.submit(0, Health(True, False))
    runner = asyncio.create_task(coordinator.run())
    await wait_for(lambda: coordinator.board.entry(3, 0) is not None)
    runner.cancel()
    assert written == [RegionState.RESETTING]
    assert not failures


async def test_unhealthy_region_loses_its_board_entries() -> None:
    coordinator = LocalCoordinator([RegionMachine(spec(0, period=60.0))])
    async with serving(coordinator) as api:
        coordinator.submit(0, Health(True, False))
        await coordinator.idle()
        assert (await api.get("/pe/3"))[0] == 200
        coordinator.submit(0, Health(False, False))
        await coordinator.idle()
        assert (await api.get("/pe/3"))[0] == 404
        assert await api.get("/region/0/state") == (200, "UNHEALTHY")


async def test_a_restarted_coordinator_resets_every_region() -> None:
    machines = [RegionMachine(spec(0, period=60.0)), RegionMachine(spec(1, period=60.0, pes=(7,)))]
    for m in machines:
        m.step(Health(True, True), 0)
    restored = [RegionMachine(m.spec, m.status()) for m in machines]
    coordinator = LocalCoordinator(restored, restarted=True)
    async with serving(coordinator) as api:
        await coordinator.idle()
        assert await api.get("/region/1/state") == (200, "STARTED")
        coordinator.submit(0, Health(True, True))
        coordinator.submit(1, Health(True, True))
        await coordinator.idle()
        assert await api.get("/pe/7") == (
            200,
            {"1": {"type": "triggerReset", "message": "seqId=0;resetAttempt=0"}},
        )
        assert await api.get("/region/0/state") == (200, "RESETTING")
    with pytest.raises(UnknownRegion):
        coordinator.submit(2, Health(True, True))


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        keys = ["request", "progress", "seqId", "resetAttempt", "operator", "force", "x"]
        return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if depth < 3 and roll < 0.4:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return rng.choice(
        [
            rng.randint(-5, 2**64 + 5),
            str(rng.randint(-5, 10)),
            rng.random() * 10,
            rng.choice(["true", "false", "TRUE", "", " 7 ", "Beacon", "\u0663"]),
            rng.choice([True, False, None]),
        ]
    )


async def test_random_bodies_never_break_the_api() -> None:
    rng = random.Random(8)
    paths = [
        "/region/0/pe/3/checkpoint",
        "/region/0/pe/5/blockingcheckpoint",
        "/region/0/pe/3/reset",
        "/region/0/drain",
        "/region/0/reset",
    ]
    coordinator = LocalCoordinator([RegionMachine(spec(0, "operatorDriven", None))])
    seen: set[int] = set()
    async with serving(coordinator) as api:
        for i in range(400):
            body = json.dumps(random_json(rng)).encode() if i % 7 else rng.randbytes(8)
            status, doc = await api.put(rng.choice(paths), body)
            seen.add(status)
            assert status in (204, 400), (body, status, doc)
            if status == 400:
                assert doc["status"] == 400
                assert doc["message"]
        await coordinator.idle()
    assert seen == {204, 400}
    # Whatever got through was an event the FSM could judge; it is still running.
    assert coordinator.regions[0].state in set(RegionState)
