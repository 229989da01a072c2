//! Java-properties parsing (`parse_properties`) and the `PropertiesError` every parser raises.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::error_with;
use crate::properties::{self, LineError};

create_exception!(
    _native,
    PropertiesError,
    PyValueError,
    "Malformed Java-properties text; `problems` lists every (line, reason)."
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
        Err(errors) => Err(properties_error(py, errors)),
    }
}

/// PropertiesError with every problem: message "line N: reason; ...", `problems` [(line, reason)].
pub(crate) fn properties_error(py: Python<'_>, errors: Vec<LineError>) -> PyErr {
    let summary = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let problems: Vec<(usize, String)> = errors.into_iter().map(|e| (e.line, e.message)).collect();
    error_with::<PropertiesError>(py, summary, |e| e.setattr("problems", problems))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PropertiesError", m.py().get_type::<PropertiesError>())?;
    m.add_function(wrap_pyfunction!(parse_properties, m)?)
}
