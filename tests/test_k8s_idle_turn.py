"""Background work waits its turn while the controllers are busy (`k8s.idle_turn`)."""

from __future__ import annotations

import asyncio
import time

from streams_k8s.k8s.idle_turn import IdleTurn


async def test_work_waits_while_the_controllers_are_busy_and_goes_once_they_are_idle() -> None:
    idle = False
    turn = IdleTurn(lambda: idle, deadline=time.monotonic() + 60, step=0.01)
    waiting = asyncio.create_task(turn())
    await asyncio.sleep(0.1)
    assert not waiting.done()
    idle = True
    await asyncio.wait_for(waiting, 1.0)
    await asyncio.wait_for(turn(), 0.01)  # idle: at once


async def test_work_goes_at_its_deadline_when_the_controllers_stay_busy() -> None:
    started = time.monotonic()
    turn = IdleTurn(lambda: False, deadline=started + 0.2, step=0.01)
    await asyncio.wait_for(asyncio.gather(*(turn() for _ in range(3))), 5.0)
    assert time.monotonic() - started >= 0.2


async def test_many_waiting_pieces_of_work_look_as_often_as_one() -> None:
    looks = 0
    idle = False

    def controllers_idle() -> bool:
        nonlocal looks
        looks += 1
        return idle

    turn = IdleTurn(controllers_idle, deadline=time.monotonic() + 60, step=0.01)
    waiting = [asyncio.create_task(turn()) for _ in range(100)]
    await asyncio.sleep(0.2)  # ~20 looks by the one waiter that looks, not ~2,000
    assert looks < 100 + 100
    idle = True
    await asyncio.wait_for(asyncio.gather(*waiting), 5.0)
