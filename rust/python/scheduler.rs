//! The vreplica placement loop of `streams_k8s.scheduler`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::scheduler;

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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(place_vreplicas, m)?)
}
