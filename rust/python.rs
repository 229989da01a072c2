//! Python bindings (`streams_k8s._native`), one module per area: convert, call the core, convert back.

use pyo3::prelude::*;

mod cr_fsm;
mod fusion;
mod name_table;
mod properties;
mod scheduler;

pub(crate) use properties::properties_error;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", crate::VERSION)?;
    properties::register(m)?;
    name_table::register(m)?;
    fusion::register(m)?;
    scheduler::register(m)?;
    cr_fsm::register(m)?;
    Ok(())
}
