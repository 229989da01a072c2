"""Notification wire format: exact bytes the PE runtime parses, datagram size, the board."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams_k8s.api.consistent_region import ConsistentRegionSpec
from streams_k8s.api.contract import pe_host
from streams_k8s.consistent.fsm import (
    CheckpointDone,
    Health,
    NotificationType,
    Notify,
    RegionMachine,
    Reset,
    TimerFired,
    TimerKind,
)
from streams_k8s.consistent.notifications import (
    MAX_DATAGRAM_BYTES,
    NotificationBoard,
    WireError,
    decode_board,
    encode_board,
    encode_datagram,
    encode_entry,
    message_values,
)


def test_every_notification_type_has_the_runtime_format() -> None:
    spec = ConsistentRegionSpec.model_validate(
        {
            "regionIndex": 0,
            "trigger": "periodic",
            "period": 1.0,
            "maxConsecutiveResetAttempts": 1,
            "pesInRegion": [0],
        }
    )
    m = RegionMachine(spec)
    m.step(Health(True, True), 0)
    notes = [m.step(TimerFired(TimerKind.DRAIN_PERIOD, 0), 0).notification]
    notes.append(m.step(CheckpointDone(0, 1), 0).notification)
    notes.append(m.step(Reset(), 0).notification)
    notes.append(m.step(Reset(), 0).notification)
    assert [encode_board({0: n}) for n in notes if n is not None] == [
        b'{"0":{"type":"triggerDrain","message":"seqId=1"}}',
        b'{"0":{"type":"resumeSubmission","message":"seqId=2;retId=0;pendCkpt=0"}}',
        b'{"0":{"type":"triggerReset","message":"seqId=1;resetAttempt=0"}}',
        b'{"0":{"type":"resetFailed","message":"seqId=1"}}',
    ]
    drained = Notify(NotificationType.DRAINED, "seqId=3")
    assert encode_entry(drained) == b'{"type":"drained","message":"seqId=3"}'


def test_board_document_lists_regions_in_index_order() -> None:
    a = Notify(NotificationType.TRIGGER_DRAIN, "seqId=7")
    b = Notify(NotificationType.DRAINED, "seqId=6")
    data = encode_board({10: a, 2: b})
    assert data == (
        b'{"2":{"type":"drained","message":"seqId=6"},"10":{"type":"triggerDrain","message":"seqId=7"}}'
    )
    assert decode_board(data) == {2: b, 10: a}


def test_runtime_positional_parse() -> None:
    assert message_values("seqId=4;retId=1;pendCkpt=1") == ["4", "1", "1"]
    assert message_values("seqId=1;resetAttempt=0") == ["1", "0"]
    assert message_values("seqId=9") == ["9"]


@given(
    region=st.integers(0, 9999),
    seq=st.integers(0, 10**12),
    retire=st.integers(0, 10**12),
    pending=st.booleans(),
)
def test_realistic_datagrams_fit_the_runtime_buffer(
    region: int, seq: int, retire: int, pending: bool
) -> None:
    note = Notify(NotificationType.RESUME_SUBMISSION, f"seqId={seq};retId={retire};pendCkpt={int(pending)}")
    data = encode_datagram(region, note)
    assert len(data) <= MAX_DATAGRAM_BYTES
    assert decode_board(data) == {region: note}


def test_the_largest_fsm_notification_fits_and_larger_is_refused() -> None:
    big = 2**64 - 1
    note = Notify(NotificationType.RESUME_SUBMISSION, f"seqId={big};retId={big};pendCkpt=1")
    assert len(encode_datagram(2**32 - 1, note)) == 119
    with pytest.raises(WireError, match="exceeds the runtime's 128-byte buffer"):
        encode_datagram(0, Notify(NotificationType.DRAINED, "seqId=" + "9" * 100))


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"not json", "not JSON"),
        (b"[]", "JSON object keyed by region index"),
        (b'{"x":{"type":"drained","message":"seqId=1"}}', "not a region index"),
        (b'{"1":{"type":"drained"}}', "exactly the keys"),
        (b'{"1":{"type":"drained","message":3}}', "message must be a string"),
        (b'{"1":{"type":"explode","message":"seqId=1"}}', "unknown notification type"),
    ],
)
def test_malformed_documents_are_refused(data: bytes, error: str) -> None:
    with pytest.raises(WireError, match=error):
        decode_board(data)


def test_datagram_host_is_the_pes_headless_service() -> None:
    assert pe_host("wordcount", 3, "streams") == "wordcount-3.streams"


def test_board_keeps_the_latest_entry_per_pe_and_region() -> None:
    board = NotificationBoard()
    drain = Notify(NotificationType.TRIGGER_DRAIN, "seqId=1")
    resume = Notify(NotificationType.RESUME_SUBMISSION, "seqId=2;retId=0;pendCkpt=0")
    board.post(0, [1, 2], drain)
    board.post(1, [2], drain)
    board.post(0, [1, 2], resume)
    assert board.for_pe(1) == {0: resume}
    assert board.for_pe(2) == {0: resume, 1: drain}
    assert board.entry(2, 1) == drain
    board.clear(0, [1, 2])
    assert board.for_pe(1) == {}
    assert board.entry(1, 0) is None
    assert board.for_pe(2) == {1: drain}
