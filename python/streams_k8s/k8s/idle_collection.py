"""Young garbage collected while the controllers are idle (the operator's process: `cli.run`).

The operator's young generation is collected every 50,000 objects (`sandbox.heap.hold`); with
the objects a 1,000-PE job's watches and readings keep, that takes ~40 ms with the event loop
stopped, wherever the 50,000th object is made: in four of five traced 10% upgrades, inside the
edit's plan, before its first write. Every ``period`` seconds in which no controller has a key
queued or being reconciled, the young objects are collected once there are ``min_young`` of
them, so a change that comes finds the young generation nearly empty. While the controllers are
busy, the interpreter's own thresholds apply as before; the oldest generation is left to them.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

PERIOD = 0.5  # seconds between looks
MIN_YOUNG = 5_000  # young objects worth a collection (a few ms at the ~0.8 µs an object traced)


def collect_young() -> int:
    """Collect the young generation, and the middle one with it when it is due (as the
    interpreter would: it has seen its threshold of young collections); what was freed."""
    _, young_collections, _ = gc.get_count()
    _, middle_threshold, _ = gc.get_threshold()
    return gc.collect(1 if young_collections >= middle_threshold else 0)


async def collect_while_idle(
    idle: Callable[[], bool], period: float = PERIOD, min_young: int = MIN_YOUNG
) -> None:
    """Run until cancelled (see the module docs)."""
    while True:
        await asyncio.sleep(period)
        if gc.isenabled() and gc.get_count()[0] >= min_young and idle():
            collect_young()
