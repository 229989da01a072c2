//! Consistent-region state machine, sans-IO.
//!
//! [`step`] takes a region, one event and the current time (epoch ms) and returns the next
//! region plus the actions the caller performs ([`Outcome`]). Input that does not fit the
//! region (unknown PE, stale or future sequence id, duplicate completion, ...) is refused
//! with a [`Rejection`] and the region is left unchanged: bad input never stops the FSM.
//!
//! Behaviour follows the original coordinator's transition table, except where it was
//! defective: nothing is written when nothing changed, refusals are values not crashes,
//! a report that would downgrade or repeat a PE's completion is refused, and timers are
//! only honoured in the state that armed them.

mod requests;
mod types;
mod window;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

pub use types::{
    Arm, Completion, Event, Gauges, InvalidRegion, Notification, Outcome, Rejection, State,
    TimerKind, Trigger,
};
pub use window::{Window, WINDOW};

/// Upper bound of persisted counters (they are exported as i64 gauges). A region would need
/// 2^63 checkpoints to reach it, so only corrupt input does.
pub const MAX_COUNTER: u64 = i64::MAX as u64;

/// Prometheus names of the eight gauges, in the order of [`Gauges::values`].
pub const GAUGE_NAMES: [&str; 8] = [
    "average_drain_time_milliseconds",
    "average_reset_time_milliseconds",
    "last_consistent_state_time_milliseconds",
    "last_reset_time_milliseconds",
    "last_completed_drain_seq_id",
    "last_completed_reset_seq_id",
    "state",
    "n_current_reset_attempts",
];

/// The static description of a region (ConsistentRegion `.spec`).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub region_index: u32,
    pub trigger: Trigger,
    /// Seconds between drains (periodic regions).
    pub period: f64,
    pub drain_timeout: f64,
    pub reset_timeout: f64,
    pub max_consecutive_reset_attempts: u64,
    /// PE ids, sorted and distinct.
    pub pes: Vec<u64>,
    /// Every operator of the region -> is it a start operator.
    pub start_operators: HashMap<String, bool>,
    /// Operator -> is it a trigger operator.
    pub trigger_operators: HashMap<String, bool>,
}

impl Config {
    /// Checks and normalises a description (PE ids sorted and deduplicated).
    pub fn new(mut config: Config) -> Result<Config, InvalidRegion> {
        let positive = |field: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(InvalidRegion::new(
                    field,
                    format!("must be a positive number of seconds, got {v}"),
                ))
            }
        };
        if config.trigger == Trigger::Periodic {
            positive("period", config.period)?;
        }
        positive("drain_timeout", config.drain_timeout)?;
        positive("reset_timeout", config.reset_timeout)?;
        let attempts = "max_consecutive_reset_attempts";
        if config.max_consecutive_reset_attempts > MAX_COUNTER {
            return Err(InvalidRegion::new(
                attempts,
                format!("must be at most {MAX_COUNTER}"),
            ));
        }
        if config.max_consecutive_reset_attempts == 0 {
            return Err(InvalidRegion::new(attempts, "must be at least 1"));
        }
        config.pes.sort_unstable();
        config.pes.dedup();
        if config.pes.is_empty() {
            return Err(InvalidRegion::new("pes_in_region", "must not be empty"));
        }
        Ok(config)
    }
}

/// The region's persisted dynamic state, except the per-PE completion slots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dynamic {
    pub state: State,
    pub region_healthy: bool,
    pub clean_start: bool,
    pub must_reset: bool,
    pub healthy_first_time: bool,
    pub current_reset_attempt: u64,
    pub current_max_reset_attempts: u64,
    pub current_seq_id: u64,
    pub last_completed_seq_id: u64,
    pub pending_seq_id: u64,
    pub to_retire_seq_id: u64,
    pub current_timer_seq_id: u64,
    pub drain_start_time_ms: i64,
    pub reset_start_time_ms: i64,
    pub last_consistent_state_time_ms: i64,
    pub last_reset_time_ms: i64,
    pub last_completed_drain_seq_id: i64,
    pub last_completed_reset_seq_id: i64,
    pub drain_times_ms: Window,
    pub reset_times_ms: Window,
    /// A checkpoint was asked for (`CheckpointNow`) and has not completed yet.
    pub checkpoint_requested: bool,
    /// No drain is triggered by the period while set (`HoldDrains`).
    pub drains_held: bool,
    /// The next start (`Start`) is clean: no reset when the region becomes healthy.
    pub start_clean: bool,
}

impl Dynamic {
    /// The state of a newly created region.
    pub fn initial(config: &Config) -> Dynamic {
        Dynamic {
            state: State::Started,
            region_healthy: false,
            clean_start: false,
            must_reset: false,
            healthy_first_time: false,
            current_reset_attempt: 0,
            current_max_reset_attempts: config.max_consecutive_reset_attempts,
            current_seq_id: 1,
            last_completed_seq_id: 0,
            pending_seq_id: 0,
            to_retire_seq_id: 0,
            current_timer_seq_id: 0,
            drain_start_time_ms: 0,
            reset_start_time_ms: 0,
            last_consistent_state_time_ms: 0,
            last_reset_time_ms: 0,
            last_completed_drain_seq_id: -1,
            last_completed_reset_seq_id: -1,
            drain_times_ms: Window::default(),
            reset_times_ms: Window::default(),
            checkpoint_requested: false,
            drains_held: false,
            start_clean: false,
        }
    }
}

/// One consistent region: its description, dynamic state and per-PE completion slots.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    config: Arc<Config>,
    dynamic: Dynamic,
    /// Parallel to `config.pes`.
    completion: Vec<Completion>,
    /// How many slots hold each `Completion`, indexed by its discriminant.
    counts: [usize; 4],
}

impl Region {
    /// A new region in STARTED with every slot `None`.
    pub fn new(config: Config) -> Result<Region, InvalidRegion> {
        let config = Config::new(config)?;
        let dynamic = Dynamic::initial(&config);
        let n = config.pes.len();
        Ok(Region {
            config: Arc::new(config),
            dynamic,
            completion: vec![Completion::None; n],
            counts: [n, 0, 0, 0],
        })
    }

    /// A region restored from persisted state. `completion` lists (pe, slot); PEs not
    /// listed are `None`, PEs not in the region are refused.
    pub fn restore(
        config: Config,
        dynamic: Dynamic,
        completion: &[(u64, Completion)],
    ) -> Result<Region, InvalidRegion> {
        let mut region = Region::new(config)?;
        if dynamic.current_seq_id == 0 {
            return Err(InvalidRegion::new("current_seq_id", "must be at least 1"));
        }
        let counters = [
            ("current_seq_id", dynamic.current_seq_id),
            ("last_completed_seq_id", dynamic.last_completed_seq_id),
            ("pending_seq_id", dynamic.pending_seq_id),
            ("to_retire_seq_id", dynamic.to_retire_seq_id),
            ("current_timer_seq_id", dynamic.current_timer_seq_id),
            ("current_reset_attempt", dynamic.current_reset_attempt),
            (
                "current_max_reset_attempts",
                dynamic.current_max_reset_attempts,
            ),
        ];
        if let Some(&(field, _)) = counters.iter().find(|(_, v)| *v >= MAX_COUNTER) {
            return Err(InvalidRegion::new(
                field,
                format!("must be below {MAX_COUNTER}"),
            ));
        }
        if dynamic.state == State::Resetting && dynamic.current_reset_attempt == 0 {
            return Err(InvalidRegion::new(
                "current_reset_attempt",
                "must be at least 1: a RESETTING region has made at least one reset attempt",
            ));
        }
        region.dynamic = dynamic;
        for &(pe, slot) in completion {
            let i = region.slot_index(pe).ok_or_else(|| {
                InvalidRegion::new(
                    "completion",
                    format!("names PE {pe}, not one of the region's PEs"),
                )
            })?;
            region.set_slot(i, slot);
        }
        Ok(region)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn dynamic(&self) -> &Dynamic {
        &self.dynamic
    }

    /// (pe, slot) for every PE of the region, in PE order.
    pub fn completion(&self) -> impl Iterator<Item = (u64, Completion)> + '_ {
        self.config
            .pes
            .iter()
            .copied()
            .zip(self.completion.iter().copied())
    }

    pub fn gauges(&self) -> Gauges {
        let d = &self.dynamic;
        Gauges {
            average_drain_time_ms: d.drain_times_ms.mean(),
            average_reset_time_ms: d.reset_times_ms.mean(),
            last_consistent_state_time_ms: d.last_consistent_state_time_ms,
            last_reset_time_ms: d.last_reset_time_ms,
            last_completed_drain_seq_id: d.last_completed_drain_seq_id,
            last_completed_reset_seq_id: d.last_completed_reset_seq_id,
            state: d.state,
            current_reset_attempt: d.current_reset_attempt,
        }
    }

    /// Applies `event` in place. On a rejection the region is untouched: every check runs
    /// before the first mutation.
    pub fn apply(&mut self, event: &Event, now_ms: i64) -> Result<Outcome, Rejection> {
        let before = self.dynamic;
        let mut step = Step {
            region: self,
            out: Outcome::default(),
            slots_changed: false,
            now_ms,
        };
        step.dispatch(event)?;
        let Step {
            mut out,
            slots_changed,
            ..
        } = step;
        out.persist = slots_changed || self.dynamic != before;
        if out.persist {
            out.gauges = Some(self.gauges());
        }
        Ok(out)
    }

    fn slot_index(&self, pe: u64) -> Option<usize> {
        self.config.pes.binary_search(&pe).ok()
    }

    fn set_slot(&mut self, i: usize, slot: Completion) {
        self.counts[self.completion[i] as usize] -= 1;
        self.counts[slot as usize] += 1;
        self.completion[i] = slot;
    }

    fn count(&self, slot: Completion) -> usize {
        self.counts[slot as usize]
    }
}

/// The pure form: the next region and the actions, or the refusal.
pub fn step(region: &Region, event: &Event, now_ms: i64) -> Result<(Region, Outcome), Rejection> {
    let mut next = region.clone();
    let out = next.apply(event, now_ms)?;
    Ok((next, out))
}

/// One event being applied: the handlers of the transition table and their helpers.
struct Step<'a> {
    region: &'a mut Region,
    out: Outcome,
    slots_changed: bool,
    now_ms: i64,
}

impl Step<'_> {
    fn d(&mut self) -> &mut Dynamic {
        &mut self.region.dynamic
    }

    fn state(&self) -> State {
        self.region.dynamic.state
    }

    fn periodic(&self) -> bool {
        self.region.config.trigger == Trigger::Periodic
    }

    fn not_expected(&self, event: &Event) -> Rejection {
        Rejection::NotExpected {
            event: event.name(),
            state: self.state(),
        }
    }

    fn dispatch(&mut self, event: &Event) -> Result<(), Rejection> {
        match *event {
            Event::Health {
                healthy,
                clean_start,
            } => {
                self.health(healthy, clean_start);
                Ok(())
            }
            Event::CheckpointDone { pe, seq_id } => self.checkpoint_done(event, pe, seq_id),
            Event::BlockingCheckpointDone { pe, seq_id } => {
                self.blocking_checkpoint_done(event, pe, seq_id)
            }
            Event::ResetDone {
                pe,
                seq_id,
                reset_attempt,
            } => self.reset_done(event, pe, seq_id, reset_attempt),
            Event::Drain {
                ref operator,
                seq_id,
            } => self.drain(event, operator, seq_id),
            Event::Reset { force } => self.reset_request(force),
            Event::Timer {
                timer,
                timer_seq_id,
            } => self.timer(event, timer, timer_seq_id),
            Event::Restarted => {
                // Timers died with the old process; the first healthy observation resets.
                self.clear_timers();
                let d = self.d();
                d.state = State::Started;
                d.region_healthy = false;
                d.must_reset = true;
                Ok(())
            }
            Event::CheckpointNow => {
                self.checkpoint_now();
                Ok(())
            }
            Event::HoldDrains { held } => {
                self.hold_drains(held);
                Ok(())
            }
            Event::Start { clean } => {
                self.start(clean);
                Ok(())
            }
        }
    }

    // ---- helpers (the original's named actions) ----

    fn notify(&mut self, notification: Notification) {
        self.out.notification = Some(notification);
    }

    fn clear_timers(&mut self) {
        self.d().current_timer_seq_id += 1;
        self.out.cancel_timers = true;
        self.out.arm = None;
    }

    fn arm(&mut self, timer: TimerKind, delay_s: f64) {
        self.out.arm = Some(Arm {
            timer,
            delay_ms: (delay_s * 1000.0) as u64,
            timer_seq_id: self.region.dynamic.current_timer_seq_id,
        });
    }

    fn reset_slots(&mut self) {
        let region = &mut *self.region;
        let n = region.completion.len();
        if region.counts[Completion::None as usize] != n {
            region.completion.fill(Completion::None);
            region.counts = [n, 0, 0, 0];
            self.slots_changed = true;
        }
    }

    fn set_slot(&mut self, i: usize, slot: Completion) {
        self.region.set_slot(i, slot);
        self.slots_changed = true;
    }

    fn all(&self, slot: Completion) -> bool {
        self.region.count(slot) == self.region.completion.len()
    }

    /// RESET(): a new reset attempt, or MAXIMUM_RESET_ATTEMPTS_REACHED once they are used up.
    fn reset_region(&mut self) {
        self.clear_timers();
        self.reset_slots();
        let now = self.now_ms;
        let d = self.d();
        let seq_id = d.last_completed_seq_id;
        if d.current_reset_attempt >= d.current_max_reset_attempts {
            d.state = State::MaximumResetAttemptsReached;
            self.notify(Notification::ResetFailed { seq_id });
            return;
        }
        d.state = State::Resetting;
        let reset_attempt = d.current_reset_attempt;
        d.current_reset_attempt += 1;
        d.reset_start_time_ms = now;
        self.notify(Notification::TriggerReset {
            seq_id,
            reset_attempt,
        });
        let delay = self.region.config.reset_timeout;
        self.arm(TimerKind::ResetTimeout, delay);
    }

    fn start_processing(&mut self) {
        self.d().state = State::Processing;
        if self.region.dynamic.checkpoint_requested {
            self.trigger_drain();
        } else {
            self.arm_period();
        }
    }

    /// The next periodic drain, unless drains are held.
    fn arm_period(&mut self) {
        if self.periodic() && !self.region.dynamic.drains_held {
            let period = self.region.config.period;
            self.arm(TimerKind::DrainPeriod, period);
        }
    }

    /// PROCESSING -> DRAINING with `currentSeqID`: tell every PE to drain and checkpoint.
    fn trigger_drain(&mut self) {
        let now = self.now_ms;
        let d = self.d();
        d.state = State::Draining;
        d.drain_start_time_ms = now;
        let seq_id = d.current_seq_id;
        self.notify(Notification::TriggerDrain { seq_id });
        let delay = self.region.config.drain_timeout;
        self.arm(TimerKind::DrainTimeout, delay);
    }

    fn start_processing_or_reset(&mut self) {
        if !self.region.dynamic.healthy_first_time {
            return;
        }
        if self.region.dynamic.must_reset {
            self.d().must_reset = false;
            self.reset_region();
        } else {
            self.start_processing();
        }
    }

    fn finish_blocking(&mut self, seq_id: u64) {
        let d = self.d();
        d.pending_seq_id = seq_id;
        d.current_seq_id += 1;
        d.state = State::CheckpointPending;
        let n = Notification::ResumeSubmission {
            seq_id: d.current_seq_id,
            retire_id: d.to_retire_seq_id,
            pending_checkpoint: true,
        };
        self.notify(n);
    }

    fn finish_checkpoint(&mut self) {
        let now = self.now_ms;
        let max = self.region.config.max_consecutive_reset_attempts;
        let d = self.d();
        let n = if d.state == State::Draining {
            d.to_retire_seq_id = d.last_completed_seq_id;
            d.last_completed_seq_id = d.current_seq_id;
            d.current_seq_id += 1;
            Notification::ResumeSubmission {
                seq_id: d.current_seq_id,
                retire_id: d.to_retire_seq_id,
                pending_checkpoint: false,
            }
        } else {
            d.to_retire_seq_id = d.last_completed_seq_id;
            d.last_completed_seq_id = d.pending_seq_id;
            Notification::Drained {
                seq_id: d.pending_seq_id,
            }
        };
        d.current_reset_attempt = 0;
        d.checkpoint_requested = false;
        d.current_max_reset_attempts = max;
        d.pending_seq_id = d.current_seq_id;
        d.last_completed_drain_seq_id = d.last_completed_seq_id as i64;
        d.last_consistent_state_time_ms = now;
        let took = now.saturating_sub(d.drain_start_time_ms);
        d.drain_times_ms.push(took);
        self.notify(n);
        self.clear_timers();
        self.start_processing();
    }

    fn finish_reset(&mut self) {
        let now = self.now_ms;
        let d = self.d();
        d.current_seq_id += 1;
        d.last_completed_reset_seq_id = d.last_completed_seq_id as i64;
        d.last_reset_time_ms = now;
        let took = now.saturating_sub(d.reset_start_time_ms);
        d.reset_times_ms.push(took);
        let n = Notification::ResumeSubmission {
            seq_id: d.current_seq_id,
            retire_id: d.to_retire_seq_id,
            pending_checkpoint: false,
        };
        self.notify(n);
        self.clear_timers();
        self.start_processing();
    }

    // ---- handlers ----

    fn health(&mut self, healthy: bool, clean_start: bool) {
        if healthy == self.region.dynamic.region_healthy {
            return;
        }
        let d = self.d();
        d.region_healthy = healthy;
        d.clean_start = clean_start;
        let state = d.state;
        if healthy {
            match state {
                State::Started => {
                    let d = self.d();
                    if d.start_clean {
                        // Asked for (`Start { clean }`): new PEs begin without a checkpoint.
                        d.start_clean = false;
                        d.clean_start = true;
                        d.must_reset = false;
                    } else if !clean_start {
                        d.must_reset = true;
                    }
                    d.healthy_first_time = true;
                    self.start_processing_or_reset();
                }
                State::Unhealthy => self.recover(),
                // Recorded only; a region stuck at the maximum waits for a forced reset.
                _ => {}
            }
        } else {
            self.out.clear_board = true;
            if matches!(
                state,
                State::Processing | State::Draining | State::CheckpointPending | State::Resetting
            ) {
                self.d().state = State::Unhealthy;
                self.clear_timers();
            }
        }
    }

    /// Index of `pe` and the sequence id a checkpoint report must carry in this state.
    fn checkpoint_slot(&self, event: &Event, pe: u64, seq_id: u64) -> Result<usize, Rejection> {
        let i = self
            .region
            .slot_index(pe)
            .ok_or(Rejection::UnknownPe { pe })?;
        let d = &self.region.dynamic;
        let expected = match d.state {
            State::Draining => d.current_seq_id,
            State::CheckpointPending => d.pending_seq_id,
            _ => return Err(self.not_expected(event)),
        };
        if seq_id != expected {
            return Err(Rejection::SeqIdMismatch {
                expected,
                got: seq_id,
            });
        }
        Ok(i)
    }

    fn checkpoint_done(&mut self, event: &Event, pe: u64, seq_id: u64) -> Result<(), Rejection> {
        let i = self.checkpoint_slot(event, pe, seq_id)?;
        let already = self.region.completion[i];
        if already == Completion::CheckpointDone {
            return Err(Rejection::DuplicateCompletion { pe, already });
        }
        self.set_slot(i, Completion::CheckpointDone);
        if self.all(Completion::CheckpointDone) {
            self.reset_slots();
            self.finish_checkpoint();
        } else if self.state() == State::Draining
            && self.region.count(Completion::None) == 0
            && self.region.count(Completion::ResetDone) == 0
        {
            self.finish_blocking(seq_id);
        }
        Ok(())
    }

    fn blocking_checkpoint_done(
        &mut self,
        event: &Event,
        pe: u64,
        seq_id: u64,
    ) -> Result<(), Rejection> {
        let i = self.checkpoint_slot(event, pe, seq_id)?;
        let already = self.region.completion[i];
        // A full checkpoint already covers the blocking part: never downgrade it.
        if matches!(
            already,
            Completion::BlockingCheckpointDone | Completion::CheckpointDone
        ) {
            return Err(Rejection::DuplicateCompletion { pe, already });
        }
        self.set_slot(i, Completion::BlockingCheckpointDone);
        if self.region.count(Completion::None) == 0 && self.region.count(Completion::ResetDone) == 0
        {
            self.finish_blocking(seq_id);
        }
        Ok(())
    }

    fn reset_done(
        &mut self,
        event: &Event,
        pe: u64,
        seq_id: u64,
        reset_attempt: u64,
    ) -> Result<(), Rejection> {
        let i = self
            .region
            .slot_index(pe)
            .ok_or(Rejection::UnknownPe { pe })?;
        let d = &self.region.dynamic;
        if d.state != State::Resetting {
            return Err(self.not_expected(event));
        }
        if seq_id != d.last_completed_seq_id {
            return Err(Rejection::SeqIdMismatch {
                expected: d.last_completed_seq_id,
                got: seq_id,
            });
        }
        // In RESETTING the attempt counter was incremented when the reset was triggered.
        let Some(expected) = d.current_reset_attempt.checked_sub(1) else {
            return Err(self.not_expected(event));
        };
        if reset_attempt != expected {
            return Err(Rejection::ResetAttemptMismatch {
                expected,
                got: reset_attempt,
            });
        }
        let already = self.region.completion[i];
        if already == Completion::ResetDone {
            return Err(Rejection::DuplicateCompletion { pe, already });
        }
        self.set_slot(i, Completion::ResetDone);
        if self.all(Completion::ResetDone) {
            self.reset_slots();
            self.finish_reset();
        }
        Ok(())
    }

    fn drain(&mut self, event: &Event, operator: &str, seq_id: u64) -> Result<(), Rejection> {
        let config = &self.region.config;
        if config.trigger != Trigger::OperatorDriven {
            return Err(Rejection::NotOperatorDriven);
        }
        if !config.start_operators.contains_key(operator) {
            return Err(Rejection::UnknownOperator {
                operator: operator.to_owned(),
            });
        }
        if config.trigger_operators.get(operator) != Some(&true) {
            return Err(Rejection::NotATriggerOperator {
                operator: operator.to_owned(),
            });
        }
        match self.state() {
            // Drained before the region was ever stable: reset once it is.
            State::Started => {
                self.d().must_reset = true;
                Ok(())
            }
            State::Processing => {
                let expected = self.region.dynamic.current_seq_id;
                if seq_id != expected {
                    return Err(Rejection::SeqIdMismatch {
                        expected,
                        got: seq_id,
                    });
                }
                // No triggerDrain: the trigger operator started this drain itself.
                let now = self.now_ms;
                let d = self.d();
                d.state = State::Draining;
                d.drain_start_time_ms = now;
                let delay = self.region.config.drain_timeout;
                self.arm(TimerKind::DrainTimeout, delay);
                Ok(())
            }
            _ => Err(self.not_expected(event)),
        }
    }

    fn reset_request(&mut self, force: bool) -> Result<(), Rejection> {
        let state = self.state();
        if state == State::MaximumResetAttemptsReached && !force {
            return Err(Rejection::ForceRequired);
        }
        if force {
            let max = self.region.config.max_consecutive_reset_attempts;
            let d = self.d();
            d.current_max_reset_attempts = d.current_reset_attempt.saturating_add(max);
        }
        match state {
            State::Started => self.d().must_reset = true,
            // The reset happens when the region is healthy again.
            State::Unhealthy => {}
            State::MaximumResetAttemptsReached => {
                if self.region.dynamic.region_healthy {
                    self.reset_region();
                } else {
                    self.d().state = State::Unhealthy;
                }
            }
            State::Processing | State::Draining | State::CheckpointPending | State::Resetting => {
                self.reset_region();
            }
        }
        Ok(())
    }

    fn timer(
        &mut self,
        event: &Event,
        timer: TimerKind,
        timer_seq_id: u64,
    ) -> Result<(), Rejection> {
        let current = self.region.dynamic.current_timer_seq_id;
        if timer_seq_id < current {
            return Err(Rejection::StaleTimer {
                timer,
                timer_seq_id,
                current,
            });
        }
        if timer_seq_id > current {
            return Err(Rejection::FutureTimer {
                timer,
                timer_seq_id,
                current,
            });
        }
        let state = self.state();
        match (timer, state) {
            // A period armed before a hold: no drain (releasing the hold arms the next one).
            (TimerKind::DrainPeriod, State::Processing) if self.region.dynamic.drains_held => {}
            (TimerKind::DrainPeriod, State::Processing) => self.trigger_drain(),
            (TimerKind::DrainTimeout, State::Draining | State::CheckpointPending)
            | (TimerKind::ResetTimeout, State::Resetting) => self.reset_region(),
            _ => return Err(self.not_expected(event)),
        }
        Ok(())
    }
}
