//! Python bindings of the consistent-region FSM: `CrRegion`, `CrEvent`, `CrStep`, `CrBatch`.
//!
//! Region state crosses the boundary as a dict keyed by the FSM's own snake_case names (those of
//! [`Dynamic`], plus `completion` and the two averages); the Python side maps them to the
//! ConsistentRegion CRD's status fields and validates them with its pydantic model.

use std::collections::HashMap;

use pyo3::create_exception;
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error_with;
use crate::cr_fsm::{
    Completion, Config, Dynamic, Event, InvalidRegion, Outcome, Region, Rejection, State,
    TimerKind, Trigger, Window, GAUGE_NAMES,
};

create_exception!(
    _native,
    CrRejected,
    PyValueError,
    "An event the region refused (`kind` says why); the region is unchanged."
);
create_exception!(
    _native,
    CrInvalidRegion,
    PyValueError,
    "A region description or persisted state that cannot be run; `field` is the input at fault."
);

fn invalid(py: Python<'_>, e: InvalidRegion) -> PyErr {
    let message = e.to_string();
    error_with::<CrInvalidRegion>(py, message, |err| {
        err.setattr("field", e.field)?;
        err.setattr("problem", e.problem)
    })
}

fn rejected(py: Python<'_>, r: &Rejection) -> PyErr {
    error_with::<CrRejected>(py, r.to_string(), |err| err.setattr("kind", r.kind()))
}

/// One FSM input. Immutable; build it with the static constructors.
#[pyclass(module = "streams_k8s._native", frozen, eq)]
#[derive(PartialEq)]
pub struct CrEvent(Event);

#[pymethods]
impl CrEvent {
    #[staticmethod]
    fn health(healthy: bool, clean_start: bool) -> Self {
        CrEvent(Event::Health {
            healthy,
            clean_start,
        })
    }

    #[staticmethod]
    fn checkpoint(pe: u64, seq_id: u64) -> Self {
        CrEvent(Event::CheckpointDone { pe, seq_id })
    }

    #[staticmethod]
    fn blocking_checkpoint(pe: u64, seq_id: u64) -> Self {
        CrEvent(Event::BlockingCheckpointDone { pe, seq_id })
    }

    #[staticmethod]
    fn reset_done(pe: u64, seq_id: u64, reset_attempt: u64) -> Self {
        CrEvent(Event::ResetDone {
            pe,
            seq_id,
            reset_attempt,
        })
    }

    #[staticmethod]
    fn drain(operator: String, seq_id: u64) -> Self {
        CrEvent(Event::Drain { operator, seq_id })
    }

    #[staticmethod]
    fn reset(force: bool) -> Self {
        CrEvent(Event::Reset { force })
    }

    #[staticmethod]
    fn timer(timer: &str, timer_seq_id: u64) -> PyResult<Self> {
        let timer = TimerKind::from_name(timer).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown timer '{timer}' (DrainPeriod, DrainTimeout or ResetTimeout)"
            ))
        })?;
        Ok(CrEvent(Event::Timer {
            timer,
            timer_seq_id,
        }))
    }

    #[staticmethod]
    fn restarted() -> Self {
        CrEvent(Event::Restarted)
    }

    #[staticmethod]
    fn checkpoint_now() -> Self {
        CrEvent(Event::CheckpointNow)
    }

    #[staticmethod]
    fn hold_drains(held: bool) -> Self {
        CrEvent(Event::HoldDrains { held })
    }

    #[staticmethod]
    fn start(clean: bool) -> Self {
        CrEvent(Event::Start { clean })
    }

    /// The event's name (`health`, `checkpoint`, ..., or the timer's name).
    #[getter]
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn __repr__(&self) -> String {
        format!("CrEvent({:?})", self.0)
    }
}

/// The actions of one event: refused (`rejected`/`error` set) or accepted.
#[pyclass(module = "streams_k8s._native", frozen)]
pub struct CrStep(Result<Outcome, Rejection>);

impl CrStep {
    fn outcome(&self) -> Option<&Outcome> {
        self.0.as_ref().ok()
    }
}

#[pymethods]
impl CrStep {
    /// The rejection kind (`unknownPe`, `seqIdMismatch`, ...), None if accepted.
    #[getter]
    fn rejected(&self) -> Option<&'static str> {
        self.0.as_ref().err().map(Rejection::kind)
    }

    #[getter]
    fn error(&self) -> Option<String> {
        self.0.as_ref().err().map(ToString::to_string)
    }

    #[getter]
    fn persist(&self) -> bool {
        self.outcome().is_some_and(|o| o.persist)
    }

    #[getter]
    fn clear_board(&self) -> bool {
        self.outcome().is_some_and(|o| o.clear_board)
    }

    #[getter]
    fn cancel_timers(&self) -> bool {
        self.outcome().is_some_and(|o| o.cancel_timers)
    }

    /// (timer, delay_ms, timer_seq_id) to arm, if any.
    #[getter]
    fn arm(&self) -> Option<(&'static str, u64, u64)> {
        let a = self.outcome()?.arm?;
        Some((a.timer.name(), a.delay_ms, a.timer_seq_id))
    }

    /// (type, message) for every PE of the region, if any.
    #[getter]
    fn notification(&self) -> Option<(&'static str, String)> {
        let n = self.outcome()?.notification?;
        Some((n.kind(), n.message()))
    }

    /// The eight gauge values (order of `cr_gauge_names()`), present when `persist` is.
    #[getter]
    fn gauges(&self) -> Option<Vec<f64>> {
        Some(self.outcome()?.gauges?.values().to_vec())
    }

    fn __repr__(&self) -> String {
        format!("CrStep({:?})", self.0)
    }
}

/// The results of `CrRegion.step_many`, one per event, kept native until read.
#[pyclass(module = "streams_k8s._native", frozen, sequence)]
pub struct CrBatch {
    steps: Vec<Result<Outcome, Rejection>>,
}

#[pymethods]
impl CrBatch {
    fn __len__(&self) -> usize {
        self.steps.len()
    }

    fn __getitem__(&self, index: isize) -> PyResult<CrStep> {
        let n = self.steps.len() as isize;
        let i = if index < 0 { index + n } else { index };
        if !(0..n).contains(&i) {
            return Err(PyIndexError::new_err("CrBatch index out of range"));
        }
        Ok(CrStep(self.steps[i as usize].clone()))
    }

    /// How many events were refused.
    #[getter]
    fn rejected(&self) -> usize {
        self.steps.iter().filter(|s| s.is_err()).count()
    }

    /// Whether any event changed the persisted state.
    #[getter]
    fn persist(&self) -> bool {
        self.steps
            .iter()
            .any(|s| s.as_ref().is_ok_and(|o| o.persist))
    }
}

/// One consistent region and its FSM. `step` mutates it in place; `copy` for a snapshot.
#[pyclass(module = "streams_k8s._native")]
pub struct CrRegion(Region);

fn get<'py, T: FromPyObjectOwned<'py>>(
    status: &Bound<'py, PyDict>,
    field: &'static str,
    default: T,
) -> PyResult<T> {
    match status.get_item(field)? {
        Some(v) if !v.is_none() => v.extract::<T>().map_err(|e| {
            let e: PyErr = e.into();
            invalid(
                status.py(),
                InvalidRegion::new(field, format!("cannot be read: {e}")),
            )
        }),
        _ => Ok(default),
    }
}

/// Epoch-ms fields: None means "never" (0).
fn get_ms(status: &Bound<'_, PyDict>, field: &'static str) -> PyResult<i64> {
    Ok(get::<f64>(status, field, 0.0)?.round() as i64)
}

fn get_window(status: &Bound<'_, PyDict>, field: &'static str) -> PyResult<Window> {
    let samples: Vec<f64> = get(status, field, Vec::new())?;
    let samples: Vec<i64> = samples.into_iter().map(|s| s.round() as i64).collect();
    Ok(Window::from_samples(&samples))
}

fn restore_dynamic(config: &Config, status: &Bound<'_, PyDict>) -> PyResult<Dynamic> {
    let init = Dynamic::initial(config);
    let state: String = get(status, "state", init.state.name().to_owned())?;
    let state = State::from_name(&state).ok_or_else(|| {
        let problem = format!("has an unknown value '{state}'");
        invalid(status.py(), InvalidRegion::new("state", problem))
    })?;
    Ok(Dynamic {
        state,
        region_healthy: get(status, "region_healthy", init.region_healthy)?,
        clean_start: get(status, "clean_start", init.clean_start)?,
        must_reset: get(status, "must_reset", init.must_reset)?,
        healthy_first_time: get(status, "healthy_first_time", init.healthy_first_time)?,
        current_reset_attempt: get(status, "current_reset_attempt", init.current_reset_attempt)?,
        current_max_reset_attempts: get(
            status,
            "current_max_reset_attempts",
            init.current_max_reset_attempts,
        )?,
        current_seq_id: get(status, "current_seq_id", init.current_seq_id)?,
        last_completed_seq_id: get(status, "last_completed_seq_id", init.last_completed_seq_id)?,
        pending_seq_id: get(status, "pending_seq_id", init.pending_seq_id)?,
        to_retire_seq_id: get(status, "to_retire_seq_id", init.to_retire_seq_id)?,
        current_timer_seq_id: get(status, "current_timer_seq_id", init.current_timer_seq_id)?,
        drain_start_time_ms: get_ms(status, "drain_start_time_ms")?,
        reset_start_time_ms: get_ms(status, "reset_start_time_ms")?,
        last_consistent_state_time_ms: get_ms(status, "last_consistent_state_time_ms")?,
        last_reset_time_ms: get_ms(status, "last_reset_time_ms")?,
        last_completed_drain_seq_id: get(
            status,
            "last_completed_drain_seq_id",
            init.last_completed_drain_seq_id,
        )?,
        last_completed_reset_seq_id: get(
            status,
            "last_completed_reset_seq_id",
            init.last_completed_reset_seq_id,
        )?,
        drain_times_ms: get_window(status, "drain_times_ms")?,
        reset_times_ms: get_window(status, "reset_times_ms")?,
        checkpoint_requested: get(status, "checkpoint_requested", init.checkpoint_requested)?,
        drains_held: get(status, "drains_held", init.drains_held)?,
        start_clean: get(status, "start_clean", init.start_clean)?,
    })
}

fn restore_completion(status: &Bound<'_, PyDict>) -> PyResult<Vec<(u64, Completion)>> {
    let map: HashMap<String, String> = get(status, "completion", HashMap::new())?;
    let bad = |problem: String| invalid(status.py(), InvalidRegion::new("completion", problem));
    map.into_iter()
        .map(|(pe, slot)| {
            let id = pe
                .parse::<u64>()
                .map_err(|_| bad(format!("has '{pe}', which is not a PE id")))?;
            let slot = Completion::from_name(&slot)
                .ok_or_else(|| bad(format!("has an unknown value '{slot}' for PE {pe}")))?;
            Ok((id, slot))
        })
        .collect()
}

/// Epoch-ms fields: "never" (0) is None.
fn ms_or_none(ms: i64) -> Option<i64> {
    (ms != 0).then_some(ms)
}

#[pymethods]
impl CrRegion {
    #[new]
    #[pyo3(signature = (
        *, region_index, trigger, period, drain_timeout, reset_timeout,
        max_consecutive_reset_attempts, pes_in_region, operators_to_start_region_map,
        operators_to_trigger_map, status = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        region_index: u32,
        trigger: &str,
        period: f64,
        drain_timeout: f64,
        reset_timeout: f64,
        max_consecutive_reset_attempts: u64,
        pes_in_region: Vec<u64>,
        operators_to_start_region_map: HashMap<String, bool>,
        operators_to_trigger_map: HashMap<String, bool>,
        status: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let trigger = match trigger {
            "periodic" => Trigger::Periodic,
            "operatorDriven" => Trigger::OperatorDriven,
            other => {
                let problem = format!("must be 'periodic' or 'operatorDriven', got '{other}'");
                return Err(invalid(py, InvalidRegion::new("trigger", problem)));
            }
        };
        let config = Config {
            region_index,
            trigger,
            period,
            drain_timeout,
            reset_timeout,
            max_consecutive_reset_attempts,
            pes: pes_in_region,
            start_operators: operators_to_start_region_map,
            trigger_operators: operators_to_trigger_map,
        };
        let region = match status {
            None => Region::new(config),
            Some(status) => {
                let config = Config::new(config).map_err(|e| invalid(py, e))?;
                let dynamic = restore_dynamic(&config, status)?;
                let completion = restore_completion(status)?;
                Region::restore(config, dynamic, &completion)
            }
        };
        region.map(CrRegion).map_err(|e| invalid(py, e))
    }

    #[getter]
    fn region_index(&self) -> u32 {
        self.0.config().region_index
    }

    #[getter]
    fn pes(&self) -> Vec<u64> {
        self.0.config().pes.clone()
    }

    #[getter]
    fn state(&self) -> &'static str {
        self.0.dynamic().state.name()
    }

    #[getter]
    fn current_timer_seq_id(&self) -> u64 {
        self.0.dynamic().current_timer_seq_id
    }

    #[getter]
    fn drains_held(&self) -> bool {
        self.0.dynamic().drains_held
    }

    /// The dynamic state, keyed by the FSM's own names (epoch-ms times None for "never").
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = self.0.dynamic();
        let out = PyDict::new(py);
        out.set_item("state", d.state.name())?;
        out.set_item("region_healthy", d.region_healthy)?;
        out.set_item("clean_start", d.clean_start)?;
        out.set_item("must_reset", d.must_reset)?;
        out.set_item("healthy_first_time", d.healthy_first_time)?;
        out.set_item("current_reset_attempt", d.current_reset_attempt)?;
        out.set_item("current_max_reset_attempts", d.current_max_reset_attempts)?;
        out.set_item("current_seq_id", d.current_seq_id)?;
        out.set_item("last_completed_seq_id", d.last_completed_seq_id)?;
        out.set_item("pending_seq_id", d.pending_seq_id)?;
        out.set_item("to_retire_seq_id", d.to_retire_seq_id)?;
        out.set_item("current_timer_seq_id", d.current_timer_seq_id)?;
        let slots = PyDict::new(py);
        for (pe, slot) in self.0.completion() {
            slots.set_item(pe.to_string(), slot.name())?;
        }
        out.set_item("completion", slots)?;
        let g = self.0.gauges();
        out.set_item(
            "last_consistent_state_time_ms",
            ms_or_none(d.last_consistent_state_time_ms),
        )?;
        out.set_item("last_reset_time_ms", ms_or_none(d.last_reset_time_ms))?;
        let drains = d.drain_times_ms.samples();
        let resets = d.reset_times_ms.samples();
        out.set_item(
            "average_drain_time_ms",
            (!drains.is_empty()).then_some(g.average_drain_time_ms),
        )?;
        out.set_item(
            "average_reset_time_ms",
            (!resets.is_empty()).then_some(g.average_reset_time_ms),
        )?;
        out.set_item("last_completed_drain_seq_id", d.last_completed_drain_seq_id)?;
        out.set_item("last_completed_reset_seq_id", d.last_completed_reset_seq_id)?;
        out.set_item("drain_start_time_ms", ms_or_none(d.drain_start_time_ms))?;
        out.set_item("reset_start_time_ms", ms_or_none(d.reset_start_time_ms))?;
        out.set_item("drain_times_ms", drains)?;
        out.set_item("reset_times_ms", resets)?;
        out.set_item("checkpoint_requested", d.checkpoint_requested)?;
        out.set_item("drains_held", d.drains_held)?;
        out.set_item("start_clean", d.start_clean)?;
        Ok(out)
    }

    /// The eight gauge values now (order of `cr_gauge_names()`).
    fn gauges(&self) -> Vec<f64> {
        self.0.gauges().values().to_vec()
    }

    /// Applies one event; raises CrRejected (region unchanged) if it is refused.
    fn step(&mut self, py: Python<'_>, event: &CrEvent, now_ms: i64) -> PyResult<CrStep> {
        match self.0.apply(&event.0, now_ms) {
            Ok(out) => Ok(CrStep(Ok(out))),
            Err(r) => Err(rejected(py, &r)),
        }
    }

    /// Applies events in order at one instant; refusals are recorded, never raised.
    fn step_many(&mut self, events: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<CrBatch> {
        let mut steps = Vec::with_capacity(events.len().unwrap_or(0));
        for item in events.try_iter()? {
            let item = item?;
            let event = item.cast::<CrEvent>()?;
            steps.push(self.0.apply(&event.get().0, now_ms));
        }
        Ok(CrBatch { steps })
    }

    fn copy(&self) -> CrRegion {
        CrRegion(self.0.clone())
    }

    fn __repr__(&self) -> String {
        format!(
            "CrRegion(region_index={}, state={})",
            self.0.config().region_index,
            self.0.dynamic().state
        )
    }
}

/// Prometheus names of the eight gauges, in the order of `CrStep.gauges`.
#[pyfunction]
fn cr_gauge_names() -> Vec<&'static str> {
    GAUGE_NAMES.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CrRejected", py.get_type::<CrRejected>())?;
    m.add("CrInvalidRegion", py.get_type::<CrInvalidRegion>())?;
    m.add_class::<CrEvent>()?;
    m.add_class::<CrStep>()?;
    m.add_class::<CrBatch>()?;
    m.add_class::<CrRegion>()?;
    m.add_function(wrap_pyfunction!(cr_gauge_names, m)?)?;
    Ok(())
}
