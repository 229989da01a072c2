//! One test per row of the transition table, plus the spec's sequence-id example.

use super::*;

const T0: i64 = 1_700_000_000_000;

fn config(trigger: Trigger, pes: &[u64], max: u64) -> Config {
    Config {
        region_index: 0,
        trigger,
        period: 2.0,
        drain_timeout: 30.0,
        reset_timeout: 45.5,
        max_consecutive_reset_attempts: max,
        pes: pes.to_vec(),
        start_operators: [("src".to_owned(), true), ("mid".to_owned(), false)].into(),
        trigger_operators: [("src".to_owned(), true), ("mid".to_owned(), false)].into(),
    }
}

fn periodic() -> Region {
    Region::new(config(Trigger::Periodic, &[1, 0], 3)).unwrap()
}

fn operator_driven() -> Region {
    Region::new(config(Trigger::OperatorDriven, &[0, 1], 3)).unwrap()
}

const HEALTHY: Event = Event::Health {
    healthy: true,
    clean_start: true,
};
const UNHEALTHY: Event = Event::Health {
    healthy: false,
    clean_start: true,
};

fn ckpt(pe: u64, seq_id: u64) -> Event {
    Event::CheckpointDone { pe, seq_id }
}

fn blocking(pe: u64, seq_id: u64) -> Event {
    Event::BlockingCheckpointDone { pe, seq_id }
}

fn reset_done(pe: u64, seq_id: u64, reset_attempt: u64) -> Event {
    Event::ResetDone {
        pe,
        seq_id,
        reset_attempt,
    }
}

fn drain(operator: &str, seq_id: u64) -> Event {
    Event::Drain {
        operator: operator.to_owned(),
        seq_id,
    }
}

/// The event of the region's currently armed timer of that kind.
fn timer(r: &Region, timer: TimerKind) -> Event {
    Event::Timer {
        timer,
        timer_seq_id: r.dynamic().current_timer_seq_id,
    }
}

/// Fires the region's currently armed timer of that kind.
fn fire(r: &mut Region, kind: TimerKind) -> Outcome {
    let t = timer(r, kind);
    ok(r, t)
}

fn ok(r: &mut Region, e: Event) -> Outcome {
    r.apply(&e, T0)
        .unwrap_or_else(|err| panic!("{e:?} refused: {err}"))
}

/// Asserts the refusal and that the region did not change.
fn refused(r: &mut Region, e: Event) -> Rejection {
    let before = r.clone();
    let err = r.apply(&e, T0).expect_err("should be refused");
    assert_eq!(*r, before, "a refused {e:?} changed the region");
    err
}

fn message(out: &Outcome) -> (&'static str, String) {
    let n = out.notification.expect("a notification");
    (n.kind(), n.message())
}

fn state(r: &Region) -> State {
    r.dynamic().state
}

fn processing() -> Region {
    let mut r = periodic();
    ok(&mut r, HEALTHY);
    r
}

fn draining() -> Region {
    let mut r = processing();
    let t = timer(&r, TimerKind::DrainPeriod);
    ok(&mut r, t);
    r
}

fn checkpoint_pending() -> Region {
    let mut r = draining();
    ok(&mut r, blocking(0, 1));
    ok(&mut r, blocking(1, 1));
    assert_eq!(state(&r), State::CheckpointPending);
    r
}

fn resetting() -> Region {
    let mut r = processing();
    ok(&mut r, Event::Reset { force: false });
    assert_eq!(state(&r), State::Resetting);
    r
}

fn unhealthy() -> Region {
    let mut r = processing();
    ok(&mut r, UNHEALTHY);
    r
}

fn max_reached() -> Region {
    let mut r = Region::new(config(Trigger::Periodic, &[0, 1], 1)).unwrap();
    ok(&mut r, HEALTHY);
    ok(&mut r, Event::Reset { force: false });
    let out = ok(&mut r, Event::Reset { force: false });
    assert_eq!(message(&out), ("resetFailed", "seqId=0".into()));
    assert_eq!(state(&r), State::MaximumResetAttemptsReached);
    r
}

/// A region restored into `state` with the given health flag (for rows the normal flow
/// cannot reach, such as a healthy region still in STARTED).
fn restored(state: State, region_healthy: bool) -> Region {
    let c = config(Trigger::Periodic, &[0, 1], 3);
    let mut d = Dynamic::initial(&c);
    d.state = state;
    d.region_healthy = region_healthy;
    d.healthy_first_time = true;
    if state == State::Resetting {
        d.current_reset_attempt = 1;
    }
    Region::restore(c, d, &[]).unwrap()
}

// ---- health ----

#[test]
fn started_healthy_clean_start_processes_and_arms_the_drain_period() {
    let mut r = periodic();
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Processing);
    assert!(out.persist && out.notification.is_none());
    assert_eq!(
        out.arm,
        Some(Arm {
            timer: TimerKind::DrainPeriod,
            delay_ms: 2000,
            timer_seq_id: 0
        })
    );
    assert!(r.dynamic().healthy_first_time && r.dynamic().region_healthy);
}

#[test]
fn started_healthy_operator_driven_arms_nothing() {
    let mut r = operator_driven();
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Processing);
    assert_eq!(out.arm, None);
}

#[test]
fn started_healthy_after_a_pe_restart_resets() {
    let mut r = periodic();
    let out = ok(
        &mut r,
        Event::Health {
            healthy: true,
            clean_start: false,
        },
    );
    assert_eq!(state(&r), State::Resetting);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=0;resetAttempt=0".into())
    );
    assert!(!r.dynamic().must_reset);
    assert_eq!(out.arm.unwrap().timer, TimerKind::ResetTimeout);
    assert_eq!(out.arm.unwrap().delay_ms, 45_500);
}

#[test]
fn started_healthy_after_a_coordinator_restart_resets() {
    let mut r = draining();
    let out = ok(&mut r, Event::Restarted);
    assert!(out.persist && out.cancel_timers);
    assert_eq!(state(&r), State::Started);
    assert!(!r.dynamic().region_healthy);
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=0;resetAttempt=0".into())
    );
}

#[test]
fn started_unhealthy_clears_the_board_and_stays() {
    let mut r = restored(State::Started, true);
    let out = ok(&mut r, UNHEALTHY);
    assert_eq!(state(&r), State::Started);
    assert!(out.clear_board && !out.cancel_timers && out.persist);
}

#[test]
fn unhealthy_in_an_active_state_cancels_timers_and_clears_the_board() {
    for mut r in [processing(), draining(), checkpoint_pending(), resetting()] {
        let timer_seq = r.dynamic().current_timer_seq_id;
        let out = ok(&mut r, UNHEALTHY);
        assert_eq!(state(&r), State::Unhealthy);
        assert!(out.clear_board && out.cancel_timers && out.notification.is_none());
        assert_eq!(r.dynamic().current_timer_seq_id, timer_seq + 1);
    }
}

#[test]
fn healthy_in_an_active_state_only_records_the_flag() {
    for s in [
        State::Processing,
        State::Draining,
        State::CheckpointPending,
        State::Resetting,
        State::MaximumResetAttemptsReached,
    ] {
        let mut r = restored(s, false);
        let out = ok(&mut r, HEALTHY);
        assert_eq!(state(&r), s);
        assert!(r.dynamic().region_healthy && out.persist);
        assert!(out.notification.is_none() && out.arm.is_none() && !out.cancel_timers);
    }
}

#[test]
fn unhealthy_healthy_again_resets() {
    let mut r = unhealthy();
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=0;resetAttempt=0".into())
    );
}

#[test]
fn unhealthy_or_max_reached_unhealthy_clears_the_board_only() {
    for s in [State::Unhealthy, State::MaximumResetAttemptsReached] {
        let mut r = restored(s, true);
        let out = ok(&mut r, UNHEALTHY);
        assert_eq!(state(&r), s);
        assert!(out.clear_board && !out.cancel_timers);
    }
}

#[test]
fn unchanged_health_is_a_no_op_without_a_write() {
    let mut r = processing();
    let before = r.clone();
    let out = ok(&mut r, HEALTHY);
    assert_eq!(out, Outcome::default());
    assert_eq!(r, before);
}

// ---- checkpoints ----

#[test]
fn checkpoint_from_an_unknown_pe_is_refused() {
    let mut r = draining();
    assert_eq!(refused(&mut r, ckpt(7, 1)), Rejection::UnknownPe { pe: 7 });
    assert_eq!(
        refused(&mut r, blocking(7, 1)),
        Rejection::UnknownPe { pe: 7 }
    );
}

#[test]
fn checkpoint_with_a_wrong_sequence_id_is_refused() {
    let mut r = draining();
    let err = refused(&mut r, ckpt(0, 0));
    assert_eq!(
        err,
        Rejection::SeqIdMismatch {
            expected: 1,
            got: 0
        }
    );
    assert_eq!(err.to_string(), "stale sequence id 0 (expected 1)");
    assert_eq!(
        refused(&mut r, blocking(0, 2)).to_string(),
        "future sequence id 2 (expected 1)"
    );
    let mut r = checkpoint_pending();
    // CHECKPOINT_PENDING expects the pending id (1), not the current one (2).
    assert_eq!(
        refused(&mut r, ckpt(0, 2)),
        Rejection::SeqIdMismatch {
            expected: 1,
            got: 2
        }
    );
}

#[test]
fn checkpoint_outside_a_drain_is_refused() {
    for mut r in [
        periodic(),
        processing(),
        resetting(),
        unhealthy(),
        max_reached(),
    ] {
        let err = refused(&mut r, ckpt(0, 1));
        assert_eq!(err.kind(), "notExpected");
        assert_eq!(refused(&mut r, blocking(0, 1)).kind(), "notExpected");
    }
}

#[test]
fn duplicate_checkpoint_is_refused() {
    let mut r = draining();
    ok(&mut r, ckpt(0, 1));
    assert_eq!(
        refused(&mut r, ckpt(0, 1)),
        Rejection::DuplicateCompletion {
            pe: 0,
            already: Completion::CheckpointDone
        }
    );
    // A blocking report after the full one would undo progress.
    assert_eq!(
        refused(&mut r, blocking(0, 1)).kind(),
        "duplicateCompletion"
    );
    let mut r = draining();
    ok(&mut r, blocking(1, 1));
    assert_eq!(
        refused(&mut r, blocking(1, 1)).kind(),
        "duplicateCompletion"
    );
}

#[test]
fn all_checkpoints_done_while_draining_resumes() {
    let mut r = draining();
    let out = ok(&mut r, ckpt(1, 1));
    assert_eq!(state(&r), State::Draining);
    assert!(out.persist && out.notification.is_none());
    let out = ok(&mut r, ckpt(0, 1));
    assert_eq!(state(&r), State::Processing);
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=2;retId=0;pendCkpt=0".into())
    );
    assert!(out.cancel_timers);
    assert_eq!(out.arm.unwrap().timer, TimerKind::DrainPeriod);
    assert!(r.completion().all(|(_, c)| c == Completion::None));
}

#[test]
fn mixed_full_and_blocking_checkpoints_finish_the_blocking_part() {
    let mut r = draining();
    ok(&mut r, blocking(0, 1));
    let out = ok(&mut r, ckpt(1, 1));
    assert_eq!(state(&r), State::CheckpointPending);
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=2;retId=0;pendCkpt=1".into())
    );
    // The drain timeout keeps running.
    assert!(!out.cancel_timers && out.arm.is_none());
    let out = ok(&mut r, ckpt(0, 1));
    assert_eq!(message(&out), ("drained", "seqId=1".into()));
    assert_eq!(state(&r), State::Processing);
    assert_eq!(r.dynamic().last_completed_seq_id, 1);
}

#[test]
fn all_blocking_checkpoints_finish_the_blocking_part() {
    let mut r = draining();
    let out = ok(&mut r, blocking(0, 1));
    assert!(out.notification.is_none());
    let out = ok(&mut r, blocking(1, 1));
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=2;retId=0;pendCkpt=1".into())
    );
    let d = r.dynamic();
    assert_eq!((d.pending_seq_id, d.current_seq_id), (1, 2));
}

#[test]
fn checkpoint_pending_blocking_report_is_a_duplicate() {
    let mut r = checkpoint_pending();
    assert_eq!(
        refused(&mut r, blocking(0, 1)).kind(),
        "duplicateCompletion"
    );
}

// ---- resets ----

#[test]
fn reset_done_checks_pe_state_sequence_and_attempt() {
    let mut r = resetting();
    assert_eq!(
        refused(&mut r, reset_done(9, 0, 0)),
        Rejection::UnknownPe { pe: 9 }
    );
    assert_eq!(
        refused(&mut r, reset_done(0, 1, 0)),
        Rejection::SeqIdMismatch {
            expected: 0,
            got: 1
        }
    );
    assert_eq!(
        refused(&mut r, reset_done(0, 0, 1)),
        Rejection::ResetAttemptMismatch {
            expected: 0,
            got: 1
        }
    );
    ok(&mut r, reset_done(0, 0, 0));
    assert_eq!(
        refused(&mut r, reset_done(0, 0, 0)).kind(),
        "duplicateCompletion"
    );
    let mut p = processing();
    assert_eq!(refused(&mut p, reset_done(0, 0, 0)).kind(), "notExpected");
}

#[test]
fn all_resets_done_resumes() {
    let mut r = resetting();
    let out = ok(&mut r, reset_done(0, 0, 0));
    assert!(out.notification.is_none());
    let out = ok(&mut r, reset_done(1, 0, 0));
    assert_eq!(state(&r), State::Processing);
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=2;retId=0;pendCkpt=0".into())
    );
    // Only a completed checkpoint clears the consecutive-attempt count.
    assert_eq!(r.dynamic().current_reset_attempt, 1);
    assert_eq!(r.dynamic().last_completed_reset_seq_id, 0);
}

// ---- drain requests (operator-driven) ----

#[test]
fn drain_on_a_periodic_region_is_refused() {
    let mut r = processing();
    assert_eq!(
        refused(&mut r, drain("src", 1)),
        Rejection::NotOperatorDriven
    );
}

#[test]
fn drain_from_an_unknown_or_non_trigger_operator_is_refused() {
    let mut r = operator_driven();
    ok(&mut r, HEALTHY);
    assert_eq!(refused(&mut r, drain("nope", 1)).kind(), "unknownOperator");
    assert_eq!(
        refused(&mut r, drain("mid", 1)).kind(),
        "notATriggerOperator"
    );
}

#[test]
fn drain_before_the_region_started_forces_a_reset_later() {
    let mut r = operator_driven();
    let out = ok(&mut r, drain("src", 1));
    assert!(out.persist && r.dynamic().must_reset);
    assert_eq!(state(&r), State::Started);
    ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
}

#[test]
fn drain_while_processing_drains_without_notifying() {
    let mut r = operator_driven();
    ok(&mut r, HEALTHY);
    assert_eq!(
        refused(&mut r, drain("src", 2)),
        Rejection::SeqIdMismatch {
            expected: 1,
            got: 2
        }
    );
    let out = ok(&mut r, drain("src", 1));
    assert_eq!(state(&r), State::Draining);
    assert!(out.notification.is_none());
    assert_eq!(out.arm.unwrap().timer, TimerKind::DrainTimeout);
    assert_eq!(out.arm.unwrap().delay_ms, 30_000);
    assert_eq!(refused(&mut r, drain("src", 1)).kind(), "notExpected");
}

// ---- reset requests ----

#[test]
fn reset_request_resets_active_states() {
    for mut r in [processing(), draining(), checkpoint_pending(), resetting()] {
        let attempt = r.dynamic().current_reset_attempt;
        let out = ok(&mut r, Event::Reset { force: false });
        assert_eq!(state(&r), State::Resetting);
        assert_eq!(message(&out).0, "triggerReset");
        assert_eq!(r.dynamic().current_reset_attempt, attempt + 1);
        assert!(r.completion().all(|(_, c)| c == Completion::None));
    }
}

#[test]
fn reset_request_in_started_resets_once_healthy() {
    let mut r = periodic();
    ok(&mut r, Event::Reset { force: false });
    assert!(r.dynamic().must_reset);
    assert_eq!(state(&r), State::Started);
}

#[test]
fn reset_request_while_unhealthy_waits_for_health() {
    let mut r = unhealthy();
    let out = ok(&mut r, Event::Reset { force: false });
    assert_eq!(out, Outcome::default());
    assert_eq!(state(&r), State::Unhealthy);
}

#[test]
fn forced_reset_while_unhealthy_raises_the_limit_and_waits_for_health() {
    let mut r = max_reached();
    ok(&mut r, UNHEALTHY);
    ok(&mut r, Event::Reset { force: true });
    assert_eq!(state(&r), State::Unhealthy);
    // The limit is recomputed from the current attempt, it does not accumulate: asking
    // again changes nothing, so there is nothing to write.
    let out = ok(&mut r, Event::Reset { force: true });
    assert_eq!(out, Outcome::default());
    assert_eq!(r.dynamic().current_max_reset_attempts, 2);
    let out = ok(&mut r, HEALTHY);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=0;resetAttempt=1".into())
    );
}

#[test]
fn max_attempts_reached_then_only_a_forced_reset_recovers() {
    let mut r = max_reached();
    assert_eq!(
        refused(&mut r, Event::Reset { force: false }),
        Rejection::ForceRequired
    );
    let out = ok(&mut r, Event::Reset { force: true });
    assert_eq!(state(&r), State::Resetting);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=0;resetAttempt=1".into())
    );
    assert_eq!(r.dynamic().current_max_reset_attempts, 2);
}

#[test]
fn forced_reset_of_an_unhealthy_max_reached_region_waits_for_health() {
    let mut r = max_reached();
    ok(&mut r, UNHEALTHY);
    assert_eq!(state(&r), State::MaximumResetAttemptsReached);
    ok(&mut r, Event::Reset { force: true });
    assert_eq!(state(&r), State::Unhealthy);
    ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
}

#[test]
fn reset_attempts_are_bounded_by_the_maximum() {
    let mut r = processing();
    let mut notes = vec![];
    for _ in 0..5 {
        notes.push(message(&ok(&mut r, Event::Reset { force: false })));
        if state(&r) == State::MaximumResetAttemptsReached {
            break;
        }
    }
    assert_eq!(
        notes,
        vec![
            ("triggerReset", "seqId=0;resetAttempt=0".into()),
            ("triggerReset", "seqId=0;resetAttempt=1".into()),
            ("triggerReset", "seqId=0;resetAttempt=2".into()),
            ("resetFailed", "seqId=0".into()),
        ]
    );
}

#[test]
fn max_reached_healthy_is_recorded_without_reset() {
    let mut r = max_reached();
    ok(&mut r, UNHEALTHY);
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::MaximumResetAttemptsReached);
    assert!(out.notification.is_none());
}

// ---- timers ----

#[test]
fn stale_and_future_timers_are_refused() {
    let mut r = draining();
    ok(&mut r, Event::Reset { force: false });
    let current = r.dynamic().current_timer_seq_id;
    let err = refused(
        &mut r,
        Event::Timer {
            timer: TimerKind::ResetTimeout,
            timer_seq_id: current - 1,
        },
    );
    assert_eq!(err.kind(), "staleTimer");
    let err = refused(
        &mut r,
        Event::Timer {
            timer: TimerKind::ResetTimeout,
            timer_seq_id: current + 1,
        },
    );
    assert_eq!(err.kind(), "futureTimer");
}

#[test]
fn drain_period_while_processing_triggers_a_drain() {
    let mut r = processing();
    let t = timer(&r, TimerKind::DrainPeriod);
    let out = ok(&mut r, t);
    assert_eq!(state(&r), State::Draining);
    assert_eq!(message(&out), ("triggerDrain", "seqId=1".into()));
    assert_eq!(out.arm.unwrap().timer, TimerKind::DrainTimeout);
    assert!(!out.cancel_timers);
}

#[test]
fn drain_period_in_another_state_is_refused() {
    for mut r in [draining(), resetting(), checkpoint_pending()] {
        let t = timer(&r, TimerKind::DrainPeriod);
        assert_eq!(refused(&mut r, t).kind(), "notExpected");
    }
}

#[test]
fn drain_timeout_resets_a_draining_or_pending_region() {
    for mut r in [draining(), checkpoint_pending()] {
        let t = timer(&r, TimerKind::DrainTimeout);
        let out = ok(&mut r, t);
        assert_eq!(state(&r), State::Resetting);
        assert_eq!(message(&out).0, "triggerReset");
    }
}

#[test]
fn reset_timeout_counts_the_next_attempt() {
    let mut r = resetting();
    let t = timer(&r, TimerKind::ResetTimeout);
    let out = ok(&mut r, t);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=0;resetAttempt=1".into())
    );
}

#[test]
fn timeouts_in_unhealthy_are_not_expected() {
    let mut r = unhealthy();
    for kind in [TimerKind::DrainTimeout, TimerKind::ResetTimeout] {
        let t = timer(&r, kind);
        assert_eq!(refused(&mut r, t).kind(), "notExpected");
    }
}

// ---- the spec's sequence-id example ----

#[test]
fn sequence_id_lifecycle_example() {
    let mut r = periodic();
    let row = |r: &Region| {
        let d = r.dynamic();
        (
            d.state,
            d.current_seq_id,
            d.last_completed_seq_id,
            d.to_retire_seq_id,
            d.pending_seq_id,
        )
    };
    assert_eq!(row(&r), (State::Started, 1, 0, 0, 0));
    let out = ok(&mut r, HEALTHY);
    assert!(out.notification.is_none());
    assert_eq!(row(&r), (State::Processing, 1, 0, 0, 0));
    let out = fire(&mut r, TimerKind::DrainPeriod);
    assert_eq!(message(&out), ("triggerDrain", "seqId=1".into()));
    assert_eq!(row(&r), (State::Draining, 1, 0, 0, 0));
    ok(&mut r, ckpt(0, 1));
    let out = ok(&mut r, ckpt(1, 1));
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=2;retId=0;pendCkpt=0".into())
    );
    assert_eq!(row(&r), (State::Processing, 2, 1, 0, 2));
    let out = fire(&mut r, TimerKind::DrainPeriod);
    assert_eq!(message(&out), ("triggerDrain", "seqId=2".into()));
    assert_eq!(row(&r), (State::Draining, 2, 1, 0, 2));
    let out = fire(&mut r, TimerKind::DrainTimeout);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=1;resetAttempt=0".into())
    );
    assert_eq!(row(&r), (State::Resetting, 2, 1, 0, 2));
    assert_eq!(r.dynamic().current_reset_attempt, 1);
    ok(&mut r, reset_done(0, 1, 0));
    let out = ok(&mut r, reset_done(1, 1, 0));
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=3;retId=0;pendCkpt=0".into())
    );
    assert_eq!(row(&r), (State::Processing, 3, 1, 0, 2));
    // Non-blocking checkpoint of seq 3.
    fire(&mut r, TimerKind::DrainPeriod);
    ok(&mut r, blocking(0, 3));
    let out = ok(&mut r, blocking(1, 3));
    assert_eq!(
        message(&out),
        ("resumeSubmission", "seqId=4;retId=0;pendCkpt=1".into())
    );
    assert_eq!(row(&r), (State::CheckpointPending, 4, 1, 0, 3));
    ok(&mut r, ckpt(0, 3));
    let out = ok(&mut r, ckpt(1, 3));
    assert_eq!(message(&out), ("drained", "seqId=3".into()));
    assert_eq!(row(&r), (State::Processing, 4, 3, 1, 4));
    assert_eq!(r.dynamic().current_reset_attempt, 0);
}

// ---- metrics, persistence, construction ----

#[test]
fn gauges_follow_the_region() {
    let mut r = periodic();
    let g = r.gauges();
    assert_eq!(g.values(), [0.0, 0.0, 0.0, 0.0, -1.0, -1.0, 0.0, 0.0]);
    ok(&mut r, HEALTHY);
    fire(&mut r, TimerKind::DrainPeriod);
    ok(&mut r, ckpt(0, 1));
    let out = r.apply(&ckpt(1, 1), T0 + 250).unwrap();
    let g = out.gauges.unwrap();
    assert_eq!(g.average_drain_time_ms, 250.0);
    assert_eq!(g.last_consistent_state_time_ms, T0 + 250);
    assert_eq!(g.last_completed_drain_seq_id, 1);
    assert_eq!(g.state, State::Processing);
    assert_eq!(GAUGE_NAMES.len(), g.values().len());
}

#[test]
fn pure_step_leaves_the_input_alone() {
    let r = processing();
    let (next, out) = step(&r, &Event::Reset { force: false }, T0).unwrap();
    assert_eq!(state(&r), State::Processing);
    assert_eq!(state(&next), State::Resetting);
    assert!(out.persist);
    assert!(step(&r, &ckpt(0, 1), T0).is_err());
}

#[test]
fn invalid_regions_are_refused() {
    let mut c = config(Trigger::Periodic, &[], 1);
    assert_eq!(Region::new(c.clone()).unwrap_err().field, "pes_in_region");
    c.pes = vec![3, 3, 1];
    let r = Region::new(c.clone()).unwrap();
    assert_eq!(r.config().pes, vec![1, 3]);
    c.period = 0.0;
    assert!(Region::new(c.clone()).is_err());
    c.trigger = Trigger::OperatorDriven;
    assert!(Region::new(c.clone()).is_ok());
    c.max_consecutive_reset_attempts = 0;
    assert!(Region::new(c.clone()).is_err());
    c.max_consecutive_reset_attempts = u64::MAX;
    assert!(Region::new(c.clone()).is_err());
    c.max_consecutive_reset_attempts = 1;
    let d = Dynamic::initial(&c);
    let err = Region::restore(c.clone(), d, &[(2, Completion::CheckpointDone)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "completion names PE 2, not one of the region's PEs"
    );
    let mut huge = d;
    huge.current_seq_id = MAX_COUNTER;
    let err = Region::restore(c.clone(), huge, &[]).unwrap_err();
    assert_eq!(
        err,
        InvalidRegion::new("current_seq_id", format!("must be below {MAX_COUNTER}"))
    );
    let r = Region::restore(c, d, &[(3, Completion::BlockingCheckpointDone)]).unwrap();
    assert_eq!(
        r.completion().collect::<Vec<_>>(),
        vec![
            (1, Completion::None),
            (3, Completion::BlockingCheckpointDone)
        ]
    );
}

// ---- requests: checkpoint now, hold, start ----

#[test]
fn checkpoint_now_in_processing_drains_at_once_with_the_next_seq_id() {
    let mut r = processing();
    let before = r.dynamic().current_timer_seq_id;
    let out = ok(&mut r, Event::CheckpointNow);
    assert_eq!(state(&r), State::Draining);
    assert_eq!(message(&out), ("triggerDrain", "seqId=1".into()));
    assert!(out.cancel_timers);
    assert_eq!(out.arm.unwrap().timer, TimerKind::DrainTimeout);
    assert!(r.dynamic().current_timer_seq_id > before);
    assert!(r.dynamic().checkpoint_requested);
    ok(&mut r, ckpt(0, 1));
    ok(&mut r, ckpt(1, 1));
    assert_eq!(state(&r), State::Processing);
    assert_eq!(r.dynamic().last_completed_seq_id, 1);
    assert!(!r.dynamic().checkpoint_requested);
}

#[test]
fn checkpoint_now_while_resetting_drains_once_the_reset_is_done() {
    let mut r = resetting();
    let out = ok(&mut r, Event::CheckpointNow);
    assert_eq!(state(&r), State::Resetting);
    assert!(out.notification.is_none());
    let seq = r.dynamic().last_completed_seq_id;
    let attempt = r.dynamic().current_reset_attempt - 1;
    ok(&mut r, reset_done(0, seq, attempt));
    let out = ok(&mut r, reset_done(1, seq, attempt));
    assert_eq!(state(&r), State::Draining);
    let current = r.dynamic().current_seq_id;
    assert_eq!(message(&out), ("triggerDrain", format!("seqId={current}")));
}

#[test]
fn a_failed_requested_drain_is_retried_after_the_reset() {
    let mut r = processing();
    ok(&mut r, Event::CheckpointNow);
    let timer = r.dynamic().current_timer_seq_id;
    ok(
        &mut r,
        Event::Timer {
            timer: TimerKind::DrainTimeout,
            timer_seq_id: timer,
        },
    );
    assert_eq!(state(&r), State::Resetting);
    assert!(r.dynamic().checkpoint_requested);
}

#[test]
fn held_drains_ignore_the_period_until_released() {
    let mut r = processing();
    let out = ok(&mut r, Event::HoldDrains { held: true });
    assert!(out.persist && out.arm.is_none());
    let timer = r.dynamic().current_timer_seq_id;
    let period = Event::Timer {
        timer: TimerKind::DrainPeriod,
        timer_seq_id: timer,
    };
    let out = ok(&mut r, period.clone());
    assert_eq!(state(&r), State::Processing);
    assert!(out.notification.is_none() && out.arm.is_none());
    // An asked-for checkpoint still drains, and the period is not re-armed after it.
    ok(&mut r, Event::CheckpointNow);
    ok(&mut r, ckpt(0, 1));
    let out = ok(&mut r, ckpt(1, 1));
    assert_eq!(state(&r), State::Processing);
    assert!(out.arm.is_none());
    let out = ok(&mut r, Event::HoldDrains { held: false });
    assert_eq!(out.arm.unwrap().timer, TimerKind::DrainPeriod);
    // Holding again with the same value changes nothing.
    let out = ok(&mut r, Event::HoldDrains { held: false });
    assert!(!out.persist);
}

#[test]
fn start_resets_to_the_last_checkpoint_once_the_replaced_pes_are_healthy() {
    let mut r = processing();
    ok(&mut r, Event::CheckpointNow);
    ok(&mut r, ckpt(0, 1));
    ok(&mut r, ckpt(1, 1));
    let out = ok(&mut r, Event::Start { clean: false });
    assert_eq!(state(&r), State::Processing);
    assert!(!out.cancel_timers && out.notification.is_none());
    ok(&mut r, UNHEALTHY);
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
    assert_eq!(
        message(&out),
        ("triggerReset", "seqId=1;resetAttempt=0".into())
    );
}

#[test]
fn a_clean_start_processes_without_a_reset_once_the_replaced_pes_are_healthy() {
    let mut r = processing();
    ok(&mut r, Event::Start { clean: true });
    assert_eq!(state(&r), State::Processing);
    ok(&mut r, UNHEALTHY);
    let restarted_pes = Event::Health {
        healthy: true,
        clean_start: false,
    };
    let out = ok(&mut r, restarted_pes);
    assert_eq!(state(&r), State::Processing);
    assert!(out.notification.is_none());
    assert!(r.dynamic().clean_start && !r.dynamic().start_clean);
    assert_eq!(out.arm.unwrap().timer, TimerKind::DrainPeriod);
    // The request is used up: the next failure resets as usual.
    ok(&mut r, UNHEALTHY);
    ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
}

#[test]
fn a_clean_start_in_started_ignores_the_launch_counts() {
    let mut r = restored(State::Started, false);
    ok(&mut r, Event::Start { clean: true });
    let out = ok(
        &mut r,
        Event::Health {
            healthy: true,
            clean_start: false,
        },
    );
    assert_eq!(state(&r), State::Processing);
    assert!(out.notification.is_none());
}

#[test]
fn start_gives_a_stuck_region_a_fresh_allowance() {
    let mut r = max_reached();
    ok(&mut r, Event::Start { clean: false });
    assert_eq!(state(&r), State::Unhealthy);
    let out = ok(&mut r, HEALTHY);
    assert_eq!(state(&r), State::Resetting);
    assert_eq!(message(&out).0, "triggerReset");
}
