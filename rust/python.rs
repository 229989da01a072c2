//! Python bindings (`streams_k8s._native`). Thin: convert, call the core, convert back.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::fusion;
use crate::properties;
use crate::scheduler;

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

/// Places up to `want` vreplicas of a vpod holding none yet over the schedulable pods
/// (built-in plugins only); `free` is indexed by ordinal. Returns `([(ordinal, vreplicas)], left)`.
#[pyfunction]
#[pyo3(signature = (ordinals, free, node, zone, num_nodes, num_zones, want, filters, priorities))]
#[allow(clippy::too_many_arguments)]
fn place_vreplicas(
    py: Python<'_>,
    ordinals: Vec<u32>,
    free: Vec<i64>,
    node: Vec<u32>,
    zone: Vec<u32>,
    num_nodes: usize,
    num_zones: usize,
    want: u32,
    filters: Vec<(String, u32)>,
    priorities: Vec<(String, u32)>,
) -> PyResult<(Vec<(u32, u32)>, u32)> {
    let n = ordinals.len();
    if node.len() != n || zone.len() != n {
        return Err(PyValueError::new_err(
            "ordinals, node and zone must have the same length",
        ));
    }
    let free = ordinals
        .iter()
        .map(|&o| free.get(o as usize).copied())
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| PyValueError::new_err("an ordinal has no free-capacity entry"))?;
    if node.iter().any(|&i| i as usize >= num_nodes)
        || zone.iter().any(|&i| i as usize >= num_zones)
    {
        return Err(PyValueError::new_err("node or zone index out of range"));
    }
    let unknown = |e: scheduler::UnknownPlugin| PyValueError::new_err(e.to_string());
    let filters = filters
        .iter()
        .map(|(name, arg)| scheduler::Filter::from_name(name, *arg))
        .collect::<Result<Vec<_>, _>>()
        .map_err(unknown)?;
    let priorities = priorities
        .iter()
        .map(|(name, weight)| scheduler::Priority::from_name(name).map(|p| (p, *weight)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(unknown)?;
    let pods = scheduler::Pods {
        ordinals,
        free,
        node,
        zone,
        num_nodes,
        num_zones,
    };
    let placed = py.detach(|| scheduler::place(&pods, want, &filters, &priorities));
    Ok((placed.placements, placed.left))
}

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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", crate::VERSION)?;
    m.add("PropertiesError", m.py().get_type::<PropertiesError>())?;
    m.add_function(wrap_pyfunction!(parse_properties, m)?)?;
    m.add_function(wrap_pyfunction!(place_vreplicas, m)?)?;
    cr_fsm::register(m)?;
    m.add("FusionError", m.py().get_type::<FusionError>())?;
    m.add_function(wrap_pyfunction!(fuse, m)?)?;
    m.add_function(wrap_pyfunction!(automatic_pe_count, m)?)?;
    Ok(())
}
