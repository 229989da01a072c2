"""The job controller's side of checkpoints: the upgrade mode a job gets, how far a checkpoint
request got from the regions' status, and which operators keep their state across a plan change."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.job import Fusion, JobSpec, UpgradeMode
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.plan import Plan, plan_application
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.controller.jobs.checkpoints import (
    CheckpointState,
    checkpoint_outcome,
    start_mode,
)
from streams_k8s.controller.jobs.upgrade_diff import state_kept, upgrade_mode

NOW = 1_763_700_000_000


def region(index: int, nonce: str | None = "n", **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "regionIndex": index,
        "trigger": "operatorDriven",
        "pesInRegion": [index],
        "operatorsToStartRegionMap": {"src": True},
    }
    if nonce is not None:
        spec["checkpointRequest"] = nonce
    obj: dict[str, Any] = {"metadata": {"name": f"j-cr{index}", "namespace": "default"}, "spec": spec}
    if status:
        obj["status"] = status
    return obj


def test_the_default_mode_keeps_state_only_where_there_is_some() -> None:
    spec = JobSpec.model_validate({"bundle": {"name": "a.sab", "file": {"path": "/a.sab"}}})
    assert upgrade_mode(spec, has_regions=True) is UpgradeMode.LAST_CHECKPOINT
    assert upgrade_mode(spec, has_regions=False) is UpgradeMode.STATELESS
    chosen = spec.model_copy(update={"upgrade_mode": UpgradeMode.CHECKPOINT_FIRST})
    assert upgrade_mode(chosen, has_regions=False) is UpgradeMode.CHECKPOINT_FIRST
    assert spec.checkpoint_timeout_seconds == 300
    wire = JobSpec.model_validate(
        {"bundle": {"name": "a.sab", "file": {"path": "/a.sab"}}, "upgradeMode": "checkpoint-first"}
    )
    assert wire.upgrade_mode is UpgradeMode.CHECKPOINT_FIRST
    assert [start_mode(m).value for m in UpgradeMode] == ["clean", "reset", "reset"]


def test_a_checkpoint_is_complete_when_every_region_answered_the_nonce() -> None:
    answered = {"nonce": "n", "requested": NOW, "seqID": 7, "completed": NOW + 80}
    outcome = checkpoint_outcome(
        [region(0, state="PROCESSING", checkpointRequest=answered), region(1, state="DRAINING")], "n"
    )
    assert not outcome.complete
    assert not outcome.failed
    assert outcome.regions[0].state is CheckpointState.COMPLETED
    assert outcome.regions[0].seq_id == 7
    assert outcome.regions[1].state is CheckpointState.PENDING
    assert outcome.summary() == "checkpoint n: j-cr1 pending (not taken on yet)"
    done = checkpoint_outcome([region(1, state="PROCESSING", checkpointRequest=answered)], "n")
    assert done.complete
    assert done.summary() == "checkpoint n completed: j-cr1@7"
    assert checkpoint_outcome([], "n").complete


def test_an_answer_to_another_nonce_or_an_unwritten_request_is_pending() -> None:
    old = {"nonce": "old", "requested": NOW, "seqID": 3, "completed": NOW}
    outcome = checkpoint_outcome([region(0, state="PROCESSING", checkpointRequest=old), region(1, None)], "n")
    assert [r.state for r in outcome.regions.values()] == [CheckpointState.PENDING] * 2
    assert outcome.regions[1].reason == "request not written yet"


def test_a_stuck_or_refused_region_fails_the_checkpoint_with_the_reason() -> None:
    taken = {"nonce": "n", "requested": NOW}
    refused = {
        "type": "Accepted",
        "status": "False",
        "reason": "InvalidRegion",
        "message": "period must be a positive number",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    outcome = checkpoint_outcome(
        [
            region(0, state="MAXIMUM_RESET_ATTEMPTS_REACHED", checkpointRequest=taken),
            region(1, conditions=[refused]),
            {"metadata": {"name": "j-cr9"}, "spec": {"regionIndex": "x"}},
        ],
        "n",
    )
    assert outcome.failed
    assert not outcome.complete
    reasons = {r.name: r.reason for r in outcome.regions.values()}
    assert "maximum of reset attempts" in reasons["j-cr0"]
    assert reasons["j-cr1"] == "period must be a positive number"
    assert "malformed" in reasons["j-cr9"]


def test_a_checkpoint_is_overdue_only_past_the_timeout_from_when_it_was_taken_on() -> None:
    outcome = checkpoint_outcome(
        [region(0, state="DRAINING", checkpointRequest={"nonce": "n", "requested": NOW})], "n"
    )
    assert not outcome.overdue(NOW + 299_000, timeout_seconds=300)
    assert outcome.overdue(NOW + 301_000, timeout_seconds=300)
    untaken = checkpoint_outcome([region(0, None)], "n")  # no coordinator took it on yet
    assert not untaken.overdue(NOW + 10**9, 300)
    assert not untaken.overdue(NOW + 299_000, 300, since_ms=NOW)  # counted from when it was made
    assert untaken.overdue(NOW + 301_000, 300, since_ms=NOW)


def plan(spec: SyntheticSpec) -> Plan:
    return plan_application(parse_adl(synthetic_adl(spec)), Fusion(manual=2), job_name="j")


def test_operators_keep_their_state_when_name_and_region_stay() -> None:
    old = plan(SyntheticSpec(chains=2, length=2, consistent_chains=2))
    longer = plan(SyntheticSpec(chains=2, length=3, consistent_chains=1))
    before = {op: r.region_index for r in old.consistent_regions for op in r.operators_to_start_region_map}
    after = {op: r.region_index for r in longer.consistent_regions for op in r.operators_to_start_region_map}
    kept = state_kept(old, longer)
    assert kept.kept == {0: tuple(sorted(op for op in after if before.get(op) == 0))}
    assert set(kept.lost) == {op for op, index in before.items() if index == 1}
    assert set(kept.new) == set(after) - set(before)
    assert kept.new  # the third operator of chain 0
    same = state_kept(old, old)
    assert (same.lost, same.new) == ((), ())
    assert sum(len(ops) for ops in same.kept.values()) == len(before)
