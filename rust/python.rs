//! Python bindings (`streams_k8s._native`). Thin: convert, call the core, convert back.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::properties;

mod cr_fsm;

create_exception!(
    _native,
    PropertiesError,
    PyValueError,
    "Malformed Java-properties text; args: (message, [(line, reason), ...])."
);

/// Parses Java-properties text into a dict (insertion order = file order).
#[pyfunction]
#[pyo3(signature = (text, *, strict = true))]
fn parse_properties<'py>(
    py: Python<'py>,
    text: &str,
    strict: bool,
) -> PyResult<Bound<'py, PyDict>> {
    match py.detach(|| properties::parse(text, strict)) {
        Ok(entries) => {
            let dict = PyDict::new(py);
            for entry in entries {
                dict.set_item(entry.key, entry.value)?;
            }
            Ok(dict)
        }
        Err(errors) => {
            let summary = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let details: Vec<(usize, String)> =
                errors.into_iter().map(|e| (e.line, e.message)).collect();
            Err(PropertiesError::new_err((summary, details)))
        }
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", crate::VERSION)?;
    m.add("PropertiesError", m.py().get_type::<PropertiesError>())?;
    m.add_function(wrap_pyfunction!(parse_properties, m)?)?;
    cr_fsm::register(m)?;
    Ok(())
}
