//! `render_aadl`: the AADL of a plan's PEs, read straight from the plan's objects by attribute
//! (the structs of `crate::aadl` name the attributes), rendered without the GIL.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use rustc_hash::{FxHashMap, FxHashSet};

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

/// A `PlannedPe`, before its nodes are looked up.
#[derive(FromPyObject)]
struct Planned {
    id: i64,
    index: i64,
    nodes: Vec<i64>,
    inputs: Vec<PeInput<Str>>,
    outputs: Vec<PeOutput<Str>>,
}

/// Positions in [`Edges::all`] of the edges into (or out of) each node.
type ByNode = FxHashMap<i64, Vec<usize>>;

/// The connections touching the nodes to render, read once each from `topology.edges` (whose
/// order the topology's own edge index keeps), by destination and by source.
struct Edges {
    all: Vec<Edge<Str>>,
    into: ByNode,
    from: ByNode,
}

impl Edges {
    fn of(topology: &Bound<'_, PyAny>, wanted: &FxHashSet<i64>) -> PyResult<Self> {
        let py = topology.py();
        let mut edges = Edges {
            all: Vec::new(),
            into: FxHashMap::default(),
            from: FxHashMap::default(),
        };
        for item in topology.getattr(intern!(py, "edges"))?.try_iter()? {
            let item = item?;
            let src: i64 = item.getattr(intern!(py, "src"))?.extract()?;
            let dst: i64 = item.getattr(intern!(py, "dst"))?.extract()?;
            let (from_wanted, into_wanted) = (wanted.contains(&src), wanted.contains(&dst));
            if !(from_wanted || into_wanted) {
                continue;
            }
            let at = edges.all.len();
            edges.all.push(item.extract()?);
            if into_wanted {
                edges.into.entry(dst).or_default().push(at);
            }
            if from_wanted {
                edges.from.entry(src).or_default().push(at);
            }
        }
        Ok(edges)
    }

    fn of_node<'e>(&'e self, side: &ByNode, node: i64) -> Vec<&'e Edge<Str>> {
        side.get(&node)
            .map(|at| at.iter().map(|&i| &self.all[i]).collect())
            .unwrap_or_default()
    }
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
    let planned = pes
        .iter()
        .map(|pe| pe.extract::<Planned>())
        .collect::<PyResult<Vec<_>>>()?;
    let wanted: FxHashSet<i64> = planned
        .iter()
        .flat_map(|pe| pe.nodes.iter().copied())
        .collect();
    let edges = Edges::of(topology, &wanted)?;
    let nodes = topology.getattr(intern!(py, "nodes"))?;
    let pes = planned
        .into_iter()
        .map(|pe| {
            let members = pe
                .nodes
                .iter()
                .map(|&index| {
                    Ok(Member {
                        node: nodes.get_item(index)?.extract::<Node<Str>>()?,
                        into: edges.of_node(&edges.into, index),
                        from: edges.of_node(&edges.from, index),
                    })
                })
                .collect::<PyResult<_>>()?;
            Ok(Pe {
                id: pe.id,
                index: pe.index,
                members,
                inputs: pe.inputs,
                outputs: pe.outputs,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| aadl::render(&job, &ports, &pes))
        .map_err(|error| aadl_error(py, error))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("AadlError", m.py().get_type::<AadlError>())?;
    m.add_function(wrap_pyfunction!(render_aadl, m)?)
}
