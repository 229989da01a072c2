//! Hot loop of the vreplica scheduler's plugin policy: place one vpod's vreplicas one at a
//! time over the schedulable pods with a free slot (filter, score, take the best; ties go to
//! the lowest ordinal), for policies made of built-in plugins only.
//!
//! The vpod starts with no vreplicas placed (the plugin policy re-places all of them), so the
//! input is just the pods' free slots and topology. Per vreplica the work is O(pods) plus
//! O(zones² + nodes²) for the spread penalties, computed once per step, never per pod.
//! Semantics are those of `streams_k8s.scheduler.plugins`; the Python test suite checks that
//! both give the same placements.

use std::fmt;

/// A built-in predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    PodFitsResources,
    NoMaxResourceCount { num_partitions: u32 },
    EvenPodSpread { max_skew: u32 },
}

/// A built-in scale-up priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    EvenPodSpread,
    AvailabilityNode,
    AvailabilityZone,
    LowestOrdinal,
}

/// A plugin name the native loop does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPlugin(pub String);

impl fmt::Display for UnknownPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no native implementation of plugin {:?}", self.0)
    }
}

impl std::error::Error for UnknownPlugin {}

impl Filter {
    pub fn from_name(name: &str, arg: u32) -> Result<Self, UnknownPlugin> {
        match name {
            "PodFitsResources" => Ok(Self::PodFitsResources),
            "NoMaxResourceCount" => Ok(Self::NoMaxResourceCount {
                num_partitions: arg,
            }),
            "EvenPodSpread" => Ok(Self::EvenPodSpread { max_skew: arg }),
            _ => Err(UnknownPlugin(name.to_owned())),
        }
    }
}

impl Priority {
    pub fn from_name(name: &str) -> Result<Self, UnknownPlugin> {
        match name {
            "EvenPodSpread" => Ok(Self::EvenPodSpread),
            "AvailabilityNodePriority" => Ok(Self::AvailabilityNode),
            "AvailabilityZonePriority" => Ok(Self::AvailabilityZone),
            "LowestOrdinalPriority" => Ok(Self::LowestOrdinal),
            _ => Err(UnknownPlugin(name.to_owned())),
        }
    }
}

/// The schedulable pods (ascending ordinals) with their free slots and topology.
#[derive(Clone, Debug, Default)]
pub struct Pods {
    pub ordinals: Vec<u32>,
    pub free: Vec<i64>,
    /// Index into the schedulable nodes / zones of each pod.
    pub node: Vec<u32>,
    pub zone: Vec<u32>,
    pub num_nodes: usize,
    pub num_zones: usize,
}

/// Where the vreplicas went (`(ordinal, vreplicas)`, ascending) and how many found no pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placed {
    pub placements: Vec<(u32, u32)>,
    pub left: u32,
}

/// Places up to `want` vreplicas of one vpod that holds none yet.
pub fn place(pods: &Pods, want: u32, filters: &[Filter], priorities: &[(Priority, u32)]) -> Placed {
    let mut pass = Pass::new(pods);
    let mut left = want;
    while left > 0 {
        match pass.best(filters, priorities) {
            Some(i) => pass.add(i),
            None => break,
        }
        left -= 1;
    }
    let mut placements: Vec<(u32, u32)> = pass
        .spread
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| (pods.ordinals[i], n))
        .collect();
    placements.sort_unstable();
    Placed { placements, left }
}

/// One vpod's spread while it is being placed, with the aggregates the plugins read.
struct Pass<'a> {
    pods: &'a Pods,
    free: Vec<i64>,
    spread: Vec<u32>,
    node_spread: Vec<i64>,
    zone_spread: Vec<i64>,
    /// spread value -> number of counted pods holding it (a pod counts unless it is full
    /// and holds none of this vpod).
    histogram: Vec<i64>,
    used_pods: usize,
}

impl<'a> Pass<'a> {
    fn new(pods: &'a Pods) -> Self {
        let counted = pods.free.iter().filter(|&&f| f > 0).count() as i64;
        Pass {
            pods,
            free: pods.free.clone(),
            spread: vec![0; pods.ordinals.len()],
            node_spread: vec![0; pods.num_nodes],
            zone_spread: vec![0; pods.num_zones],
            histogram: vec![counted],
            used_pods: 0,
        }
    }

    fn counted(&self, i: usize) -> bool {
        self.spread[i] > 0 || self.free[i] > 0
    }

    fn add(&mut self, i: usize) {
        if self.counted(i) {
            self.histogram[self.spread[i] as usize] -= 1;
        }
        if self.spread[i] == 0 {
            self.used_pods += 1;
        }
        self.spread[i] += 1;
        self.free[i] -= 1;
        self.node_spread[self.pods.node[i] as usize] += 1;
        self.zone_spread[self.pods.zone[i] as usize] += 1;
        let value = self.spread[i] as usize;
        if self.histogram.len() <= value {
            self.histogram.resize(value + 1, 0);
        }
        self.histogram[value] += 1;
    }

    /// (min, max, Σ|after − v|) over the counted pods other than one holding `cur`
    /// (`excluded` when that pod is itself counted).
    fn others(&self, cur: u32, excluded: bool) -> (Option<i64>, Option<i64>, i64) {
        let after = i64::from(cur) + 1;
        let (mut lo, mut hi, mut penalty) = (None, None, 0);
        for (value, &count) in self.histogram.iter().enumerate() {
            let count = count - i64::from(excluded && value as u32 == cur);
            if count <= 0 {
                continue;
            }
            let value = value as i64;
            lo.get_or_insert(value);
            hi = Some(value);
            penalty += count * (after - value).abs();
        }
        (lo, hi, penalty)
    }

    fn best(&self, filters: &[Filter], priorities: &[(Priority, u32)]) -> Option<usize> {
        let zone_penalty = skew_penalties(&self.zone_spread);
        let node_penalty = if priorities
            .iter()
            .any(|(p, _)| *p == Priority::AvailabilityNode)
        {
            skew_penalties(&self.node_spread)
        } else {
            Vec::new()
        };
        // EvenPodSpread depends on (this pod's spread, whether it is counted): memoised per step
        // as (largest skew after adding one here, total skew penalty).
        let mut even: Vec<[Option<(i64, i64)>; 2]> = vec![[None, None]; self.histogram.len() + 1];
        let mut best: Option<(usize, i128)> = None;
        for i in 0..self.pods.ordinals.len() {
            // A full pod never takes another vreplica, whatever the policy's predicates say.
            if self.free[i] <= 0 {
                continue;
            }
            let cur = self.spread[i];
            let counted = self.counted(i);
            let mut even_of = || -> (i64, i64) {
                *even[cur as usize][usize::from(counted)].get_or_insert_with(|| {
                    let after = i64::from(cur) + 1;
                    let (lo, hi, penalty) = self.others(cur, counted);
                    let skew = match (lo, hi) {
                        (Some(lo), Some(hi)) => (hi - after).max(after - lo),
                        _ => 0,
                    };
                    (skew, penalty)
                })
            };
            let fits = filters.iter().all(|f| match *f {
                Filter::PodFitsResources => self.free[i] > 0,
                Filter::NoMaxResourceCount { num_partitions } => {
                    cur > 0 || self.used_pods < num_partitions as usize
                }
                Filter::EvenPodSpread { max_skew } => even_of().0 <= i64::from(max_skew),
            });
            if !fits {
                continue;
            }
            let score: i128 = priorities
                .iter()
                .map(|&(p, weight)| {
                    let s = match p {
                        Priority::EvenPodSpread => -even_of().1,
                        Priority::AvailabilityZone => -zone_penalty[self.pods.zone[i] as usize],
                        Priority::AvailabilityNode => -node_penalty[self.pods.node[i] as usize],
                        Priority::LowestOrdinal => -i64::from(self.pods.ordinals[i]),
                    };
                    i128::from(weight) * i128::from(s)
                })
                .sum();
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((i, score));
            }
        }
        best.map(|(i, _)| i)
    }
}

/// For each slot k: Σ over the other slots j of |spread[k] + 1 − spread[j]|.
fn skew_penalties(spread: &[i64]) -> Vec<i64> {
    spread
        .iter()
        .enumerate()
        .map(|(k, &mine)| {
            spread
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, &other)| (mine + 1 - other).abs())
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods(zones: &[u32], free: &[i64], num_zones: usize) -> Pods {
        Pods {
            ordinals: (0..zones.len() as u32).collect(),
            free: free.to_vec(),
            node: (0..zones.len() as u32).collect(),
            zone: zones.to_vec(),
            num_nodes: zones.len(),
            num_zones,
        }
    }

    #[test]
    fn worked_example_s30() {
        // 3 pods in zones 0-2 and a fourth, empty zone (the unknown one).
        let p = pods(&[0, 1, 2], &[10, 10, 10], 4);
        let placed = place(
            &p,
            20,
            &[
                Filter::PodFitsResources,
                Filter::EvenPodSpread { max_skew: 2 },
            ],
            &[
                (Priority::LowestOrdinal, 2),
                (Priority::AvailabilityZone, 10),
            ],
        );
        assert_eq!(placed.placements, vec![(0, 7), (1, 7), (2, 6)]);
        assert_eq!(placed.left, 0);
    }

    #[test]
    fn shortfall_reports_what_is_left() {
        let p = pods(&[0, 0], &[1, 2], 1);
        let placed = place(
            &p,
            5,
            &[Filter::PodFitsResources],
            &[(Priority::LowestOrdinal, 1)],
        );
        assert_eq!(placed.placements, vec![(0, 1), (1, 2)]);
        assert_eq!(placed.left, 2);
    }

    #[test]
    fn partition_limit_caps_the_pods_used() {
        let p = pods(&[0, 1, 2], &[10, 10, 10], 3);
        let placed = place(
            &p,
            4,
            &[Filter::NoMaxResourceCount { num_partitions: 2 }],
            &[(Priority::AvailabilityZone, 1)],
        );
        assert_eq!(placed.placements, vec![(0, 2), (1, 2)]);
    }

    #[test]
    fn no_priorities_takes_the_lowest_feasible_ordinal() {
        let p = pods(&[0, 0, 0], &[0, 1, 5], 1);
        let placed = place(&p, 2, &[Filter::PodFitsResources], &[]);
        assert_eq!(placed.placements, vec![(1, 1), (2, 1)]);
    }

    #[test]
    fn capacity_holds_without_pod_fits_resources() {
        let p = pods(&[0, 0], &[1, 0], 1);
        let placed = place(&p, 3, &[], &[(Priority::LowestOrdinal, 1)]);
        assert_eq!(placed.placements, vec![(0, 1)]);
        assert_eq!(placed.left, 2);
    }

    #[test]
    fn unknown_plugins_are_refused() {
        assert!(Filter::from_name("Nope", 0).is_err());
        assert_eq!(
            Priority::from_name("LowestOrdinalPriority"),
            Ok(Priority::LowestOrdinal)
        );
    }
}
