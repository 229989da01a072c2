//! Requests from outside the PE runtime: a checkpoint now, a hold on the coordinator's own
//! drains, and how the region starts when its PEs are replaced (upgrades, suspend/resume).
//!
//! None of them changes what a sequence id means: an asked-for checkpoint is an ordinary drain
//! with the next `currentSeqID`, and a started region resets to `lastCompletedSeqID` as after a
//! coordinator restart.

use super::{State, Step};

impl Step<'_> {
    /// CHECKPOINT_NOW: drain at once when PROCESSING; a drain already under way answers the
    /// request; in any other state the drain starts as soon as the region is PROCESSING again.
    /// The request stays until a checkpoint completes (a failed drain resets, then drains again).
    pub(super) fn checkpoint_now(&mut self) {
        self.d().checkpoint_requested = true;
        if self.state() == State::Processing {
            self.clear_timers(); // the pending period: this drain replaces it
            self.trigger_drain();
        }
    }

    /// HOLD_DRAINS(held): while held, the period triggers no drain (asked-for checkpoints and
    /// trigger operators still drain). Released in PROCESSING, the period starts again.
    pub(super) fn hold_drains(&mut self, held: bool) {
        if self.region.dynamic.drains_held == held {
            return;
        }
        self.d().drains_held = held;
        if held {
            return;
        }
        if self.state() == State::Processing && self.periodic() {
            self.clear_timers();
            self.arm_period();
        }
    }

    /// START(clean): some of the region's PEs are about to be replaced. The next time the region
    /// becomes healthy (from STARTED or UNHEALTHY) it resets to the last completed checkpoint,
    /// as after any PE restart, or (`clean`) processes without a reset. Until then it runs on.
    /// A region stopped at the maximum of reset attempts gets a fresh allowance, as with a
    /// forced reset, and waits for its health again.
    pub(super) fn start(&mut self, clean: bool) {
        self.d().start_clean = clean;
        match self.state() {
            State::Started => self.d().must_reset = !clean,
            State::MaximumResetAttemptsReached => {
                let max = self.region.config.max_consecutive_reset_attempts;
                let d = self.d();
                d.current_max_reset_attempts = d.current_reset_attempt.saturating_add(max);
                d.state = State::Unhealthy;
                d.region_healthy = false;
            }
            _ => {}
        }
    }

    /// Healthy again after UNHEALTHY: a reset, unless a clean start was asked for.
    pub(super) fn recover(&mut self) {
        if self.region.dynamic.start_clean {
            let d = self.d();
            d.start_clean = false;
            d.clean_start = true;
            self.clear_timers();
            self.start_processing();
        } else {
            self.reset_region();
        }
    }
}
