//! `render_aadl`: the AADL of a plan's PEs, read straight from the plan's objects by attribute
//! (the structs of `crate::aadl` name the attributes), rendered without the GIL.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use rustc_hash::FxHashMap;

use super::error_with;
use crate::aadl::{self, App, Edge, HostPool, Job, Member, Node, Pe, PeInput, PeOutput, PortIndex};

create_exception!(
    _native,
    AadlError,
    PyValueError,
    "A string the AADL cannot hold (XML 1.0 has no such character); `value` is the string."
);

/// A string XML cannot hold is the caller's (`AadlError`, with the string); an inconsistent plan
/// is a bug of the planner (`RuntimeError`).
fn aadl_error(py: Python<'_>, error: aadl::AadlError) -> PyErr {
    match &error {
        aadl::AadlError::NotXml { value } => {
            error_with::<AadlError>(py, error.to_string(), |e| e.setattr("value", value))
        }
        aadl::AadlError::Inconsistent { .. } => PyRuntimeError::new_err(error.to_string()),
    }
}

/// Strings stay Python's: borrowed, not copied.
type Str = PyBackedStr;

/// One `PlannedPe` with its nodes (from `topology.nodes`) and their connections.
fn pe(
    topology: &Bound<'_, PyAny>,
    nodes: &Bound<'_, PyAny>,
    planned: &Bound<'_, PyAny>,
) -> PyResult<Pe<Str>> {
    let py = planned.py();
    let indices: Vec<i64> = planned.getattr(intern!(py, "nodes"))?.extract()?;
    let members = indices
        .into_iter()
        .map(|index| {
            Ok(Member {
                node: nodes.get_item(index)?.extract::<Node<Str>>()?,
                into: topology
                    .call_method1(intern!(py, "edges_into"), (index,))?
                    .extract::<Vec<Edge<Str>>>()?,
                from: topology
                    .call_method1(intern!(py, "edges_from"), (index,))?
                    .extract::<Vec<Edge<Str>>>()?,
            })
        })
        .collect::<PyResult<_>>()?;
    Ok(Pe {
        id: planned.getattr(intern!(py, "id"))?.extract()?,
        index: planned.getattr(intern!(py, "index"))?.extract()?,
        members,
        inputs: planned
            .getattr(intern!(py, "inputs"))?
            .extract::<Vec<PeInput<Str>>>()?,
        outputs: planned
            .getattr(intern!(py, "outputs"))?
            .extract::<Vec<PeOutput<Str>>>()?,
    })
}

/// The AADL document of each of `pes` (`PlannedPe`s of `topology`), in order.
#[pyfunction]
#[pyo3(signature = (topology, pes, ports, *, job_name, job_id, given))]
fn render_aadl(
    py: Python<'_>,
    topology: &Bound<'_, PyAny>,
    pes: Vec<Bound<'_, PyAny>>,
    ports: PortIndex,
    job_name: Str,
    job_id: i64,
    given: FxHashMap<i64, Str>,
) -> PyResult<Vec<String>> {
    let job = Job {
        name: job_name,
        id: job_id,
        app: topology
            .getattr(intern!(py, "app"))?
            .extract::<App<Str>>()?,
        hostpools: topology
            .getattr(intern!(py, "hostpools"))?
            .extract::<Vec<HostPool<Str>>>()?,
        default_threading: topology
            .getattr(intern!(py, "default_threading"))?
            .extract()?,
        given,
    };
    let nodes = topology.getattr(intern!(py, "nodes"))?;
    let pes = pes
        .iter()
        .map(|planned| pe(topology, &nodes, planned))
        .collect::<PyResult<Vec<Pe<Str>>>>()?;
    py.detach(|| aadl::render(&job, &ports, &pes))
        .map_err(|error| aadl_error(py, error))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("AadlError", m.py().get_type::<AadlError>())?;
    m.add_function(wrap_pyfunction!(render_aadl, m)?)
}
