"""`streams-k8s cr-replay`: input and output formats, bad input, generated event logs."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from cr_fsm_reference import ReferenceRegion
from streams_k8s.cli import main
from streams_k8s.consistent.fsm import Health, TimerFired, TimerKind
from streams_k8s.consistent.replay import load_region

REGION: dict[str, Any] = {
    "regionIndex": 0,
    "trigger": "periodic",
    "period": 2,
    "drainTimeout": 30,
    "resetTimeout": 45.5,
    "maxConsecutiveResetAttempts": 2,
    "pesInRegion": [0, 1],
    "operatorsToStartRegionMap": {"src": True},
    "operatorsToTriggerMap": {"src": True},
}


def reference_of_region() -> ReferenceRegion:
    """The reference twin of REGION."""
    return ReferenceRegion("periodic", 2, 30, 45.5, 2, [0, 1], {"src": True}, {"src": True})


def run(tmp_path: Path, region: Any, events: list[Any] | bytes, stdin: bytes | None = None) -> Any:
    region_file = tmp_path / "region.json"
    region_file.write_bytes(region if isinstance(region, bytes) else orjson.dumps(region))
    if isinstance(events, bytes):
        data = events
    else:
        data = b"\n".join(e if isinstance(e, bytes) else orjson.dumps(e) for e in events) + b"\n"
    events_file = tmp_path / "events.jsonl"
    events_file.write_bytes(data)
    args = ["cr-replay", "--region", str(region_file), "-" if stdin is not None else str(events_file)]
    return CliRunner().invoke(main, args, input=stdin)


def records(result: Any) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def test_the_spec_sequence_example(tmp_path: Path) -> None:
    events = [
        {"type": "health", "healthy": True, "cleanStart": True},
        {"type": "timer", "timer": "DrainPeriod"},
        {"type": "checkpoint", "pe": 0, "seqId": 1},
        {"type": "checkpoint", "pe": 1, "seqId": 1},
        {"type": "timer", "timer": "DrainPeriod"},
        {"type": "timer", "timer": "DrainTimeout"},
        {"type": "resetDone", "pe": 0, "seqId": 1, "resetAttempt": 0},
        {"type": "resetDone", "pe": 1, "seqId": 1, "resetAttempt": 0},
        {"type": "timer", "timer": "DrainPeriod"},
        {"type": "blockingCheckpoint", "pe": 0, "seqId": 3},
        {"type": "blockingCheckpoint", "pe": 1, "seqId": 3},
        {"type": "checkpoint", "pe": 0, "seqId": 3},
        {"type": "checkpoint", "pe": 1, "seqId": 3},
    ]
    out = records(run(tmp_path, REGION, events))
    assert out[0] == {
        "state": "PROCESSING",
        "currentSeqID": 1,
        "lastCompletedSeqID": 0,
        "pendingSeqID": 0,
        "toRetireSeqID": 0,
        "currentResetAttempt": 0,
        "notifications": [],
        "timers": [{"timer": "DrainPeriod", "delay": 2.0}],
        "error": None,
    }
    summary = [
        (r["state"], r["currentSeqID"], r["lastCompletedSeqID"], r["toRetireSeqID"], r["pendingSeqID"])
        for r in out
    ]
    notes = [tuple(n.values()) for r in out for n in r["notifications"]]
    assert summary[3] == ("PROCESSING", 2, 1, 0, 2)
    assert summary[5] == ("RESETTING", 2, 1, 0, 2)
    assert summary[7] == ("PROCESSING", 3, 1, 0, 2)
    assert summary[10] == ("CHECKPOINT_PENDING", 4, 1, 0, 3)
    assert summary[12] == ("PROCESSING", 4, 3, 1, 4)
    assert notes == [
        ("triggerDrain", "seqId=1"),
        ("resumeSubmission", "seqId=2;retId=0;pendCkpt=0"),
        ("triggerDrain", "seqId=2"),
        ("triggerReset", "seqId=1;resetAttempt=0"),
        ("resumeSubmission", "seqId=3;retId=0;pendCkpt=0"),
        ("triggerDrain", "seqId=3"),
        ("resumeSubmission", "seqId=4;retId=0;pendCkpt=1"),
        ("drained", "seqId=3"),
    ]
    assert out[5]["timers"] == [{"timer": "ResetTimeout", "delay": 45.5}]
    assert all(r["error"] is None for r in out)


def test_bad_lines_get_an_error_and_the_replay_goes_on(tmp_path: Path) -> None:
    events = [
        b"not json",
        b"[1, 2]",
        {"type": "teleport"},
        {"healthy": True},
        {"type": "checkpoint", "pe": "0", "seqId": 1},
        {"type": "checkpoint", "pe": -1, "seqId": 1},
        b'{"type": "checkpoint", "pe": 0, "seqId": 18446744073709551616}',
        {"type": "reset", "force": "yes"},
        {"type": "reset", "force": False, "extra": 1},
        {"type": "health", "healthy": True},
        {"type": "timer", "timer": "Soon"},
        {"type": "checkpoint", "pe": 0, "seqId": 1},
        {"type": "health", "healthy": True, "cleanStart": True},
        {"type": "timer", "timer": "DrainPeriod", "timerSeqId": 5},
        {"type": "drain", "operator": "src", "seqId": 1},
    ]
    out = records(run(tmp_path, REGION, events))
    assert len(out) == len(events)
    errors = [r["error"] for r in out]
    assert errors[0].startswith("not JSON")
    assert errors[1] == "Input should be a valid dictionary or object to extract fields from"
    assert "'teleport'" in errors[2]
    assert "discriminator 'type'" in errors[3]
    assert errors[4] == "pe: Input should be a valid integer"
    assert errors[5] == "pe: Input should be greater than or equal to 0"
    assert errors[6] == "seqId: Input should be a valid integer"
    assert errors[7] == "force: Input should be a valid boolean"
    assert errors[8] == "extra: Extra inputs are not permitted"
    assert errors[9] == "cleanStart: Field required"
    assert errors[10].startswith("timer: Input should be 'DrainPeriod', 'DrainTimeout' or 'ResetTimeout'")
    assert errors[11] == "notExpected: checkpoint is not expected in state STARTED"
    assert errors[12] is None
    assert errors[13] == "futureTimer: DrainPeriod timer 5 was never armed (current timer sequence id 0)"
    assert errors[14] == "notOperatorDriven: drain requests are only accepted by operator-driven regions"
    # Refused lines leave the region as it was.
    assert [r["state"] for r in out] == ["STARTED"] * 12 + ["PROCESSING"] * 3


def test_blank_lines_are_skipped_and_stdin_works(tmp_path: Path) -> None:
    data = b'\n{"type":"health","healthy":true,"cleanStart":false}\n\n   \n'
    out = records(run(tmp_path, REGION, [], stdin=data))
    assert len(out) == 1
    assert out[0]["notifications"] == [{"type": "triggerReset", "message": "seqId=0;resetAttempt=0"}]


def test_a_restarted_coordinator_resets_on_first_health(tmp_path: Path) -> None:
    region = {**REGION, "restarted": True}
    out = records(run(tmp_path, region, [{"type": "health", "healthy": True, "cleanStart": True}]))
    assert out[0]["state"] == "RESETTING"
    assert out[0]["notifications"] == [{"type": "triggerReset", "message": "seqId=0;resetAttempt=0"}]


def test_checkpoint_now_hold_and_a_clean_start_replay(tmp_path: Path) -> None:
    events = [
        {"type": "health", "healthy": True, "cleanStart": True},
        {"type": "holdDrains", "held": True},
        {"type": "timer", "timer": "DrainPeriod", "timerSeqId": 0},
        {"type": "checkpointNow"},
        {"type": "checkpoint", "pe": 0, "seqId": 1},
        {"type": "checkpoint", "pe": 1, "seqId": 1},
        {"type": "start", "mode": "clean"},
        {"type": "health", "healthy": False, "cleanStart": False},
        {"type": "health", "healthy": True, "cleanStart": False},
        {"type": "start", "mode": "sideways"},
    ]
    out = records(run(tmp_path, REGION, events))
    assert out[2]["notifications"] == []  # held: the period drains nothing
    assert out[3]["notifications"] == [{"type": "triggerDrain", "message": "seqId=1"}]
    assert out[5]["lastCompletedSeqID"] == 1
    assert out[5]["timers"] == []  # still held: no next period
    assert (out[8]["state"], out[8]["notifications"]) == ("PROCESSING", [])  # clean: no reset
    assert out[9]["error"] is not None
    assert "mode" in out[9]["error"]


@pytest.mark.parametrize(
    ("region", "message"),
    [
        (b"{", "not JSON"),
        (b"[]", "expected a JSON object"),
        ({**REGION, "restarted": "yes"}, "restarted: must be true or false"),
        ({**REGION, "trigger": "operator driven"}, "trigger: Input should be 'periodic' or 'operatorDriven'"),
        ({**REGION, "pesInRegion": []}, "pesInRegion must not be empty"),
        ({**REGION, "period": None}, "period must be a positive number of seconds"),
        ({**REGION, "colour": "blue"}, "colour: Extra inputs are not permitted"),
        (
            json.dumps({**REGION, "maxConsecutiveResetAttempts": 2**70}).encode(),
            "maxConsecutiveResetAttempts: ",
        ),
        ({**REGION, "regionIndex": 2**40}, "a number is out of range"),
        ({k: v for k, v in REGION.items() if k != "trigger"}, "trigger: Field required"),
    ],
)
def test_a_bad_region_file_exits_with_one_line(tmp_path: Path, region: Any, message: str) -> None:
    result = run(tmp_path, region, [{"type": "reset", "force": False}])
    assert result.exit_code != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_replay_can_start_from_a_persisted_status(tmp_path: Path) -> None:
    live = load_region(orjson.dumps(REGION))
    live.step(Health(True, True), 0)
    live.step(TimerFired(TimerKind.DRAIN_PERIOD, 0), 0)
    (tmp_path / "status.json").write_bytes(orjson.dumps(live.status().to_wire()))
    (tmp_path / "region.json").write_bytes(orjson.dumps(REGION))
    (tmp_path / "events.jsonl").write_bytes(b'{"type":"checkpoint","pe":0,"seqId":1}\n')
    args = ["cr-replay", "--region", str(tmp_path / "region.json"), "--status", str(tmp_path / "status.json")]
    out = records(CliRunner().invoke(main, [*args, str(tmp_path / "events.jsonl")]))
    assert out[0]["state"] == "DRAINING"
    assert out[0]["error"] is None
    (tmp_path / "status.json").write_bytes(b'{"state":"SLEEPING"}')
    result = CliRunner().invoke(main, [*args, str(tmp_path / "events.jsonl")])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith(f"Error: {tmp_path / 'status.json'}: state: Input should be")
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_files_exit_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["cr-replay", "--region", str(tmp_path / "none.json"), "x"])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: cannot read {tmp_path / 'none.json'}: No such file or directory"
    (tmp_path / "r.json").write_bytes(orjson.dumps(REGION))
    result = CliRunner().invoke(
        main, ["cr-replay", "--region", str(tmp_path / "r.json"), str(tmp_path / "e")]
    )
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1


def generated_log(seed: int, length: int) -> list[dict[str, Any]]:
    """A cooperative-runtime event log with faults mixed in (timeouts, PE loss, stale reports)."""
    rng = random.Random(seed)
    ref = reference_of_region()
    log: list[dict[str, Any]] = []
    for _ in range(length):
        slots = ref.slots
        waiting = [pe for pe, s in slots.items() if s == "None"] or [0]
        pe = rng.choice(waiting)
        roll = rng.random()
        if roll < 0.05:
            line: dict[str, Any] = {"type": "health", "healthy": False, "cleanStart": False}
        elif roll < 0.1:
            line = {"type": "checkpoint", "pe": pe, "seqId": max(ref.current - 1, 0)}
        elif roll < 0.13:
            line = {"type": "timer", "timer": rng.choice(["DrainTimeout", "ResetTimeout"])}
        elif ref.state in ("STARTED", "UNHEALTHY"):
            line = {"type": "health", "healthy": True, "cleanStart": rng.random() < 0.8}
        elif ref.state == "PROCESSING":
            line = {"type": "timer", "timer": "DrainPeriod"}
        elif ref.state == "DRAINING":
            kind = rng.choice(["checkpoint", "blockingCheckpoint"])
            line = {"type": kind, "pe": pe, "seqId": ref.current}
        elif ref.state == "CHECKPOINT_PENDING":
            line = {"type": "checkpoint", "pe": pe, "seqId": ref.pending}
            blocked = [p for p, s in slots.items() if s == "BlockingCheckpointDone"]
            line["pe"] = rng.choice(blocked) if blocked else pe
        elif ref.state == "RESETTING":
            line = {
                "type": "resetDone",
                "pe": pe,
                "seqId": ref.last_completed,
                "resetAttempt": ref.attempt - 1,
            }
        else:
            line = {"type": "reset", "force": True}
        log.append(line)
        ref.try_step(_reference_event(line, ref.timer_seq))
    return log


def _reference_event(line: dict[str, Any], timer_seq: int) -> tuple[Any, ...]:
    kind = line["type"]
    if kind == "health":
        return ("health", line["healthy"], line["cleanStart"])
    if kind == "timer":
        return ("timer", line["timer"], timer_seq)
    if kind == "reset":
        return ("reset", line["force"])
    if kind == "resetDone":
        return (kind, line["pe"], line["seqId"], line["resetAttempt"])
    return (kind, line["pe"], line["seqId"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_logs_replay_like_the_reference(tmp_path: Path, seed: int) -> None:
    log = generated_log(seed, 400)
    out = records(run(tmp_path, REGION, log))
    assert len(out) == len(log)
    ref = reference_of_region()
    states = set()
    for line, record in zip(log, out, strict=True):
        actions = ref.try_step(_reference_event(line, ref.timer_seq))
        if isinstance(actions, str):
            assert record["error"] is not None
            assert record["error"].startswith(actions + ":")
        else:
            assert record["error"] is None, (line, record)
            note = actions.notification
            assert record["notifications"] == ([{"type": note[0], "message": note[1]}] if note else [])
        assert (record["state"], record["currentSeqID"], record["lastCompletedSeqID"]) == (
            ref.state,
            ref.current,
            ref.last_completed,
        )
        states.add(record["state"])
    # The generated logs go through the whole machine.
    assert {"PROCESSING", "DRAINING", "CHECKPOINT_PENDING", "RESETTING", "UNHEALTHY"} <= states
