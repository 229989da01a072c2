//! Python bindings (`streams_k8s._native`), one module per area: convert, call the core, convert back.

use pyo3::prelude::*;
use pyo3::PyTypeInfo;

mod aadl;
mod adl;
mod adl_model;
mod cr_fsm;
mod fusion;
mod name_table;
mod properties;
mod scheduler;

pub(crate) use properties::properties_error;

/// An exception of type `E` carrying `message` and the named attributes `set` gives it: the
/// Python side reads what went wrong from the attributes, never by parsing the message.
pub(crate) fn error_with<E: PyTypeInfo>(
    py: Python<'_>,
    message: String,
    set: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<()>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let error = E::type_object(py).call1((message,))?;
        set(&error)?;
        Ok(PyErr::from_value(error))
    };
    build().unwrap_or_else(|failed| failed)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", crate::VERSION)?;
    properties::register(m)?;
    name_table::register(m)?;
    fusion::register(m)?;
    scheduler::register(m)?;
    cr_fsm::register(m)?;
    adl::register(m)?;
    aadl::register(m)?;
    Ok(())
}
