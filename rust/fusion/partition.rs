//! The partitioner behind [`super::fuse`]: fusable units, greedy placement, refinement.

use std::collections::HashMap;

use super::agg::Agg;
use super::{ChannelPolicy, Constraint, Fusion, Mode, NodeSpec, Notice, Unsatisfiable};

const REFINE_PASSES: usize = 4;

struct UnionFind(Vec<u32>);

impl UnionFind {
    fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let parent = self.0[self.0[x as usize] as usize];
            self.0[x as usize] = parent;
            x = parent;
        }
        x
    }
    /// The smaller root wins, so the result does not depend on union order.
    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.0[hi as usize] = lo;
        }
    }
}

fn union_by_key<'a>(uf: &mut UnionFind, keyed: impl Iterator<Item = (u32, &'a [u32])>) {
    let mut first: HashMap<u32, u32> = HashMap::new();
    for (node, keys) in keyed {
        for &key in keys {
            let head = *first.entry(key).or_insert(node);
            uf.union(head, node);
        }
    }
}

/// Fusable units: transitive closure of partition colocation (plus the implied colocations).
fn fusable_units(nodes: &[NodeSpec], policy: ChannelPolicy) -> Vec<Vec<u32>> {
    let n = nodes.len() as u32;
    let mut uf = UnionFind((0..n).collect());
    union_by_key(
        &mut uf,
        (0..n).map(|i| (i, nodes[i as usize].colocations.as_slice())),
    );
    if policy == ChannelPolicy::Isolation {
        let channels: Vec<[u32; 1]> = nodes
            .iter()
            .map(|s| [s.channel.unwrap_or(u32::MAX)])
            .collect();
        union_by_key(
            &mut uf,
            (0..n)
                .filter(|&i| nodes[i as usize].channel.is_some())
                .map(|i| (i, channels[i as usize].as_slice())),
        );
    }
    // A host-isolated operator takes along every operator that must share its host.
    let isolated_ids: Vec<u32> = nodes
        .iter()
        .filter(|s| s.host_isolated)
        .flat_map(|s| s.host_colocations.iter().copied())
        .collect();
    if !isolated_ids.is_empty() {
        union_by_key(
            &mut uf,
            (0..n)
                .map(|i| (i, nodes[i as usize].host_colocations.as_slice()))
                .map(|(i, ids)| {
                    let keep = ids.iter().any(|id| isolated_ids.contains(id));
                    (i, if keep { ids } else { &[][..] })
                }),
        );
    }
    let mut unit_of_root: HashMap<u32, usize> = HashMap::new();
    let mut units: Vec<Vec<u32>> = Vec::new();
    for i in 0..n {
        let root = uf.find(i);
        let unit = *unit_of_root.entry(root).or_insert_with(|| {
            units.push(Vec::new());
            units.len() - 1
        });
        units[unit].push(i);
    }
    units
}

fn conflicting_pair(nodes: &[NodeSpec], a: &[u32], b: &[u32], policy: ChannelPolicy) -> (u32, u32) {
    for &x in a.iter().take(256) {
        let ax = Agg::of(&nodes[x as usize], policy);
        for &y in b.iter().take(256) {
            if ax.conflict(&Agg::of(&nodes[y as usize], policy)).is_some() {
                return (x.min(y), x.max(y));
            }
        }
    }
    (a[0].min(b[0]), a[0].max(b[0]))
}

fn unit_aggs(
    nodes: &[NodeSpec],
    units: &[Vec<u32>],
    policy: ChannelPolicy,
) -> Result<Vec<Agg>, Unsatisfiable> {
    let mut aggs = Vec::with_capacity(units.len());
    for unit in units {
        let mut agg = Agg::default();
        for (pos, &node) in unit.iter().enumerate() {
            let one = Agg::of(&nodes[node as usize], policy);
            if let Some(constraint) = agg.conflict_within(&one, true) {
                let pair = conflicting_pair(nodes, &unit[..pos], &[node], policy);
                return Err(Unsatisfiable {
                    constraint,
                    nodes: pair,
                });
            }
            agg.add(&one);
        }
        aggs.push(agg);
    }
    Ok(aggs)
}

/// Weighted unit graph: `out[u]`/`inn[u]` are downstream/upstream units with connection counts.
struct UnitGraph {
    out: Vec<Vec<(u32, u32)>>,
    inn: Vec<Vec<(u32, u32)>>,
}

fn unit_graph(unit_of: &[u32], units: usize, edges: &[(u32, u32)]) -> UnitGraph {
    let mut pairs: Vec<(u32, u32)> = edges
        .iter()
        .map(|&(a, b)| (unit_of[a as usize], unit_of[b as usize]))
        .filter(|(a, b)| a != b)
        .collect();
    pairs.sort_unstable();
    let mut out = vec![Vec::new(); units];
    let mut inn = vec![Vec::new(); units];
    let mut i = 0;
    while i < pairs.len() {
        let mut j = i;
        while j < pairs.len() && pairs[j] == pairs[i] {
            j += 1;
        }
        let (a, b) = pairs[i];
        let w = (j - i) as u32;
        out[a as usize].push((b, w));
        inn[b as usize].push((a, w));
        i = j;
    }
    for list in &mut inn {
        list.sort_unstable();
    }
    UnitGraph { out, inn }
}

/// Depth-first topological order: a unit comes after all its upstream units, and the most recently
/// readied unit goes next, so a chain is laid out to its end and the channels of a parallel region
/// come together before the merge. Cycles (feedback loops) are broken at the lowest pending unit.
fn dataflow_order(graph: &UnitGraph, skip: &[bool]) -> Vec<u32> {
    let units = graph.out.len();
    let mut pending: Vec<u32> = graph.inn.iter().map(|up| up.len() as u32).collect();
    let mut done = vec![false; units];
    let mut order = Vec::with_capacity(units);
    let mut stack: Vec<u32> = (0..units as u32)
        .rev()
        .filter(|&u| pending[u as usize] == 0)
        .collect();
    let mut next_unvisited = 0usize;
    let mut emitted = 0usize;
    while emitted < units {
        let u = match stack.pop() {
            Some(u) => u,
            None => {
                // a cycle: start it at its lowest unit
                while done[next_unvisited] {
                    next_unvisited += 1;
                }
                next_unvisited as u32
            }
        };
        if std::mem::replace(&mut done[u as usize], true) {
            continue;
        }
        emitted += 1;
        if !skip[u as usize] {
            order.push(u);
        }
        for &(v, _) in graph.out[u as usize].iter().rev() {
            let p = &mut pending[v as usize];
            *p = p.saturating_sub(1);
            if *p == 0 && !done[v as usize] {
                stack.push(v);
            }
        }
    }
    order
}

struct Placement<'a> {
    aggs: &'a [Agg],
    graph: &'a UnitGraph,
    pe_of: Vec<u32>,
    pes: Vec<Agg>,
    scratch: Vec<u32>,
    touched: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Placement<'_> {
    /// Connection weight from `unit` to each PE holding one of its neighbours (in `touched`).
    fn neighbour_weights(&mut self, unit: u32) {
        for &p in &self.touched {
            self.scratch[p as usize] = 0;
        }
        self.touched.clear();
        let g = self.graph;
        for &(v, w) in g.out[unit as usize].iter().chain(&g.inn[unit as usize]) {
            let p = self.pe_of[v as usize];
            if p == NONE {
                continue;
            }
            if self.scratch[p as usize] == 0 {
                self.touched.push(p);
            }
            self.scratch[p as usize] += w;
        }
    }

    fn fits(&self, pe: u32, unit: u32, cap: u32) -> bool {
        let agg = &self.aggs[unit as usize];
        self.pes[pe as usize].nodes + agg.nodes <= cap
            && self.pes[pe as usize].conflict(agg).is_none()
    }

    fn assign(&mut self, unit: u32, pe: u32) {
        if pe as usize == self.pes.len() {
            self.pes.push(Agg::default());
            self.scratch.push(0);
        }
        self.pes[pe as usize].add(&self.aggs[unit as usize]);
        self.pe_of[unit as usize] = pe;
    }

    fn best_neighbour(&self, unit: u32, cap: u32, exclude: u32) -> Option<(u32, u32)> {
        let mut best: Option<(u32, u32)> = None;
        for &p in &self.touched {
            let w = self.scratch[p as usize];
            if p == exclude || !self.fits(p, unit, cap) {
                continue;
            }
            if best.is_none_or(|(bp, bw)| w > bw || (w == bw && p < bp)) {
                best = Some((p, w));
            }
        }
        best
    }

    fn emptiest(&self, unit: u32, cap: u32) -> Option<u32> {
        (0..self.pes.len() as u32)
            .filter(|&p| self.fits(p, unit, cap))
            .min_by_key(|&p| (self.pes[p as usize].nodes, p))
    }
}

fn place(
    aggs: &[Agg],
    graph: &UnitGraph,
    order: &[u32],
    k: usize,
) -> (Vec<u32>, Option<(u32, u32)>) {
    let total: u32 = order.iter().map(|&u| aggs[u as usize].nodes).sum();
    let cap = total.div_ceil(k.max(1) as u32).max(1);
    let mut pl = Placement {
        aggs,
        graph,
        pe_of: vec![NONE; aggs.len()],
        pes: Vec::new(),
        scratch: Vec::new(),
        touched: Vec::new(),
    };
    let runs = run_lengths(graph, aggs, order);
    let mut overflow = None;
    let mut current: Option<u32> = None;
    let mut left = total;
    for (pos, &unit) in order.iter().enumerate() {
        pl.neighbour_weights(unit);
        // While PEs are still to be opened, the current one takes its share of what is left.
        let opened = pl.pes.len();
        let share = |c: u32| {
            let ahead = (k + 1).saturating_sub(opened).max(1) as u32;
            (left + pl.pes[c as usize].nodes)
                .div_ceil(ahead)
                .clamp(1, cap)
        };
        let limit = |c: u32| if opened < k { share(c) } else { cap };
        // A short rest of a chain may overshoot the share by 3% rather than be cut off alone.
        let finishes_run = |c: u32| {
            let size = pl.pes[c as usize].nodes + aggs[unit as usize].nodes + runs[pos];
            pl.scratch[c as usize] > 0 && size <= with_slack(limit(c)) && pl.fits(c, unit, u32::MAX)
        };
        // ... and a nearly full PE does not start a run it cannot finish.
        let starts_run_late = |c: u32| {
            let have = pl.pes[c as usize].nodes;
            let run = aggs[unit as usize].nodes + runs[pos];
            pl.scratch[c as usize] == 0 && have + run > limit(c) && with_slack(have) >= limit(c)
        };
        let keep = |c: u32| (pl.fits(c, unit, limit(c)) && !starts_run_late(c)) || finishes_run(c);
        let choice = match current.filter(|&c| keep(c)) {
            Some(c) => c,
            None if opened < k => opened as u32,
            None => match pl.best_neighbour(unit, cap, NONE) {
                Some((p, _)) => p,
                None => match pl
                    .emptiest(unit, cap)
                    .or_else(|| pl.emptiest(unit, u32::MAX))
                {
                    Some(p) => p,
                    None => {
                        if overflow.is_none() {
                            overflow = Some((unit, 0));
                        }
                        pl.pes.len() as u32
                    }
                },
            },
        };
        left -= aggs[unit as usize].nodes;
        pl.assign(unit, choice);
        current = Some(choice);
    }
    refine(&mut pl, order, cap + (cap * 3 / 100).max(1));
    (pl.pe_of, overflow)
}

/// `size` plus the 3% imbalance a PE may take to keep a run whole (none below 34 nodes, where
/// one node is already more than 3%).
fn with_slack(size: u32) -> u32 {
    size + size * 3 / 100
}

/// For each position in `order`, the nodes of the units right after it that continue its run
/// (connected to the unit before them, or fed by the same upstream unit, like parallel channels).
fn run_lengths(graph: &UnitGraph, aggs: &[Agg], order: &[u32]) -> Vec<u32> {
    let connected = |a: u32, b: u32| {
        graph.out[a as usize].iter().any(|&(v, _)| v == b)
            || graph.inn[a as usize].iter().any(|&(v, _)| v == b)
    };
    let siblings = |a: u32, b: u32| {
        graph.inn[b as usize]
            .first()
            .is_some_and(|&(up, _)| graph.inn[a as usize].iter().any(|&(v, _)| v == up))
    };
    let mut runs = vec![0u32; order.len()];
    for i in (0..order.len().saturating_sub(1)).rev() {
        let (a, b) = (order[i], order[i + 1]);
        if connected(a, b) || siblings(a, b) {
            runs[i] = aggs[b as usize].nodes + runs[i + 1];
        }
    }
    runs
}

fn place_sticky(
    aggs: &[Agg],
    graph: &UnitGraph,
    order: &[u32],
    k: usize,
    units: &[Vec<u32>],
    previous: &[Option<u32>],
) -> (Vec<u32>, Option<(u32, u32)>) {
    let total: u32 = order.iter().map(|&u| aggs[u as usize].nodes).sum();
    let cap = with_slack(total.div_ceil(k.max(1) as u32).max(1));
    let mut pl = Placement {
        aggs,
        graph,
        pe_of: vec![NONE; aggs.len()],
        pes: Vec::new(),
        scratch: Vec::new(),
        touched: Vec::new(),
    };
    // Previous PEs, densely renumbered in dataflow order of their first kept unit.
    let mut dense: HashMap<u32, u32> = HashMap::new();
    let mut unplaced = Vec::new();
    for &unit in order {
        let members = &units[unit as usize];
        let group = previous[members[0] as usize];
        let kept = group.filter(|g| members.iter().all(|&n| previous[n as usize] == Some(*g)));
        let Some(g) = kept else {
            unplaced.push(unit);
            continue;
        };
        let next = dense.len() as u32;
        let pe = *dense.entry(g).or_insert(next);
        if pe as usize == pl.pes.len() || pl.fits(pe, unit, u32::MAX) {
            pl.assign(unit, pe);
        } else {
            unplaced.push(unit);
        }
    }
    let mut overflow = None;
    for unit in unplaced {
        pl.neighbour_weights(unit);
        let choice = match pl.best_neighbour(unit, cap, NONE) {
            Some((p, _)) => p,
            None if pl.pes.len() < k => pl.pes.len() as u32,
            None => match pl
                .emptiest(unit, cap)
                .or_else(|| pl.emptiest(unit, u32::MAX))
            {
                Some(p) => p,
                None => {
                    if overflow.is_none() {
                        overflow = Some((unit, 0));
                    }
                    pl.pes.len() as u32
                }
            },
        };
        pl.assign(unit, choice);
    }
    (pl.pe_of, overflow)
}

fn refine(pl: &mut Placement<'_>, order: &[u32], max_size: u32) {
    for _ in 0..REFINE_PASSES {
        let mut moved = false;
        for &unit in order {
            let own = pl.pe_of[unit as usize];
            let agg = &pl.aggs[unit as usize];
            if pl.pes[own as usize].nodes == agg.nodes {
                continue; // never empty a PE: the PE count is what the user asked for
            }
            pl.neighbour_weights(unit);
            let own_weight = if pl.touched.contains(&own) {
                pl.scratch[own as usize]
            } else {
                0
            };
            if let Some((target, w)) = pl.best_neighbour(unit, max_size, own) {
                if w > own_weight {
                    let agg = &pl.aggs[unit as usize];
                    pl.pes[own as usize].remove(agg);
                    pl.pes[target as usize].add(agg);
                    pl.pe_of[unit as usize] = target;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
}

/// Partitions `nodes` (connected by `edges`, node positions) into PEs. See the module docs.
pub fn fuse(
    nodes: &[NodeSpec],
    edges: &[(u32, u32)],
    mode: Mode,
    policy: ChannelPolicy,
) -> Result<Fusion, Unsatisfiable> {
    partition(nodes, edges, mode, policy, None)
}

/// Re-fusion after a change: `previous[n]` is the PE node `n` was in (`None` for new nodes).
/// A fusable unit whose nodes all shared one previous PE stays there; the others are placed, in
/// dataflow order, with the PE they have most connections with (within 3% of the balanced size),
/// else in the emptiest compatible PE. Nothing else moves, so untouched PEs keep their operators.
pub fn refuse(
    nodes: &[NodeSpec],
    edges: &[(u32, u32)],
    mode: Mode,
    policy: ChannelPolicy,
    previous: &[Option<u32>],
) -> Result<Fusion, Unsatisfiable> {
    partition(nodes, edges, mode, policy, Some(previous))
}

fn partition(
    nodes: &[NodeSpec],
    edges: &[(u32, u32)],
    mode: Mode,
    policy: ChannelPolicy,
    previous: Option<&[Option<u32>]>,
) -> Result<Fusion, Unsatisfiable> {
    let units = fusable_units(nodes, policy);
    let aggs = unit_aggs(nodes, &units, policy)?;
    let mut unit_of = vec![0u32; nodes.len()];
    for (u, members) in units.iter().enumerate() {
        for &n in members {
            unit_of[n as usize] = u as u32;
        }
    }
    let mut notices = Vec::new();
    let pe_of_unit: Vec<u32> = match mode {
        Mode::Legacy => (0..units.len() as u32).collect(),
        Mode::Manual(asked) => {
            let graph = unit_graph(&unit_of, units.len(), edges);
            let isolated: Vec<bool> = aggs.iter().map(|a| a.isolated > 0).collect();
            let order = dataflow_order(&graph, &isolated);
            let alone = isolated.iter().filter(|&&i| i).count();
            let k = asked.saturating_sub(alone).max(1).min(order.len().max(1));
            let (mut pe_of, overflow) = match previous {
                None => place(&aggs, &graph, &order, k),
                Some(prev) => place_sticky(&aggs, &graph, &order, k, &units, prev),
            };
            let shared = pe_of
                .iter()
                .filter(|&&p| p != NONE)
                .max()
                .map_or(0, |&p| p + 1);
            let mut next = shared;
            for (u, &iso) in isolated.iter().enumerate() {
                if iso {
                    pe_of[u] = next;
                    next += 1;
                }
            }
            let got = next as usize;
            if got > asked {
                let (constraint, pair) =
                    explain_overflow(nodes, &units, &aggs, &pe_of, overflow, policy);
                notices.push(Notice::MorePes {
                    asked,
                    got,
                    constraint,
                    nodes: pair,
                });
            } else if got < asked {
                notices.push(Notice::FewerPes { asked, got });
            }
            pe_of
        }
    };
    let count = pe_of_unit.iter().max().map_or(0, |&p| p as usize + 1);
    let mut pes: Vec<Vec<u32>> = vec![Vec::new(); count];
    for (u, members) in units.iter().enumerate() {
        pes[pe_of_unit[u] as usize].extend_from_slice(members);
    }
    pes.retain(|pe| !pe.is_empty());
    for pe in &mut pes {
        pe.sort_unstable();
    }
    pes.sort_unstable_by_key(|pe| pe[0]);
    Ok(Fusion { pes, notices })
}

/// A constraint and operator pair that explain why more PEs than asked were needed.
fn explain_overflow(
    nodes: &[NodeSpec],
    units: &[Vec<u32>],
    aggs: &[Agg],
    pe_of: &[u32],
    overflow: Option<(u32, u32)>,
    policy: ChannelPolicy,
) -> (Constraint, (u32, u32)) {
    let culprit = overflow
        .map(|(u, _)| u as usize)
        .or_else(|| aggs.iter().position(|a| a.isolated > 0));
    let Some(u) = culprit else {
        return (Constraint::PartitionIsolation, (units[0][0], units[0][0]));
    };
    if aggs[u].isolated > 0 {
        return (Constraint::PartitionIsolation, (units[u][0], units[u][0]));
    }
    // Compare with the units placed in other PEs to find a pairwise conflict.
    for (v, other) in aggs.iter().enumerate() {
        if v != u && pe_of[v] != pe_of[u] {
            if let Some(constraint) = aggs[u].conflict(other) {
                let pair = conflicting_pair(nodes, &units[u], &units[v], policy);
                return (constraint, pair);
            }
        }
    }
    (Constraint::PartitionIsolation, (units[u][0], units[u][0]))
}
