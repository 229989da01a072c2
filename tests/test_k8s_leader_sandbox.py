"""Leader election timing: a killed leader's Lease is taken within the lease duration, and every
handover (after an expiry or a release) counts in leaseTransitions."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator

import pytest

from k8s_support import eventually_async
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.leader import LEASES, LeaderElector
from streams_k8s.sandbox import Sandbox

TIMING = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.9}


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


def elector(client: KubeClient, identity: str) -> LeaderElector:
    return LeaderElector(client, "default", "timing", identity, **TIMING)


async def kill(task: asyncio.Task[None]) -> None:
    """As SIGKILL would: the holder stops renewing and never releases."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def renewed(client: KubeClient) -> None:
    """Return as soon as the holder has renewed the Lease once more."""
    before = (await client.get(LEASES, "timing", "default"))["spec"]["renewTime"]

    async def moved() -> bool:
        return bool((await client.get(LEASES, "timing", "default"))["spec"]["renewTime"] != before)

    await eventually_async(moved, within=5, every=0.01)


async def test_a_killed_leaders_lease_is_taken_within_the_lease_duration(client: KubeClient) -> None:
    rng = random.Random(16)
    for trial in range(3):
        leader, candidate = elector(client, f"a{trial}"), elector(client, f"b{trial}")
        await leader.acquire()
        holding = asyncio.create_task(leader.hold())
        campaign = asyncio.create_task(candidate.acquire())
        await asyncio.sleep(2.0 + rng.uniform(0, TIMING["retry_period"]))
        assert not campaign.done()
        await renewed(client)  # killed just after a renewal: the longest wait a candidate can have
        killed_at = time.monotonic()
        await kill(holding)
        await asyncio.wait_for(campaign, 10)
        taken_in = time.monotonic() - killed_at
        assert taken_in <= TIMING["lease_duration"] + 0.5, f"trial {trial}: {taken_in:.2f}s"  # + scheduling
        await candidate.release()


async def test_every_handover_counts_in_lease_transitions(client: KubeClient) -> None:
    first, second = elector(client, "first"), elector(client, "second")
    await first.acquire()
    await first.release()  # graceful: the successor takes over at once
    await asyncio.wait_for(second.acquire(), 3)
    lease = await client.get(LEASES, "timing", "default")
    assert lease["spec"]["leaseTransitions"] == 1
    holding = asyncio.create_task(second.hold())
    await asyncio.sleep(0.2)
    await kill(holding)
    await asyncio.wait_for(first.acquire(), 10)  # after the expiry
    lease = await client.get(LEASES, "timing", "default")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("first", 2)
