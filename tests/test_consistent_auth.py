"""Bearer-token authentication of the consistent-region API: the runtime (no token) passes,
a presented token must pass TokenReview. Over HTTP against the real API sub-application."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from streams_k8s.api.consistent_region import ConsistentRegionSpec, Trigger
from streams_k8s.consistent.auth import Review, bearer_auth
from streams_k8s.consistent.fsm import RegionMachine
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.rest import BASE_PATH, consistent_region_api


class Reviews:
    """A TokenReview verdict per token, counting the reviews asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, token: str) -> Review:
        self.asked.append(token)
        if token == "broken":
            raise ConnectionError("API server unreachable")
        return Review(token == "good", "system:serviceaccount:ns:cli" if token == "good" else "", "bad token")


@pytest.fixture
async def api() -> AsyncIterator[tuple[str, Reviews]]:
    spec = ConsistentRegionSpec(region_index=0, trigger=Trigger.PERIODIC, period=1.0, pes_in_region=[1])
    coordinator = LocalCoordinator([RegionMachine(spec)])
    reviews = Reviews()
    app = web.Application()
    app.add_subapp(BASE_PATH, consistent_region_api(coordinator, middlewares=[bearer_auth(reviews)]))
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}{BASE_PATH}", reviews
    await runner.cleanup()


async def get(url: str, token: str | None = None, scheme: str = "Bearer") -> tuple[int, object]:
    headers = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as answer:
        return answer.status, await answer.json(content_type=None)


async def test_the_runtime_without_a_token_keeps_working(api: tuple[str, Reviews]) -> None:
    base, reviews = api
    assert await get(f"{base}/region/0/state") == (200, "STARTED")
    assert reviews.asked == []


async def test_a_valid_token_is_reviewed_once_then_cached(api: tuple[str, Reviews]) -> None:
    base, reviews = api
    for _ in range(3):
        assert (await get(f"{base}/region/0/state", "good"))[0] == 200
    assert reviews.asked == ["good"]


async def test_a_refused_or_unreviewable_token_is_a_401_json(api: tuple[str, Reviews]) -> None:
    base, _ = api
    status, body = await get(f"{base}/region/0/state", "forged")
    assert status == 401
    assert isinstance(body, dict)
    assert body["reason"] == "Unauthorized"
    assert "bad token" in body["message"]
    assert (await get(f"{base}/region/0/state", "broken"))[0] == 401
    assert (await get(f"{base}/region/0/state", "user:pass", scheme="Basic"))[0] == 401
