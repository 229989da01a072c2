//! Constraint aggregates: what a fusable unit or a PE already holds, so a merge can be checked
//! in time proportional to the smaller side.

use super::{ChannelPolicy, Constraint, NodeSpec};

/// Count of members carrying each id (small: most operators carry none).
#[derive(Clone, Debug, Default)]
struct IdCounts(Vec<(u32, u32)>);

impl IdCounts {
    fn add(&mut self, id: u32, n: u32) {
        match self.0.iter_mut().find(|(k, _)| *k == id) {
            Some(entry) => entry.1 += n,
            None => self.0.push((id, n)),
        }
    }
    fn remove(&mut self, id: u32, n: u32) {
        if let Some(pos) = self.0.iter().position(|(k, _)| *k == id) {
            self.0[pos].1 -= n;
            if self.0[pos].1 == 0 {
                self.0.swap_remove(pos);
            }
        }
    }
    fn shares_with(&self, other: &IdCounts) -> Option<u32> {
        self.0
            .iter()
            .find(|(k, _)| other.0.iter().any(|(o, _)| o == k))
            .map(|(k, _)| *k)
    }
}

/// A value every member must agree on, with the number of members that carry one.
#[derive(Clone, Debug, Default)]
struct Shared<T: PartialEq + Copy> {
    value: Option<T>,
    count: u32,
}

impl<T: PartialEq + Copy> Shared<T> {
    fn add(&mut self, other: &Shared<T>) {
        if other.count > 0 {
            self.value = other.value;
            self.count += other.count;
        }
    }
    fn remove(&mut self, other: &Shared<T>) {
        self.count -= other.count;
        if self.count == 0 {
            self.value = None;
        }
    }
    fn conflicts(&self, other: &Shared<T>) -> bool {
        self.count > 0 && other.count > 0 && self.value != other.value
    }
    fn of(value: Option<T>) -> Self {
        Shared {
            value,
            count: u32::from(value.is_some()),
        }
    }
}

/// The constraint state of a set of operators (a fusable unit or a PE).
#[derive(Clone, Debug, Default)]
pub struct Agg {
    pub nodes: u32,
    pub isolated: u32,
    exlocations: IdCounts,
    host_exlocations: IdCounts,
    host_isolated: u32,
    host_colocated: u32,
    host: Shared<u32>,
    region: Shared<Option<u32>>,
    restartable: Shared<bool>,
    relocatable: Shared<bool>,
    jvm: Shared<u32>,
    channel: Shared<Option<u32>>,
}

impl Agg {
    pub fn of(node: &NodeSpec, policy: ChannelPolicy) -> Agg {
        let mut agg = Agg {
            nodes: 1,
            isolated: u32::from(node.isolated),
            host_isolated: u32::from(node.host_isolated),
            host_colocated: u32::from(!node.host_colocations.is_empty()),
            host: Shared::of(Some(node.host_key)),
            region: Shared::of(Some(node.consistent_region)),
            restartable: Shared::of(Some(node.restartable)),
            relocatable: Shared::of(Some(node.relocatable)),
            jvm: Shared::of(node.jvm),
            channel: match policy {
                ChannelPolicy::NoInfluence => Shared::default(),
                ChannelPolicy::Isolation => Shared::of(Some(node.channel)),
                ChannelPolicy::Exlocation => Shared::of(node.channel.map(Some)),
            },
            ..Agg::default()
        };
        for &id in &node.exlocations {
            agg.exlocations.add(id, 1);
        }
        for &id in &node.host_exlocations {
            agg.host_exlocations.add(id, 1);
        }
        agg
    }

    /// The first constraint that forbids `self` and `other` sharing a PE, if any.
    pub fn conflict(&self, other: &Agg) -> Option<Constraint> {
        self.conflict_within(other, false)
    }

    /// As [`Agg::conflict`]; `same_unit` skips the host-isolation check, because a fusable unit
    /// is built precisely to hold a host-isolated operator with the operators sharing its host.
    pub fn conflict_within(&self, other: &Agg, same_unit: bool) -> Option<Constraint> {
        if self.nodes == 0 || other.nodes == 0 {
            return None;
        }
        if self.isolated > 0 || other.isolated > 0 {
            return Some(Constraint::PartitionIsolation);
        }
        if let Some(id) = self.exlocations.shares_with(&other.exlocations) {
            return Some(Constraint::PartitionExlocation(id));
        }
        if let Some(id) = self.host_exlocations.shares_with(&other.host_exlocations) {
            return Some(Constraint::HostExlocation(id));
        }
        if self.host.conflicts(&other.host) {
            return Some(Constraint::HostPlacement);
        }
        if !same_unit
            && ((self.host_isolated > 0 && other.host_colocated > 0)
                || (other.host_isolated > 0 && self.host_colocated > 0))
        {
            return Some(Constraint::HostIsolation);
        }
        if self.region.conflicts(&other.region) {
            return Some(Constraint::ConsistentRegion);
        }
        if self.restartable.conflicts(&other.restartable) {
            return Some(Constraint::Restartable);
        }
        if self.relocatable.conflicts(&other.relocatable) {
            return Some(Constraint::Relocatable);
        }
        if self.jvm.conflicts(&other.jvm) {
            return Some(Constraint::JvmArguments);
        }
        if self.channel.conflicts(&other.channel) {
            return Some(Constraint::Channel);
        }
        None
    }

    pub fn add(&mut self, other: &Agg) {
        self.nodes += other.nodes;
        self.isolated += other.isolated;
        self.host_isolated += other.host_isolated;
        self.host_colocated += other.host_colocated;
        for &(id, n) in &other.exlocations.0 {
            self.exlocations.add(id, n);
        }
        for &(id, n) in &other.host_exlocations.0 {
            self.host_exlocations.add(id, n);
        }
        self.host.add(&other.host);
        self.region.add(&other.region);
        self.restartable.add(&other.restartable);
        self.relocatable.add(&other.relocatable);
        self.jvm.add(&other.jvm);
        self.channel.add(&other.channel);
    }

    pub fn remove(&mut self, other: &Agg) {
        self.nodes -= other.nodes;
        self.isolated -= other.isolated;
        self.host_isolated -= other.host_isolated;
        self.host_colocated -= other.host_colocated;
        for &(id, n) in &other.exlocations.0 {
            self.exlocations.remove(id, n);
        }
        for &(id, n) in &other.host_exlocations.0 {
            self.host_exlocations.remove(id, n);
        }
        self.host.remove(&other.host);
        self.region.remove(&other.region);
        self.restartable.remove(&other.restartable);
        self.relocatable.remove(&other.relocatable);
        self.jvm.remove(&other.jvm);
        self.channel.remove(&other.channel);
    }
}
