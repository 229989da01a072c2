//! Fusion: partition the topology's operators into processing elements (PEs).
//!
//! Sans-IO: the caller interns every string (colocation ids, host specs, …) into integers and
//! passes one [`NodeSpec`] per topology node plus the connections; the result is the list of PEs
//! as sorted node positions. See `docs` below for the algorithm.
//!
//! # Constraints (all hard)
//! - partition colocation: nodes sharing an id are one *fusable unit* (FU), always together;
//!   a host-isolated node's FU also absorbs every node host-colocated with it;
//! - partition isolation: the FU is alone in its PE; partition exlocation: an id at most once per PE;
//! - host: one resolved host spec (host, pool and in-pool index) per PE; a host exlocation id at
//!   most once per PE; host isolation never shares a PE with host-colocated operators;
//! - one consistent region (or none) per PE; equal restartable and relocatable flags;
//!   Java operators with different JVM arguments apart;
//! - fusion type: `channelIsolation` makes each parallel channel one FU that fuses with nothing
//!   else; `channelExlocation` keeps different channels apart; `noChannelInfluence` ignores them.
//!
//! # Modes
//! - legacy: one PE per FU;
//! - manual N: exactly N PEs unless constraints force more (a notice names the constraint) or there
//!   are fewer FUs than N;
//! - automatic: manual with N from [`automatic_target`]:
//!   `N = clamp(ceil(min_threads / cpu_limit), 1, ceil(max_threads / cpu_request))`, then at most
//!   the node count (when known) and the operator count; `min_threads` = sources + threaded input
//!   ports, `max_threads` = operators + threaded input ports, CPU in cores of one PE pod.
//!
//! # Algorithm (manual)
//! 1. Isolated FUs get their own PEs; the others share `k = N - isolated` PEs of balanced size
//!    `T = ceil(nodes / k)`.
//! 2. FUs are ordered depth-first along the dataflow, in topological order (a unit after all its
//!    upstream units, the most recently readied first), which lays each chain out to its end and
//!    brings a parallel region's channels together before their merge; feedback loops are broken at
//!    their lowest unit.
//! 3. Greedy placement in that order. While fewer than `k` PEs are open, the current PE takes its
//!    share of what is left (`ceil((left + in current) / PEs still to open)`), may overshoot it by
//!    3% to finish a short run rather than cut it off, and does not start a run it cannot finish
//!    when nearly full; then a new PE opens. Once `k` are open, an FU goes to the compatible PE it
//!    has most connections with (within `T`), else the emptiest compatible PE; when no PE is
//!    compatible a PE beyond N is opened and the constraint is reported.
//! 4. Refinement: a few passes move single FUs to the neighbouring PE they talk to most when that
//!    lowers the inter-PE connection count, keeps every PE non-empty and within 3% of `T`, and
//!    breaks no constraint.
//!
//! # Re-fusion ([`refuse`])
//! Given each node's previous PE, an FU whose nodes all shared one previous PE stays there; the
//! other FUs are placed with the PE they talk to most (within 3% of `T`), else the emptiest
//! compatible one. Untouched PEs keep exactly their operators, so their ids and AADL survive.
//!
//! Deterministic: every choice breaks ties by the lowest index.

mod agg;
mod partition;

pub use partition::{fuse, refuse};

/// One topology node, with every string interned by the caller.
#[derive(Clone, Debug, Default)]
pub struct NodeSpec {
    pub colocations: Vec<u32>,
    pub exlocations: Vec<u32>,
    pub isolated: bool,
    pub host_colocations: Vec<u32>,
    pub host_exlocations: Vec<u32>,
    pub host_isolated: bool,
    /// Interned resolved host spec (declared host, pool, in-pool index); equal keys may share a PE.
    pub host_key: u32,
    pub consistent_region: Option<u32>,
    pub restartable: bool,
    pub relocatable: bool,
    /// Interned JVM argument set; `None` for non-Java operators.
    pub jvm: Option<u32>,
    /// Interned parallel channel (innermost region and channel); `None` outside regions.
    pub channel: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelPolicy {
    NoInfluence,
    Isolation,
    Exlocation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Legacy,
    Manual(usize),
}

/// Why two sets of operators cannot share a PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constraint {
    PartitionIsolation,
    PartitionExlocation(u32),
    HostExlocation(u32),
    HostPlacement,
    HostIsolation,
    ConsistentRegion,
    Restartable,
    Relocatable,
    JvmArguments,
    Channel,
}

impl Constraint {
    pub fn name(self) -> &'static str {
        match self {
            Constraint::PartitionIsolation => "partitionIsolation",
            Constraint::PartitionExlocation(_) => "partitionExlocation",
            Constraint::HostExlocation(_) => "hostExlocation",
            Constraint::HostPlacement => "host placement",
            Constraint::HostIsolation => "hostIsolation",
            Constraint::ConsistentRegion => "consistent region",
            Constraint::Restartable => "restartable",
            Constraint::Relocatable => "relocatable",
            Constraint::JvmArguments => "JVM arguments",
            Constraint::Channel => "fusion type",
        }
    }
}

/// Operators that must be fused (same FU) but cannot be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsatisfiable {
    pub constraint: Constraint,
    /// Two conflicting node positions.
    pub nodes: (u32, u32),
}

/// Why the PE count differs from the one asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Constraints forced PEs beyond the target; one conflicting pair as an example.
    MorePes {
        asked: usize,
        got: usize,
        constraint: Constraint,
        nodes: (u32, u32),
    },
    /// Fewer fusable units than PEs asked for.
    FewerPes { asked: usize, got: usize },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fusion {
    /// Each PE as sorted node positions; PEs sorted by their smallest node.
    pub pes: Vec<Vec<u32>>,
    pub notices: Vec<Notice>,
}

/// Inputs of the automatic PE count.
#[derive(Clone, Copy, Debug)]
pub struct AutoInput {
    pub operators: usize,
    /// Threads the application needs at least: sources plus threaded input ports.
    pub min_threads: usize,
    /// Threads it can use at most: one per operator plus the threaded input ports.
    pub max_threads: usize,
    pub cpu_request_millis: u64,
    /// `None`: no limit, the request is the bound.
    pub cpu_limit_millis: Option<u64>,
    pub nodes: Option<usize>,
}

/// Automatic PE count.
///
/// ```text
/// lower = ceil(min_threads * 1000 / cpu_limit)     PEs needed so the always-busy threads fit
///                                                  the CPU a PE may burn
/// upper = ceil(max_threads * 1000 / cpu_request)   beyond this a PE gets more guaranteed CPU
///                                                  than all its threads can use
/// N     = clamp(lower, 1, upper), then ≤ nodes (when known) and ≤ operators, and ≥ 1
/// ```
/// (`cpu_limit` defaults to `cpu_request`; millicores below 1 count as 1.)
pub fn automatic_target(input: AutoInput) -> usize {
    let request = input.cpu_request_millis.max(1);
    let limit = input.cpu_limit_millis.unwrap_or(request).max(request);
    let ceil_div = |a: u64, b: u64| a.div_ceil(b);
    let lower = ceil_div(input.min_threads as u64 * 1000, limit) as usize;
    let upper = ceil_div(input.max_threads as u64 * 1000, request) as usize;
    let mut n = lower.clamp(1, upper.max(1));
    if let Some(nodes) = input.nodes {
        n = n.min(nodes.max(1));
    }
    n.min(input.operators).max(1)
}

#[cfg(test)]
mod tests;
