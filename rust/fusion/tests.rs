use super::*;

fn node() -> NodeSpec {
    NodeSpec {
        restartable: true,
        relocatable: true,
        ..NodeSpec::default()
    }
}

fn chain(n: u32) -> Vec<(u32, u32)> {
    (1..n).map(|i| (i - 1, i)).collect()
}

fn pe_of(f: &Fusion, node: u32) -> usize {
    f.pes.iter().position(|pe| pe.contains(&node)).unwrap()
}

#[test]
fn legacy_is_one_pe_per_unit() {
    let mut nodes = vec![node(); 4];
    nodes[1].colocations = vec![7];
    nodes[3].colocations = vec![7];
    let f = fuse(&nodes, &chain(4), Mode::Legacy, ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(f.pes, vec![vec![0], vec![1, 3], vec![2]]);
}

#[test]
fn manual_gives_exactly_n_balanced_chains() {
    let nodes = vec![node(); 100];
    let f = fuse(
        &nodes,
        &chain(100),
        Mode::Manual(4),
        ChannelPolicy::NoInfluence,
    )
    .unwrap();
    assert_eq!(f.pes.len(), 4);
    assert!(f.notices.is_empty());
    for pe in &f.pes {
        assert_eq!(pe.len(), 25);
        assert_eq!(
            pe.last().unwrap() - pe[0],
            24,
            "a chain is cut into contiguous pieces"
        );
    }
}

#[test]
fn conflicting_hosts_force_more_pes_with_a_reason() {
    let mut nodes = vec![node(); 2];
    nodes[0].host_key = 1;
    nodes[1].host_key = 2;
    let f = fuse(
        &nodes,
        &chain(2),
        Mode::Manual(1),
        ChannelPolicy::NoInfluence,
    )
    .unwrap();
    assert_eq!(f.pes.len(), 2);
    assert_eq!(
        f.notices,
        vec![Notice::MorePes {
            asked: 1,
            got: 2,
            constraint: Constraint::HostPlacement,
            nodes: (0, 1)
        }]
    );
}

#[test]
fn fewer_units_than_asked_is_reported() {
    let mut nodes = vec![node(); 3];
    for n in &mut nodes {
        n.colocations = vec![1];
    }
    let f = fuse(
        &nodes,
        &chain(3),
        Mode::Manual(3),
        ChannelPolicy::NoInfluence,
    )
    .unwrap();
    assert_eq!(f.pes, vec![vec![0, 1, 2]]);
    assert_eq!(f.notices, vec![Notice::FewerPes { asked: 3, got: 1 }]);
}

#[test]
fn colocated_and_exlocated_is_unsatisfiable() {
    let mut nodes = vec![node(); 3];
    nodes[0].colocations = vec![1];
    nodes[2].colocations = vec![1];
    nodes[0].exlocations = vec![9];
    nodes[2].exlocations = vec![9];
    let err = fuse(
        &nodes,
        &chain(3),
        Mode::Manual(1),
        ChannelPolicy::NoInfluence,
    )
    .unwrap_err();
    assert_eq!(err.constraint, Constraint::PartitionExlocation(9));
    assert_eq!(err.nodes, (0, 2));
}

#[test]
fn isolation_consistent_regions_and_exlocation_are_respected() {
    let mut nodes = vec![node(); 6];
    nodes[0].isolated = true;
    nodes[2].consistent_region = Some(0);
    nodes[3].consistent_region = Some(0);
    nodes[4].exlocations = vec![5];
    nodes[5].exlocations = vec![5];
    let f = fuse(
        &nodes,
        &chain(6),
        Mode::Manual(1),
        ChannelPolicy::NoInfluence,
    )
    .unwrap();
    assert_eq!(f.pes[pe_of(&f, 0)], vec![0]);
    assert_eq!(pe_of(&f, 2), pe_of(&f, 3));
    assert_ne!(pe_of(&f, 1), pe_of(&f, 2));
    assert_ne!(pe_of(&f, 4), pe_of(&f, 5));
}

#[test]
fn host_isolation_pulls_host_colocated_operators_in() {
    let mut nodes = vec![node(); 3];
    nodes[0].host_isolated = true;
    nodes[0].host_colocations = vec![3];
    nodes[2].host_colocations = vec![3];
    let f = fuse(&nodes, &chain(3), Mode::Legacy, ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(f.pes, vec![vec![0, 2], vec![1]]);
}

#[test]
fn channel_policies() {
    // source 0 -> channels {1,2} (channel 10) and {3,4} (channel 11) -> sink 5
    let mut nodes = vec![node(); 6];
    for (i, ch) in [(1, 10), (2, 10), (3, 11), (4, 11)] {
        nodes[i].channel = Some(ch);
    }
    let edges = vec![(0, 1), (1, 2), (2, 5), (0, 3), (3, 4), (4, 5)];
    let iso = fuse(&nodes, &edges, Mode::Manual(1), ChannelPolicy::Isolation).unwrap();
    assert_eq!(iso.pes, vec![vec![0, 5], vec![1, 2], vec![3, 4]]);
    let exl = fuse(&nodes, &edges, Mode::Manual(1), ChannelPolicy::Exlocation).unwrap();
    assert_ne!(pe_of(&exl, 1), pe_of(&exl, 3));
    assert_eq!(exl.pes.len(), 2);
    let none = fuse(&nodes, &edges, Mode::Manual(1), ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(none.pes.len(), 1);
}

#[test]
fn deterministic() {
    let nodes = vec![node(); 500];
    let edges: Vec<(u32, u32)> = (1..500).map(|i| (i / 3, i)).collect();
    let a = fuse(&nodes, &edges, Mode::Manual(7), ChannelPolicy::NoInfluence).unwrap();
    let b = fuse(&nodes, &edges, Mode::Manual(7), ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.pes.len(), 7);
}

#[test]
fn automatic_formula() {
    let input = AutoInput {
        operators: 100,
        min_threads: 4,
        max_threads: 120,
        cpu_request_millis: 500,
        cpu_limit_millis: Some(1000),
        nodes: None,
    };
    assert_eq!(automatic_target(input), 4);
    assert_eq!(
        automatic_target(AutoInput {
            nodes: Some(3),
            ..input
        }),
        3
    );
    assert_eq!(
        automatic_target(AutoInput {
            operators: 2,
            ..input
        }),
        2
    );
    assert_eq!(
        automatic_target(AutoInput {
            min_threads: 0,
            ..input
        }),
        1
    );
}

#[test]
fn refusion_keeps_untouched_pes_and_places_new_nodes_by_connections() {
    // two chains of 10 (0..10 and 10..20) into 2 PEs, then a third chain appended to chain 0
    let nodes = vec![node(); 20];
    let mut edges: Vec<(u32, u32)> = (1..10).map(|i| (i - 1, i)).collect();
    edges.extend((11..20).map(|i| (i - 1, i)));
    let first = fuse(&nodes, &edges, Mode::Manual(2), ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(
        first.pes,
        vec![(0..10).collect::<Vec<u32>>(), (10..20).collect()]
    );
    let mut previous: Vec<Option<u32>> = vec![None; 21];
    for (pe, members) in first.pes.iter().enumerate() {
        for &n in members {
            previous[n as usize] = Some(pe as u32 + 7);
        }
    }
    let nodes = vec![node(); 21];
    edges.push((19, 20));
    let again = refuse(
        &nodes,
        &edges,
        Mode::Manual(2),
        ChannelPolicy::NoInfluence,
        &previous,
    )
    .unwrap();
    assert_eq!(again.pes[0], (0..10).collect::<Vec<u32>>());
    assert_eq!(again.pes[1], (10..21).collect::<Vec<u32>>());
}

#[test]
fn feedback_loops_are_fused_without_hanging() {
    // 0 -> 1 -> 2 -> 3 -> 1 (a control loop) and 3 -> 4
    let nodes = vec![node(); 5];
    let edges = vec![(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)];
    let f = fuse(&nodes, &edges, Mode::Manual(2), ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(f.pes.len(), 2);
    assert_eq!(f.pes.iter().map(Vec::len).sum::<usize>(), 5);
}

#[test]
fn parallel_channels_stay_with_their_chain() {
    // source 0 -> 1 -> {2, 3, 4} (three channels) -> 5 -> 6, and a second chain 7 -> 8 -> 9 -> 10
    let nodes = vec![node(); 11];
    let edges = vec![
        (0, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 5),
        (3, 5),
        (4, 5),
        (5, 6),
        (7, 8),
        (8, 9),
        (9, 10),
    ];
    let f = fuse(&nodes, &edges, Mode::Manual(2), ChannelPolicy::NoInfluence).unwrap();
    assert_eq!(f.pes, vec![(0..7).collect::<Vec<u32>>(), (7..11).collect()]);
}
