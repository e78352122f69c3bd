//! Neighbour sampling: every block is a correct, DGL-shaped subgraph of
//! the input; sampling is without replacement, uniform, and deterministic.

use gnnkern_datasets::{Block, Dataset, DatasetError, generate, sample_block};
use std::collections::HashSet;

fn check_blocks(ds: &Dataset, seeds: &[i64], fanouts: &[usize], blocks: &[Block]) {
    assert_eq!(blocks.len(), fanouts.len());
    assert_eq!(blocks.last().unwrap().dst_nodes(), seeds);
    let in_deg = ds.in_degrees();
    for (l, b) in blocks.iter().enumerate() {
        assert_eq!(b.num_src, b.src_nodes.len());
        let unique: HashSet<i64> = b.src_nodes.iter().copied().collect();
        assert_eq!(unique.len(), b.num_src, "layer {l}: repeated src node");
        if l + 1 < blocks.len() {
            assert_eq!(b.dst_nodes(), blocks[l + 1].src_nodes.as_slice(), "layer {l} dst != next layer src");
        }
        let mut per_dst = vec![Vec::new(); b.num_dst];
        for k in 0..b.num_edges() {
            let (s, d, e) = (b.src[k], b.dst[k], b.eids[k] as usize);
            assert!((0..b.num_src as i64).contains(&s) && (0..b.num_dst as i64).contains(&d));
            assert_eq!(
                (ds.src[e], ds.dst[e]),
                (b.src_nodes[s as usize], b.src_nodes[d as usize]),
                "layer {l} edge {k}"
            );
            per_dst[d as usize].push(e);
        }
        for (d, eids) in per_dst.iter().enumerate() {
            let v = b.src_nodes[d] as usize;
            assert_eq!(eids.len(), fanouts[l].min(in_deg[v]), "layer {l} node {v}");
            assert_eq!(eids.iter().collect::<HashSet<_>>().len(), eids.len(), "replacement at node {v}");
        }
        // The block converts to a kernel graph of the right shape.
        let g = b.graph::<i32>().unwrap();
        assert_eq!((g.num_src(), g.num_dst(), g.num_edges()), (b.num_src, b.num_dst, b.num_edges()));
    }
}

#[test]
fn blocks_are_dgl_shaped_subgraphs() {
    let ds = generate("rmat:10:8:3").unwrap();
    let seeds = [5i64, 0, 77, 1023, 400];
    let fanouts = [25, 10];
    let blocks = sample_block(&ds, &seeds, &fanouts, 42).unwrap();
    check_blocks(&ds, &seeds, &fanouts, &blocks);
    assert!(blocks[0].num_src > blocks[1].num_src, "the input layer is the widest");
    let three = sample_block(&ds, &seeds, &[3, 2, 1], 7).unwrap();
    check_blocks(&ds, &seeds, &[3, 2, 1], &three);
}

#[test]
fn deterministic_by_seed_and_same_for_graph_and_dataset() {
    let ds = generate("sbm:500:5:0.1:0.01:2").unwrap();
    let seeds: Vec<i64> = (0..500).step_by(7).collect();
    let a = sample_block(&ds, &seeds, &[5, 5], 1).unwrap();
    assert_eq!(a, sample_block(&ds, &seeds, &[5, 5], 1).unwrap());
    assert_ne!(a, sample_block(&ds, &seeds, &[5, 5], 2).unwrap());
    let g32 = ds.graph::<i32>().unwrap();
    let g64 = ds.graph::<i64>().unwrap();
    assert_eq!(a, sample_block(&g32, &seeds, &[5, 5], 1).unwrap());
    assert_eq!(a, sample_block(&g64, &seeds, &[5, 5], 1).unwrap());
}

#[test]
fn picks_are_uniform_without_replacement() {
    // Hub 0 with 100 in-neighbours; 10 picks per draw, 4000 draws: each
    // leaf expected 400 times (sd ~19).
    let ds = generate("star:101").unwrap();
    let g = ds.graph::<i32>().unwrap();
    let mut hits = vec![0usize; 101];
    for s in 0..4000 {
        let b = &sample_block(&g, &[0], &[10], s).unwrap()[0];
        assert_eq!(b.num_edges(), 10);
        for &u in &b.src_nodes[1..] {
            hits[u as usize] += 1;
        }
    }
    assert_eq!(hits[0], 0);
    assert!(hits[1..].iter().all(|&h| (300..=500).contains(&h)), "{hits:?}");
}

#[test]
fn edge_cases() {
    let ds = generate("chain:6").unwrap();
    // Node 0 has no in-edges; fanout 0 gives empty blocks.
    let b = sample_block(&ds, &[0, 3], &[0, 4], 1).unwrap();
    assert_eq!(b[1].src_nodes, vec![0, 3, 2]);
    assert_eq!(b[0].num_edges(), 0);
    assert_eq!(b[0].num_src, 3);
    assert!(sample_block(&ds, &[], &[2], 1).unwrap()[0].src_nodes.is_empty());
    assert!(sample_block(&ds, &[1], &[], 1).unwrap().is_empty());
}

#[test]
fn bad_seeds_are_rejected() {
    let ds = generate("chain:6").unwrap();
    let err = sample_block(&ds, &[1, 6], &[2], 1).unwrap_err();
    assert!(matches!(err, DatasetError::Invalid { .. }) && err.to_string().contains("seeds[1] = 6"), "{err}");
    let err = sample_block(&ds, &[2, 3, 2], &[2], 1).unwrap_err();
    assert!(err.to_string().contains("seeds[2] = 2 is repeated"), "{err}");
    let bip = gnnkern::Graph::<i32>::from_coo(2, 3, vec![0], vec![2]).unwrap();
    let err = sample_block(&bip, &[0], &[1], 1).unwrap_err();
    assert!(err.to_string().contains("square"), "{err}");
}
