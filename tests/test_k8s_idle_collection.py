"""Young garbage collected while the controllers are idle (`k8s.idle_collection`)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from k8s_support import eventually
from streams_k8s.k8s.idle_collection import collect_while_idle, collect_young


@pytest.fixture
def only_these_collections() -> Iterator[None]:
    """The interpreter's own young collections off, so that what a test sees is the module's."""
    saved = gc.get_threshold()
    gc.set_threshold(10**9, saved[1], saved[2])
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def young() -> int:
    return gc.get_count()[0]


async def test_young_objects_are_collected_while_idle_and_left_alone_while_busy(
    only_these_collections: None,
) -> None:
    idle = False
    collecting = asyncio.create_task(collect_while_idle(lambda: idle, period=0.01, min_young=1_000))
    try:
        kept = [[n] for n in range(5_000)]  # young objects that live on
        await asyncio.sleep(0.2)
        assert young() >= 5_000  # busy: left to the interpreter's thresholds
        idle = True
        await eventually(lambda: young() < 1_000, within=5.0)
        assert kept[-1] == [4_999]  # collected, not freed: they are still referenced
    finally:
        collecting.cancel()


def test_the_middle_generation_is_collected_with_the_young_when_due(only_these_collections: None) -> None:
    gc.collect()  # every generation's count at zero
    _, middle_threshold, _ = gc.get_threshold()
    for _ in range(middle_threshold):
        collect_young()
    assert gc.get_count()[1] == middle_threshold  # young collections only, until now
    old = gc.get_count()[2]
    collect_young()
    assert (gc.get_count()[1], gc.get_count()[2]) == (0, old + 1)  # the middle one collected too
