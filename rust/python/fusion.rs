//! Fusion of a topology into PEs (`fuse`, `automatic_pe_count`, `FusionError`).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::fusion;

create_exception!(
    _native,
    FusionError,
    PyValueError,
    "Operators that must share a PE cannot; args: (constraint, (node, node))."
);

/// (colocations, exlocations, isolated, host_colocations, host_exlocations, host_isolated,
///  host_key, consistent_region, restartable, relocatable, jvm, channel)
type NodeTuple = (
    Vec<u32>,
    Vec<u32>,
    bool,
    Vec<u32>,
    Vec<u32>,
    bool,
    u32,
    Option<u32>,
    bool,
    bool,
    Option<u32>,
    Option<u32>,
);

/// (kind "more"|"fewer", asked, got, constraint, (node, node))
type NoticeTuple = (
    &'static str,
    usize,
    usize,
    Option<&'static str>,
    Option<(u32, u32)>,
);

fn node_spec(t: NodeTuple) -> fusion::NodeSpec {
    fusion::NodeSpec {
        colocations: t.0,
        exlocations: t.1,
        isolated: t.2,
        host_colocations: t.3,
        host_exlocations: t.4,
        host_isolated: t.5,
        host_key: t.6,
        consistent_region: t.7,
        restartable: t.8,
        relocatable: t.9,
        jvm: t.10,
        channel: t.11,
    }
}

/// Partitions interned topology nodes into PEs (see `fusion` module docs).
#[pyfunction]
#[pyo3(signature = (nodes, edges, *, manual = None, channel_policy = "noChannelInfluence", previous = None))]
fn fuse(
    py: Python<'_>,
    nodes: Vec<NodeTuple>,
    edges: Vec<(u32, u32)>,
    manual: Option<usize>,
    channel_policy: &str,
    previous: Option<Vec<Option<u32>>>,
) -> PyResult<(Vec<Vec<u32>>, Vec<NoticeTuple>)> {
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
    let specs: Vec<fusion::NodeSpec> = nodes.into_iter().map(node_spec).collect();
    let result = py.detach(|| match &previous {
        Some(prev) => fusion::refuse(&specs, &edges, mode, policy, prev),
        None => fusion::fuse(&specs, &edges, mode, policy),
    });
    match result {
        Ok(f) => {
            let notices = f
                .notices
                .into_iter()
                .map(|n| match n {
                    fusion::Notice::MorePes {
                        asked,
                        got,
                        constraint,
                        nodes,
                    } => ("more", asked, got, Some(constraint.name()), Some(nodes)),
                    fusion::Notice::FewerPes { asked, got } => ("fewer", asked, got, None, None),
                })
                .collect();
            Ok((f.pes, notices))
        }
        Err(e) => Err(FusionError::new_err((e.constraint.name(), e.nodes))),
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
    m.add_function(wrap_pyfunction!(fuse, m)?)?;
    m.add_function(wrap_pyfunction!(automatic_pe_count, m)?)
}
