"""UDP push hints over real loopback sockets."""

from __future__ import annotations

import asyncio
from typing import Any

from streams_k8s.api.consistent_region import ConsistentRegionSpec
from streams_k8s.consistent.fsm import Health, NotificationType, Notify, RegionMachine, TimerFired, TimerKind
from streams_k8s.consistent.local import LocalCoordinator
from streams_k8s.consistent.notifications import decode_board
from streams_k8s.consistent.udp import UdpPush


class Receiver(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.datagrams: asyncio.Queue[bytes] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.datagrams.put_nowait(data)


async def listen() -> tuple[asyncio.DatagramTransport, Receiver, int]:
    transport, receiver = await asyncio.get_running_loop().create_datagram_endpoint(
        Receiver, local_addr=("127.0.0.1", 0)
    )
    return transport, receiver, transport.get_extra_info("sockname")[1]


async def test_one_datagram_per_pe_with_the_runtime_document() -> None:
    transport, receiver, port = await listen()
    hosts: list[int] = []

    def host_of(pe: int) -> str:
        hosts.append(pe)
        return "127.0.0.1"

    push = UdpPush("wc", "ns", port=port, host_of=host_of)
    note = Notify(NotificationType.TRIGGER_DRAIN, "seqId=7")
    await push(3, [1, 2], note)
    got = [await asyncio.wait_for(receiver.datagrams.get(), 2) for _ in range(2)]
    assert got == [b'{"3":{"type":"triggerDrain","message":"seqId=7"}}'] * 2
    assert sorted(hosts) == [1, 2]
    push.close()
    transport.close()


async def test_unreachable_pes_do_not_fail_the_push() -> None:
    transport, receiver, port = await listen()
    push = UdpPush("wc", "ns", port=port, host_of=lambda pe: "127.0.0.1" if pe == 0 else "pe.invalid")
    await push(0, [0, 1], Notify(NotificationType.DRAINED, "seqId=1"))
    assert decode_board(await asyncio.wait_for(receiver.datagrams.get(), 2)) == {
        0: Notify(NotificationType.DRAINED, "seqId=1")
    }
    push.close()
    transport.close()


async def test_coordinator_pushes_each_notification_to_each_pe() -> None:
    transport, receiver, port = await listen()
    spec = ConsistentRegionSpec.model_validate(
        {"regionIndex": 2, "trigger": "periodic", "period": 60.0, "pesInRegion": [8, 9]}
    )
    machine = RegionMachine(spec)
    push = UdpPush("wc", "ns", port=port, host_of=lambda pe: "127.0.0.1")
    coordinator = LocalCoordinator([machine], push=push)
    runner = asyncio.create_task(coordinator.run())
    coordinator.submit(2, Health(True, True))
    coordinator.submit(2, TimerFired(TimerKind.DRAIN_PERIOD, 0))
    await coordinator.idle()
    got = [decode_board(await asyncio.wait_for(receiver.datagrams.get(), 2)) for _ in range(2)]
    assert got == [{2: Notify(NotificationType.TRIGGER_DRAIN, "seqId=1")}] * 2
    runner.cancel()
    push.close()
    transport.close()
