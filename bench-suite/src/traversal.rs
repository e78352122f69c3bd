//! Traversal traffic: the bytes gnnkern's own plain pass must move between
//! DRAM and a cache the size of the machine's, found by replaying the pass's
//! accesses through a simulated LRU cache: `traversal_bytes` and
//! `traversal_pct_of_triad` of a result (docs/BENCHMARKS.md, "Two traffic
//! models").
//!
//! The minimum-traffic model (`model.rs`) counts every operand row once, as
//! if the cache held them all. A pull kernel on a graph whose source rows
//! exceed the cache cannot do that: it gathers one row per edge, and only the
//! rows still cached since their last use are free. This module counts, for
//! the order the SIMD backend's plain pass visits the edges in, which
//! accesses miss:
//!
//! - g-SpMM walks the in-CSR (destination rows); per edge it reads the
//!   source row (`u` operands, by column id) and the edge row (`e` operands,
//!   by edge id); per destination it reads its row (`v` operands) and writes
//!   its output row, rows without edges included (the kernels write zeros);
//! - g-SDDMM walks the CSR that `gnnkern_simd::kernels::sddmm_order` picks
//!   for the graph (the same call the backend makes), reads the row node's
//!   operand once per row and the other by column id, and writes `out[eid]`;
//! - edge_softmax (row order) reads `logits[eid]` (and, backward, `g[eid]`)
//!   and writes `out[eid]` along the in-CSR.
//!
//! `T` threads are `T` streams over nnz-balanced row ranges, interleaved
//! edge by edge, sharing one cache of `L3 + T·L2` bytes (Zen's L3 is a
//! victim cache of the L2s, so their capacities add). Rows are keyed at
//! 64-byte-line granularity (a row narrower than a line shares its line
//! with its neighbours). Index arrays are streamed once. As in the minimum
//! model and STREAM, a write costs its write-back and no write-allocate
//! read, so both models divide by the same triad.
//!
//! The count is a property of the graph and the traversal order, not of
//! the machine's speed: a kernel at 100 % of triad against it moves its
//! unavoidable lines at streaming speed. Blocked passes and gradient ops are
//! not modelled (`None`).

use crate::opspec::{OpFamily, OpShapes, Operand};
use gnnkern::op::Target;
use gnnkern::{Graph, Index};
use gnnkern_simd::kernels::{SddmmOrder, sddmm_order};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

const LINE: u64 = 64;
const NONE: u32 = u32::MAX;

/// Which id of a traversal step selects an operand's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Selector {
    /// The node of the CSR row being walked.
    Row,
    /// The node at the other end of the edge (the CSR column).
    Col,
    /// The edge id.
    Eid,
}

/// A tensor as the simulated cache sees it: keys `base..`, each covering
/// `lines` lines; row `r` is key `base + r·row_bytes / unit`.
#[derive(Clone, Copy, Debug)]
struct Array {
    base: u64,
    row_bytes: u64,
    unit: u64,
    lines: u32,
}

impl Array {
    fn new(base: u64, rows: usize, row_bytes: u64) -> (Self, u64) {
        // Rows of a line or more are one key of ⌈row/line⌉ lines; narrower
        // rows are keyed by the line they sit in.
        let unit = row_bytes.max(LINE);
        let keys = (rows as u64 * row_bytes).div_ceil(unit);
        let lines = unit.div_ceil(LINE) as u32;
        (Self { base, row_bytes, unit, lines }, base + keys)
    }

    fn key(&self, row: usize) -> u64 {
        self.base + row as u64 * self.row_bytes / self.unit
    }
}

/// One tensor touched per edge.
#[derive(Clone, Copy, Debug)]
struct Access {
    array: Array,
    by: Selector,
    write: bool,
}

/// One thread's walk: the row it is in, the CSR slot of its next edge and
/// the end of its rows.
struct Stream {
    row: usize,
    slot: usize,
    end: usize,
}

/// An LRU cache of `capacity` lines over dense keys, counting the lines read
/// on a miss and the dirty lines written back.
struct Lru {
    capacity: u64,
    used: u64,
    /// Key → node (`NONE`: not cached).
    slot: Vec<u32>,
    /// Per node: its key, list links (`prev` toward the most recent), size, dirtiness.
    key: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    lines: Vec<u32>,
    dirty: Vec<bool>,
    free: Vec<u32>,
    /// Most and least recently used node.
    head: u32,
    tail: u32,
    read_lines: u64,
    written_lines: u64,
}

impl Lru {
    fn new(capacity_lines: u64, keys: usize) -> Self {
        Self {
            capacity: capacity_lines.max(1),
            used: 0,
            slot: vec![NONE; keys],
            key: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            lines: Vec::new(),
            dirty: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
            read_lines: 0,
            written_lines: 0,
        }
    }

    fn touch(&mut self, key: u32, lines: u32, write: bool) {
        let n = self.slot[key as usize];
        if n != NONE {
            if self.head != n {
                self.unlink(n);
                self.push_front(n);
            }
            self.dirty[n as usize] |= write;
            return;
        }
        if !write {
            self.read_lines += u64::from(lines);
        }
        let n = self.alloc(key, lines, write);
        self.slot[key as usize] = n;
        self.push_front(n);
        self.used += u64::from(lines);
        while self.used > self.capacity {
            self.evict(self.tail);
        }
    }

    fn alloc(&mut self, key: u32, lines: u32, dirty: bool) -> u32 {
        if let Some(n) = self.free.pop() {
            let i = n as usize;
            (self.key[i], self.lines[i], self.dirty[i]) = (key, lines, dirty);
            return n;
        }
        self.key.push(key);
        self.lines.push(lines);
        self.dirty.push(dirty);
        self.prev.push(NONE);
        self.next.push(NONE);
        (self.key.len() - 1) as u32
    }

    fn evict(&mut self, n: u32) {
        let i = n as usize;
        self.unlink(n);
        self.slot[self.key[i] as usize] = NONE;
        self.used -= u64::from(self.lines[i]);
        if self.dirty[i] {
            self.written_lines += u64::from(self.lines[i]);
        }
        self.free.push(n);
    }

    fn unlink(&mut self, n: u32) {
        let (p, q) = (self.prev[n as usize], self.next[n as usize]);
        if p == NONE {
            self.head = q
        } else {
            self.next[p as usize] = q
        }
        if q == NONE { self.tail = p } else { self.prev[q as usize] = p }
    }

    fn push_front(&mut self, n: u32) {
        self.prev[n as usize] = NONE;
        self.next[n as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = n;
        }
        self.head = n;
        if self.tail == NONE {
            self.tail = n;
        }
    }

    /// Lines moved so far plus the write-backs still owed by dirty lines.
    fn total_lines(&self) -> u64 {
        let owed: u64 = (0..self.key.len())
            .filter(|&i| self.dirty[i] && self.slot[self.key[i] as usize] == i as u32)
            .map(|i| u64::from(self.lines[i]))
            .sum();
        self.read_lines + self.written_lines + owed
    }
}

/// The cache the simulation assumes for `threads` threads: the L3 plus one
/// L2 per thread when the L3 is credible (see `gnnkern_simd::tuning`), else
/// the L2s alone.
pub fn cache_bytes(threads: usize) -> u64 {
    let c = gnnkern_simd::tuning::CacheInfo::get();
    let l3 = if c.l3_trusted { c.l3 } else { 0 };
    (l3 + threads.max(1) * c.l2) as u64
}

/// Traversal bytes of `family` with `shapes` on `g` by `threads` threads
/// through a cache of `cache_bytes`; `None` for ops whose traversal is not
/// modelled (gradients) or whose key space exceeds 32 bits.
pub fn traversal_bytes<I: Index>(
    g: &Graph<I>,
    family: &OpFamily,
    shapes: &OpShapes,
    threads: usize,
    cache_bytes: u64,
) -> Option<u64> {
    let (walk_in_csr, accesses, keys) = plan(g, family, shapes)?;
    let keys = usize::try_from(keys).ok().filter(|&k| k < NONE as usize)?;
    let csr = if walk_in_csr { g.in_csr() } else { g.out_csr() };
    let (indptr, cols, eids) = (csr.indptr(), csr.indices(), csr.eids());
    let mut lru = Lru::new(cache_bytes / LINE, keys);

    // One stream per thread over nnz-balanced rows, like the kernels' split.
    let e = csr.num_edges();
    let rows = csr.num_rows();
    let threads = threads.max(1);
    let bound = |t: usize| indptr.partition_point(|p| p.to_usize_valid() < t * e / threads).min(rows);
    // A row's own accesses happen once, on entering it; a g-SpMM writes its
    // output row even when the row has no edges (overwrite mode: zeros).
    let (row_accesses, edge_accesses): (Vec<Access>, Vec<Access>) =
        accesses.iter().partition(|a| a.by == Selector::Row);
    let enter = |lru: &mut Lru, row: usize| {
        let empty = indptr[row] == indptr[row + 1];
        for a in row_accesses.iter().filter(|a| a.write || !empty) {
            lru.touch(a.array.key(row) as u32, a.array.lines, a.write);
        }
    };
    let mut streams: Vec<Stream> = (0..threads)
        .map(|t| {
            let row = if t == 0 { 0 } else { bound(t) };
            let end = if t + 1 == threads { rows } else { bound(t + 1) };
            Stream { row, slot: indptr.get(row).map_or(e, |p| p.to_usize_valid()), end }
        })
        .collect();
    for s in &streams {
        if s.row < s.end {
            enter(&mut lru, s.row);
        }
    }
    let mut live = streams.len();
    while live > 0 {
        live = 0;
        for s in streams.iter_mut() {
            while s.row < s.end && s.slot >= indptr[s.row + 1].to_usize_valid() {
                s.row += 1;
                if s.row < s.end {
                    enter(&mut lru, s.row);
                }
            }
            if s.row >= s.end {
                continue;
            }
            live += 1;
            for a in &edge_accesses {
                let id = match a.by {
                    Selector::Col => cols[s.slot].to_usize_valid(),
                    _ => eids[s.slot].to_usize_valid(),
                };
                lru.touch(a.array.key(id) as u32, a.array.lines, a.write);
            }
            s.slot += 1;
        }
    }
    let b = std::mem::size_of::<I>() as u64;
    let uses = |s: Selector| accesses.iter().any(|a| a.by == s);
    let structure = (rows as u64 + 1) * b
        + if uses(Selector::Col) { e as u64 * b } else { 0 }
        + if uses(Selector::Eid) { e as u64 * b } else { 0 };
    Some(structure + lru.total_lines() * LINE)
}

/// [`traversal_bytes`], remembered per graph name and trace: a suite times
/// copy_u_sum, copy_u_mean and copy_u_max on one graph, and their traces are
/// the same (one 2^24-edge replay takes seconds).
pub fn traversal_bytes_memo<I: Index>(
    graph_name: &str,
    g: &Graph<I>,
    family: &OpFamily,
    shapes: &OpShapes,
    threads: usize,
    cache_bytes: u64,
) -> Option<u64> {
    static MEMO: LazyLock<Mutex<HashMap<String, Option<u64>>>> = LazyLock::new(Default::default);
    // What the trace depends on besides the graph: the family's walk, the
    // operands' targets and row lengths, the output row, threads and cache.
    let walk = match family {
        OpFamily::Spmm(_) => "spmm",
        OpFamily::Sddmm(_) => "sddmm",
        OpFamily::EdgeSoftmax | OpFamily::EdgeSoftmaxBackward => "softmax",
        OpFamily::SpmmBackward(_) | OpFamily::SddmmBackward(_) => return None,
    };
    let operand = |o: &Option<Operand>| o.as_ref().map(|o| (o.target, o.shape.clone()));
    let key = format!(
        "{graph_name}|{}|{}|{walk}|{:?}|{:?}|{:?}|{threads}|{cache_bytes}",
        g.num_src(),
        g.num_edges(),
        operand(&shapes.lhs),
        operand(&shapes.rhs),
        shapes.out
    );
    if let Some(&known) = MEMO.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return known;
    }
    let bytes = traversal_bytes(g, family, shapes, threads, cache_bytes);
    MEMO.lock().unwrap_or_else(PoisonError::into_inner).insert(key, bytes);
    bytes
}

/// Which CSR the op walks (`true`: the in-CSR), its per-edge accesses and
/// the size of their key space.
fn plan<I: Index>(g: &Graph<I>, family: &OpFamily, shapes: &OpShapes) -> Option<(bool, Vec<Access>, u64)> {
    let in_csr = match family {
        OpFamily::Spmm(_) | OpFamily::EdgeSoftmax | OpFamily::EdgeSoftmaxBackward => true,
        OpFamily::Sddmm(_) => sddmm_order(&g.in_csr().view(), &g.out_csr().view()) == SddmmOrder::InCsr,
        OpFamily::SpmmBackward(_) | OpFamily::SddmmBackward(_) => return None,
    };
    // Walking the in-CSR, the row is the destination and the column the source.
    let selector = |t: Target| match (t, in_csr) {
        (Target::Edge, _) => Selector::Eid,
        (Target::Dst, true) | (Target::Src, false) => Selector::Row,
        (Target::Src, true) | (Target::Dst, false) => Selector::Col,
    };
    let out_target = match family {
        OpFamily::Spmm(_) => Target::Dst,
        _ => Target::Edge,
    };
    let out_row: usize = shapes.out[1..].iter().product();
    let mut next_key = 0;
    let mut add = |rows: usize, row_len: usize, target: Target, write: bool| {
        let (array, end) = Array::new(next_key, rows, row_len as u64 * 4);
        next_key = end;
        Access { array, by: selector(target), write }
    };
    let mut accesses: Vec<Access> = [&shapes.lhs, &shapes.rhs]
        .into_iter()
        .flatten()
        .map(|o: &Operand| add(o.shape[0], o.row_len(), o.target, false))
        .collect();
    accesses.push(add(shapes.out[0], out_row, out_target, true));
    Some((in_csr, accesses, next_key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opspec::{BenchOp, GraphDims, shapes};

    fn graph(num: usize, edges: &[(i32, i32)]) -> Graph<i32> {
        let (src, dst) = edges.iter().copied().unzip();
        Graph::from_coo(num, num, src, dst).unwrap()
    }

    fn bytes(g: &Graph<i32>, op: &str, dim: usize, threads: usize, cache: u64) -> u64 {
        let op = BenchOp::parse(op).unwrap();
        let dims = GraphDims { num_src: g.num_src(), num_dst: g.num_dst(), num_edges: g.num_edges() };
        traversal_bytes(g, &op.family, &shapes(&op, dims, dim, None).unwrap(), threads, cache).unwrap()
    }

    #[test]
    fn lru_counts_misses_and_write_backs() {
        let mut c = Lru::new(2, 8);
        c.touch(0, 1, false); // miss
        c.touch(1, 1, false); // miss
        c.touch(0, 1, false); // hit: 0 becomes most recent
        c.touch(2, 1, true); // write miss: no read; evicts 1 (least recent)
        c.touch(1, 1, false); // miss again; evicts 0
        c.touch(2, 1, false); // hit
        assert_eq!((c.read_lines, c.written_lines), (3, 0));
        c.touch(3, 1, false); // evicts 1 (2 was used more recently)
        c.touch(4, 1, false); // evicts 2, dirty: one write-back
        assert_eq!((c.read_lines, c.written_lines), (5, 1));
        assert_eq!(c.total_lines(), 6);
    }

    #[test]
    fn a_row_larger_than_the_cache_still_counts() {
        let mut c = Lru::new(4, 2);
        c.touch(0, 8, false);
        c.touch(0, 8, false);
        assert_eq!(c.read_lines, 16);
    }

    /// With a cache that holds everything, every row moves once: the
    /// traversal traffic is the minimum model's operand and output bytes.
    #[test]
    fn a_cache_holding_everything_gives_the_minimum() {
        let edges: Vec<(i32, i32)> = (0..64).flat_map(|v| (0..4).map(move |j| ((v * 7 + j * 13) % 64, v))).collect();
        let g = graph(64, &edges);
        let structure = (65 + 256) * 4;
        // copy_u_sum d = 32: x (64 rows of 128 B) read once, out (64 rows) written once.
        assert_eq!(bytes(&g, "copy_u_sum", 32, 1, 1 << 20), structure + 2 * 64 * 128);
        // Two threads see the same total when nothing is evicted.
        assert_eq!(bytes(&g, "copy_u_sum", 32, 2, 1 << 20), structure + 2 * 64 * 128);
    }

    /// A one-line cache re-reads every gathered row: `E` rows of `4d`
    /// bytes, plus each output row written back once.
    #[test]
    fn a_tiny_cache_gathers_every_edge() {
        let edges: Vec<(i32, i32)> = (0..32).flat_map(|v| (0..4).map(move |j| ((v + 1 + j) % 32, v))).collect();
        let g = graph(32, &edges);
        let structure = (33 + 128) * 4;
        // d = 16: one line per row; the output row, written on entering its
        // row, is evicted by the row's first gather and written back once.
        assert_eq!(bytes(&g, "copy_u_sum", 16, 1, LINE), structure + 128 * 64 + 32 * 64);
    }

    /// A destination without in-edges still has its output row written (the
    /// kernels write zeros there), and a source no edge leaves is never read.
    #[test]
    fn empty_rows_are_written_and_unused_sources_not_read() {
        // Edges only into the even destinations, only from sources 0..8.
        let edges: Vec<(i32, i32)> = (0..32).step_by(2).map(|v| (v / 2 % 8, v)).collect();
        let g = graph(32, &edges);
        let structure = (33 + 16) * 4;
        // d = 16: 8 source lines read, all 32 output lines written.
        assert_eq!(bytes(&g, "copy_u_sum", 16, 2, 1 << 20), structure + 8 * 64 + 32 * 64);
    }

    /// Edge rows narrower than a line share it: a 4-head edge softmax over
    /// edges in CSR order reads each logits line once and writes it back once.
    #[test]
    fn narrow_edge_rows_share_lines() {
        let edges: Vec<(i32, i32)> = (0..64).map(|v| (v, v)).collect();
        let g = graph(64, &edges);
        let op = BenchOp::parse("edge_softmax").unwrap();
        let dims = GraphDims { num_src: 64, num_dst: 64, num_edges: 64 };
        let s = shapes(&op, dims, 4, Some(4)).unwrap();
        let b = traversal_bytes(&g, &op.family, &s, 1, 1 << 20).unwrap();
        // 64 edges × 16 bytes = 16 lines of logits read and 16 of output written.
        assert_eq!(b, (65 + 64) * 4 + 32 * 64);
    }

    #[test]
    fn gradients_are_not_modelled() {
        let g = graph(4, &[(0, 1), (1, 2)]);
        let op = BenchOp::parse("copy_u_sum_backward").unwrap();
        let dims = GraphDims { num_src: 4, num_dst: 4, num_edges: 2 };
        assert_eq!(traversal_bytes(&g, &op.family, &shapes(&op, dims, 8, None).unwrap(), 1, 1 << 20), None);
    }
}
