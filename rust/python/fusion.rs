//! Fusion of a topology into PEs (`fuse`, `FusionNode`, `FusionNotice`, `automatic_pe_count`,
//! `FusionError`).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::error_with;
use crate::fusion;

create_exception!(
    _native,
    FusionError,
    PyValueError,
    "Operators that must share a PE cannot; `constraint` says why, `nodes` which two nodes."
);

/// One topology node as the partitioner takes it, every string interned by the caller.
#[pyclass(module = "streams_k8s._native", frozen, get_all)]
pub struct FusionNode {
    colocations: Vec<u32>,
    exlocations: Vec<u32>,
    isolated: bool,
    host_colocations: Vec<u32>,
    host_exlocations: Vec<u32>,
    host_isolated: bool,
    host_key: u32,
    consistent_region: Option<u32>,
    restartable: bool,
    relocatable: bool,
    jvm: Option<u32>,
    channel: Option<u32>,
}

#[pymethods]
impl FusionNode {
    #[new]
    #[pyo3(signature = (
        *, colocations, exlocations, isolated, host_colocations, host_exlocations, host_isolated,
        host_key, consistent_region, restartable, relocatable, jvm, channel,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        colocations: Vec<u32>,
        exlocations: Vec<u32>,
        isolated: bool,
        host_colocations: Vec<u32>,
        host_exlocations: Vec<u32>,
        host_isolated: bool,
        host_key: u32,
        consistent_region: Option<u32>,
        restartable: bool,
        relocatable: bool,
        jvm: Option<u32>,
        channel: Option<u32>,
    ) -> Self {
        FusionNode {
            colocations,
            exlocations,
            isolated,
            host_colocations,
            host_exlocations,
            host_isolated,
            host_key,
            consistent_region,
            restartable,
            relocatable,
            jvm,
            channel,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "FusionNode(colocations={:?}, exlocations={:?}, isolated={}, host_colocations={:?}, \
             host_exlocations={:?}, host_isolated={}, host_key={}, consistent_region={}, \
             restartable={}, relocatable={}, jvm={}, channel={})",
            self.colocations,
            self.exlocations,
            py_bool(self.isolated),
            self.host_colocations,
            self.host_exlocations,
            py_bool(self.host_isolated),
            self.host_key,
            py_option(self.consistent_region),
            py_bool(self.restartable),
            py_bool(self.relocatable),
            py_option(self.jvm),
            py_option(self.channel),
        )
    }
}

impl FusionNode {
    fn spec(&self) -> fusion::NodeSpec {
        fusion::NodeSpec {
            colocations: self.colocations.clone(),
            exlocations: self.exlocations.clone(),
            isolated: self.isolated,
            host_colocations: self.host_colocations.clone(),
            host_exlocations: self.host_exlocations.clone(),
            host_isolated: self.host_isolated,
            host_key: self.host_key,
            consistent_region: self.consistent_region,
            restartable: self.restartable,
            relocatable: self.relocatable,
            jvm: self.jvm,
            channel: self.channel,
        }
    }
}

fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

fn py_option<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

/// Why the PE count differs from the one asked for.
#[pyclass(module = "streams_k8s._native", frozen, get_all)]
pub struct FusionNotice {
    /// `more` (a constraint forced extra PEs) or `fewer` (fewer fusable units than asked).
    kind: &'static str,
    asked: usize,
    got: usize,
    /// The constraint that forced more PEs (`more` only).
    constraint: Option<&'static str>,
    /// The two nodes it kept apart, the same node twice for an isolated one (`more` only).
    nodes: Option<(u32, u32)>,
}

#[pymethods]
impl FusionNotice {
    fn __repr__(&self) -> String {
        format!(
            "FusionNotice(kind='{}', asked={}, got={}, constraint={}, nodes={})",
            self.kind,
            self.asked,
            self.got,
            py_option(self.constraint.map(|c| format!("'{c}'"))),
            py_option(self.nodes.map(|(a, b)| format!("({a}, {b})"))),
        )
    }
}

impl From<fusion::Notice> for FusionNotice {
    fn from(notice: fusion::Notice) -> Self {
        match notice {
            fusion::Notice::MorePes {
                asked,
                got,
                constraint,
                nodes,
            } => FusionNotice {
                kind: "more",
                asked,
                got,
                constraint: Some(constraint.name()),
                nodes: Some(nodes),
            },
            fusion::Notice::FewerPes { asked, got } => FusionNotice {
                kind: "fewer",
                asked,
                got,
                constraint: None,
                nodes: None,
            },
        }
    }
}

/// Partitions topology nodes into PEs (see `fusion` module docs).
#[pyfunction]
#[pyo3(signature = (nodes, edges, *, manual = None, channel_policy = "noChannelInfluence", previous = None))]
fn fuse(
    py: Python<'_>,
    nodes: Vec<PyRef<'_, FusionNode>>,
    edges: Vec<(u32, u32)>,
    manual: Option<usize>,
    channel_policy: &str,
    previous: Option<Vec<Option<u32>>>,
) -> PyResult<(Vec<Vec<u32>>, Vec<FusionNotice>)> {
    let policy = match channel_policy {
        "noChannelInfluence" => fusion::ChannelPolicy::NoInfluence,
        "channelIsolation" => fusion::ChannelPolicy::Isolation,
        "channelExlocation" => fusion::ChannelPolicy::Exlocation,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown fusion type '{other}'"
            )))
        }
    };
    let mode = match manual {
        Some(0) => return Err(PyValueError::new_err("manual fusion needs at least 1 PE")),
        Some(n) => fusion::Mode::Manual(n),
        None => fusion::Mode::Legacy,
    };
    let count = nodes.len() as u32;
    if let Some(&(a, b)) = edges.iter().find(|&&(a, b)| a >= count || b >= count) {
        return Err(PyValueError::new_err(format!(
            "edge ({a}, {b}) names a node beyond {count}"
        )));
    }
    if previous.as_ref().is_some_and(|p| p.len() != nodes.len()) {
        return Err(PyValueError::new_err(
            "previous must give one entry per node",
        ));
    }
    let specs: Vec<fusion::NodeSpec> = nodes.iter().map(|n| n.spec()).collect();
    let result = py.detach(|| match &previous {
        Some(prev) => fusion::refuse(&specs, &edges, mode, policy, prev),
        None => fusion::fuse(&specs, &edges, mode, policy),
    });
    match result {
        Ok(f) => Ok((f.pes, f.notices.into_iter().map(Into::into).collect())),
        Err(e) => {
            let (a, b) = e.nodes;
            let constraint = e.constraint.name();
            let message = format!(
                "nodes {a} and {b} must share a PE but their {constraint} constraints forbid it"
            );
            Err(error_with::<FusionError>(py, message, |err| {
                err.setattr("constraint", constraint)?;
                err.setattr("nodes", e.nodes)
            }))
        }
    }
}

/// The automatic PE count (formula in the `fusion` module docs).
#[pyfunction]
#[pyo3(signature = (operators, min_threads, max_threads, cpu_request_millis, cpu_limit_millis = None, nodes = None))]
fn automatic_pe_count(
    operators: usize,
    min_threads: usize,
    max_threads: usize,
    cpu_request_millis: u64,
    cpu_limit_millis: Option<u64>,
    nodes: Option<usize>,
) -> usize {
    fusion::automatic_target(fusion::AutoInput {
        operators,
        min_threads,
        max_threads,
        cpu_request_millis,
        cpu_limit_millis,
        nodes,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FusionError", m.py().get_type::<FusionError>())?;
    m.add_class::<FusionNode>()?;
    m.add_class::<FusionNotice>()?;
    m.add_function(wrap_pyfunction!(fuse, m)?)?;
    m.add_function(wrap_pyfunction!(automatic_pe_count, m)?)
}
