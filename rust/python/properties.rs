//! Java-properties parsing (`parse_properties`) and the `PropertiesError` every parser raises.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::properties::{self, LineError};

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
        Err(errors) => Err(properties_error(errors)),
    }
}

/// PropertiesError with every problem: args (summary, [(line, reason), ...]).
pub(crate) fn properties_error(errors: Vec<LineError>) -> PyErr {
    let summary = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let details: Vec<(usize, String)> = errors.into_iter().map(|e| (e.line, e.message)).collect();
    PropertiesError::new_err((summary, details))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PropertiesError", m.py().get_type::<PropertiesError>())?;
    m.add_function(wrap_pyfunction!(parse_properties, m)?)
}
