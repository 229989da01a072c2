//! Vocabulary of the consistent-region FSM: states, events, actions, rejections.

use std::fmt;

/// Region states; the discriminant is the value of the `state` gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Started = 0,
    Processing = 1,
    Unhealthy = 2,
    Draining = 3,
    Resetting = 4,
    MaximumResetAttemptsReached = 5,
    CheckpointPending = 6,
}

impl State {
    pub const ALL: [State; 7] = [
        State::Started,
        State::Processing,
        State::Unhealthy,
        State::Draining,
        State::Resetting,
        State::MaximumResetAttemptsReached,
        State::CheckpointPending,
    ];

    pub fn name(self) -> &'static str {
        match self {
            State::Started => "STARTED",
            State::Processing => "PROCESSING",
            State::Unhealthy => "UNHEALTHY",
            State::Draining => "DRAINING",
            State::Resetting => "RESETTING",
            State::MaximumResetAttemptsReached => "MAXIMUM_RESET_ATTEMPTS_REACHED",
            State::CheckpointPending => "CHECKPOINT_PENDING",
        }
    }

    pub fn from_name(name: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Periodic,
    OperatorDriven,
}

/// What a PE has reported for the current drain or reset (`EPeStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Completion {
    None = 0,
    CheckpointDone = 1,
    BlockingCheckpointDone = 2,
    ResetDone = 3,
}

impl Completion {
    pub const ALL: [Completion; 4] = [
        Completion::None,
        Completion::CheckpointDone,
        Completion::BlockingCheckpointDone,
        Completion::ResetDone,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Completion::None => "None",
            Completion::CheckpointDone => "CheckpointDone",
            Completion::BlockingCheckpointDone => "BlockingCheckpointDone",
            Completion::ResetDone => "ResetDone",
        }
    }

    pub fn from_name(name: &str) -> Option<Completion> {
        Completion::ALL.into_iter().find(|c| c.name() == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerKind {
    DrainPeriod,
    DrainTimeout,
    ResetTimeout,
}

impl TimerKind {
    pub const ALL: [TimerKind; 3] = [
        TimerKind::DrainPeriod,
        TimerKind::DrainTimeout,
        TimerKind::ResetTimeout,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TimerKind::DrainPeriod => "DrainPeriod",
            TimerKind::DrainTimeout => "DrainTimeout",
            TimerKind::ResetTimeout => "ResetTimeout",
        }
    }

    pub fn from_name(name: &str) -> Option<TimerKind> {
        TimerKind::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// One input to a region's FSM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The region's health as derived from its PEs and pods (only known health is fed in).
    Health {
        healthy: bool,
        clean_start: bool,
    },
    CheckpointDone {
        pe: u64,
        seq_id: u64,
    },
    BlockingCheckpointDone {
        pe: u64,
        seq_id: u64,
    },
    ResetDone {
        pe: u64,
        seq_id: u64,
        reset_attempt: u64,
    },
    /// A trigger operator started a drain itself (operator-driven regions).
    Drain {
        operator: String,
        seq_id: u64,
    },
    Reset {
        force: bool,
    },
    Timer {
        timer: TimerKind,
        timer_seq_id: u64,
    },
    /// The coordinator restarted: timers are gone and the region must be reset once healthy.
    Restarted,
    /// A user or an upgrade asked for a checkpoint now, outside the period.
    CheckpointNow,
    /// Hold (or release) the drains the coordinator triggers itself.
    HoldDrains {
        held: bool,
    },
    /// The region's PEs are being replaced: when they are healthy, reset to the last completed
    /// checkpoint, or (`clean`) start without one.
    Start {
        clean: bool,
    },
}

impl Event {
    pub fn name(&self) -> &'static str {
        match self {
            Event::Health { .. } => "health",
            Event::CheckpointDone { .. } => "checkpoint",
            Event::BlockingCheckpointDone { .. } => "blockingCheckpoint",
            Event::ResetDone { .. } => "resetDone",
            Event::Drain { .. } => "drain",
            Event::Reset { .. } => "reset",
            Event::Timer { timer, .. } => timer.name(),
            Event::Restarted => "restarted",
            Event::CheckpointNow => "checkpointNow",
            Event::HoldDrains { .. } => "holdDrains",
            Event::Start { .. } => "start",
        }
    }
}

/// A notification for every PE of the region (board entry + UDP hint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notification {
    TriggerDrain {
        seq_id: u64,
    },
    TriggerReset {
        seq_id: u64,
        reset_attempt: u64,
    },
    ResumeSubmission {
        seq_id: u64,
        retire_id: u64,
        pending_checkpoint: bool,
    },
    Drained {
        seq_id: u64,
    },
    ResetFailed {
        seq_id: u64,
    },
}

impl Notification {
    /// The `type` the PE runtime switches on.
    pub fn kind(&self) -> &'static str {
        match self {
            Notification::TriggerDrain { .. } => "triggerDrain",
            Notification::TriggerReset { .. } => "triggerReset",
            Notification::ResumeSubmission { .. } => "resumeSubmission",
            Notification::Drained { .. } => "drained",
            Notification::ResetFailed { .. } => "resetFailed",
        }
    }

    /// The `message`, parsed positionally by the runtime (split on `;`, value after `=`).
    pub fn message(&self) -> String {
        match *self {
            Notification::TriggerDrain { seq_id }
            | Notification::Drained { seq_id }
            | Notification::ResetFailed { seq_id } => format!("seqId={seq_id}"),
            Notification::TriggerReset {
                seq_id,
                reset_attempt,
            } => format!("seqId={seq_id};resetAttempt={reset_attempt}"),
            Notification::ResumeSubmission {
                seq_id,
                retire_id,
                pending_checkpoint,
            } => format!(
                "seqId={seq_id};retId={retire_id};pendCkpt={}",
                u8::from(pending_checkpoint)
            ),
        }
    }
}

/// Arm the region's timer: fire `Event::Timer { timer, timer_seq_id }` after `delay_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arm {
    pub timer: TimerKind,
    pub delay_ms: u64,
    pub timer_seq_id: u64,
}

/// The eight gauges of the coordinator, in the order of [`crate::cr_fsm::GAUGE_NAMES`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gauges {
    pub average_drain_time_ms: f64,
    pub average_reset_time_ms: f64,
    pub last_consistent_state_time_ms: i64,
    pub last_reset_time_ms: i64,
    pub last_completed_drain_seq_id: i64,
    pub last_completed_reset_seq_id: i64,
    pub state: State,
    pub current_reset_attempt: u64,
}

impl Gauges {
    pub fn values(&self) -> [f64; 8] {
        [
            self.average_drain_time_ms,
            self.average_reset_time_ms,
            self.last_consistent_state_time_ms as f64,
            self.last_reset_time_ms as f64,
            self.last_completed_drain_seq_id as f64,
            self.last_completed_reset_seq_id as f64,
            f64::from(self.state as u8),
            self.current_reset_attempt as f64,
        ]
    }
}

/// What the caller must do after an accepted event, in this order: clear the board entries
/// of the region's PEs, cancel the region's timers, arm the new timer, persist the region
/// (if `persist`), then -- once the write is confirmed -- publish `notification` and `gauges`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outcome {
    /// The persisted state changed: write it before notifying. False means skip the write.
    pub persist: bool,
    pub clear_board: bool,
    pub cancel_timers: bool,
    pub arm: Option<Arm>,
    pub notification: Option<Notification>,
    /// The gauge values after the step; present whenever `persist` is.
    pub gauges: Option<Gauges>,
}

/// Why an event was refused. The region is left exactly as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    UnknownPe {
        pe: u64,
    },
    UnknownOperator {
        operator: String,
    },
    NotATriggerOperator {
        operator: String,
    },
    NotOperatorDriven,
    /// The event has no meaning in the current state (a late or early report).
    NotExpected {
        event: &'static str,
        state: State,
    },
    SeqIdMismatch {
        expected: u64,
        got: u64,
    },
    ResetAttemptMismatch {
        expected: u64,
        got: u64,
    },
    DuplicateCompletion {
        pe: u64,
        already: Completion,
    },
    StaleTimer {
        timer: TimerKind,
        timer_seq_id: u64,
        current: u64,
    },
    FutureTimer {
        timer: TimerKind,
        timer_seq_id: u64,
        current: u64,
    },
    ForceRequired,
}

impl Rejection {
    /// A stable camelCase code for logs, metrics and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::UnknownPe { .. } => "unknownPe",
            Rejection::UnknownOperator { .. } => "unknownOperator",
            Rejection::NotATriggerOperator { .. } => "notATriggerOperator",
            Rejection::NotOperatorDriven => "notOperatorDriven",
            Rejection::NotExpected { .. } => "notExpected",
            Rejection::SeqIdMismatch { .. } => "seqIdMismatch",
            Rejection::ResetAttemptMismatch { .. } => "resetAttemptMismatch",
            Rejection::DuplicateCompletion { .. } => "duplicateCompletion",
            Rejection::StaleTimer { .. } => "staleTimer",
            Rejection::FutureTimer { .. } => "futureTimer",
            Rejection::ForceRequired => "forceRequired",
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::UnknownPe { pe } => write!(f, "PE {pe} is not in this region"),
            Rejection::UnknownOperator { operator } => {
                write!(f, "operator '{operator}' is not in this region")
            }
            Rejection::NotATriggerOperator { operator } => {
                write!(
                    f,
                    "operator '{operator}' is not a trigger operator of this region"
                )
            }
            Rejection::NotOperatorDriven => {
                f.write_str("drain requests are only accepted by operator-driven regions")
            }
            Rejection::NotExpected { event, state } => {
                write!(f, "{event} is not expected in state {state}")
            }
            Rejection::SeqIdMismatch { expected, got } => {
                let age = if got < expected { "stale" } else { "future" };
                write!(f, "{age} sequence id {got} (expected {expected})")
            }
            Rejection::ResetAttemptMismatch { expected, got } => {
                write!(
                    f,
                    "reset attempt {got} does not match the current attempt {expected}"
                )
            }
            Rejection::DuplicateCompletion { pe, already } => {
                write!(f, "PE {pe} already reported {}", already.name())
            }
            Rejection::StaleTimer {
                timer,
                timer_seq_id,
                current,
            } => write!(
                f,
                "stale {} timer {timer_seq_id} (current timer sequence id {current})",
                timer.name()
            ),
            Rejection::FutureTimer {
                timer,
                timer_seq_id,
                current,
            } => write!(
                f,
                "{} timer {timer_seq_id} was never armed (current timer sequence id {current})",
                timer.name()
            ),
            Rejection::ForceRequired => f.write_str(
                "maximum reset attempts reached: only a forced reset can restart the region",
            ),
        }
    }
}

impl std::error::Error for Rejection {}

/// A region description or persisted state that cannot be run.
///
/// `field` is the input at fault in the core's own snake_case names (a [`Config`] input as the
/// bindings take it, such as `pes_in_region`, or a [`Dynamic`] field, `completion` for the
/// per-PE slots); `problem` reads after it. Callers name the field as their users know it.
///
/// [`Config`]: super::Config
/// [`Dynamic`]: super::Dynamic
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRegion {
    pub field: &'static str,
    pub problem: String,
}

impl InvalidRegion {
    pub fn new(field: &'static str, problem: impl Into<String>) -> InvalidRegion {
        InvalidRegion {
            field,
            problem: problem.into(),
        }
    }
}

impl fmt::Display for InvalidRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.problem)
    }
}

impl std::error::Error for InvalidRegion {}
