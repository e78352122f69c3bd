//! Brute-force f64 oracles, written independently of the library: edge
//! lists instead of CSRs, NumPy index arithmetic instead of broadcast plans,
//! dense adjacency matrices for the classic special cases.

use super::cases::GraphCase;
use gnnkern::Index;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};

/// How output elements of one message map onto operand elements.
#[derive(Clone, Debug)]
pub struct Bcast {
    pub out_shape: Vec<usize>,
    /// Per output element: offsets into the lhs and rhs rows.
    pub pairs: Vec<(usize, usize)>,
    /// Dot: terms per output element (the shared last dimension); else 1.
    pub k: usize,
    pub dot: bool,
}

fn row_major_offsets(out: &[usize], shape: &[usize]) -> Vec<usize> {
    // NumPy: align at the right; a dimension of size 1 is repeated.
    let nd = out.len();
    let padded: Vec<usize> = std::iter::repeat_n(1, nd - shape.len()).chain(shape.iter().copied()).collect();
    let n: usize = out.iter().product();
    (0..n)
        .map(|o| {
            let (mut rem, mut off, mut stride) = (o, 0, 1);
            for d in (0..nd).rev() {
                let i = rem % out[d];
                rem /= out[d];
                if padded[d] != 1 {
                    off += i * stride;
                }
                stride *= padded[d];
            }
            off
        })
        .collect()
}

fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let nd = a.len().max(b.len());
    let pa: Vec<usize> = std::iter::repeat_n(1, nd - a.len()).chain(a.iter().copied()).collect();
    let pb: Vec<usize> = std::iter::repeat_n(1, nd - b.len()).chain(b.iter().copied()).collect();
    pa.iter().zip(&pb).map(|(&x, &y)| if x == 1 { y } else { x }).collect()
}

/// DGL broadcasting of `φ(lhs, rhs)`, element by element.
pub fn bcast(op: BinaryOpKind, lhs: &[usize], rhs: &[usize]) -> Bcast {
    match op {
        BinaryOpKind::CopyLhs => Bcast {
            out_shape: lhs.to_vec(),
            pairs: (0..lhs.iter().product()).map(|i| (i, 0)).collect(),
            k: 1,
            dot: false,
        },
        BinaryOpKind::CopyRhs => Bcast {
            out_shape: rhs.to_vec(),
            pairs: (0..rhs.iter().product()).map(|i| (0, i)).collect(),
            k: 1,
            dot: false,
        },
        BinaryOpKind::Dot => {
            let k = *lhs.last().unwrap();
            let (ll, rl) = (&lhs[..lhs.len() - 1], &rhs[..rhs.len() - 1]);
            let lead = broadcast_shape(ll, rl);
            let (lo, ro) = (row_major_offsets(&lead, ll), row_major_offsets(&lead, rl));
            let mut out_shape = lead;
            out_shape.push(1);
            Bcast { out_shape, pairs: lo.iter().zip(&ro).map(|(&a, &b)| (a * k, b * k)).collect(), k, dot: true }
        }
        _ => {
            let out = broadcast_shape(lhs, rhs);
            let (lo, ro) = (row_major_offsets(&out, lhs), row_major_offsets(&out, rhs));
            Bcast { out_shape: out, pairs: lo.into_iter().zip(ro).collect(), k: 1, dot: false }
        }
    }
}

/// `φ(a, b)` in f64.
pub fn apply(op: BinaryOpKind, a: f64, b: f64) -> f64 {
    match op {
        BinaryOpKind::Add => a + b,
        BinaryOpKind::Sub => a - b,
        BinaryOpKind::Mul | BinaryOpKind::Dot => a * b,
        BinaryOpKind::Div => a / b,
        BinaryOpKind::CopyLhs => a,
        BinaryOpKind::CopyRhs => b,
    }
}

/// An operand placed on a target: `(target, data, feature shape)`.
pub type Placed<'a> = (Target, &'a [f32], &'a [usize]);

/// One message function on a graph case, evaluated edge by edge.
pub struct Messages<'a> {
    pub op: BinaryOpKind,
    pub lhs: Placed<'a>,
    pub rhs: Placed<'a>,
    pub b: Bcast,
}

impl<'a> Messages<'a> {
    pub fn new(op: BinaryOpKind, lhs: Placed<'a>, rhs: Placed<'a>) -> Self {
        let b = bcast(op, lhs.2, rhs.2);
        Self { op, lhs, rhs, b }
    }

    pub fn out_len(&self) -> usize {
        self.b.pairs.len()
    }

    /// `(value, Σ|terms|)` of output element `o` of edge `e = (u, v)`.
    pub fn eval(&self, u: usize, e: usize, v: usize, o: usize) -> (f64, f64) {
        let row = |p: &Placed<'_>| match p.0 {
            Target::Src => u,
            Target::Edge => e,
            Target::Dst => v,
        };
        let len = |p: &Placed<'_>, used: bool| if used { p.2.iter().product() } else { 0 };
        let ll = len(&self.lhs, self.op != BinaryOpKind::CopyRhs);
        let rl = len(&self.rhs, self.op != BinaryOpKind::CopyLhs);
        let at = |p: &Placed<'_>, len: usize, i: usize| if len == 0 { 0.0 } else { f64::from(p.1[row(p) * len + i]) };
        let (lo, ro) = self.b.pairs[o];
        if self.b.dot {
            let terms: Vec<f64> =
                (0..self.b.k).map(|k| at(&self.lhs, ll, lo + k) * at(&self.rhs, rl, ro + k)).collect();
            (terms.iter().sum(), terms.iter().map(|t| t.abs()).sum())
        } else {
            let m = apply(self.op, at(&self.lhs, ll, lo), at(&self.rhs, rl, ro));
            (m, m.abs())
        }
    }
}

/// The result of a brute-force g-SpMM.
#[derive(Clone, Debug)]
pub struct SpmmResult {
    pub out: Vec<f32>,
    /// Σ|terms| per output element (sum/mean: divided like the output).
    pub magnitude: Vec<f32>,
    pub arg_u: Vec<i64>,
    pub arg_e: Vec<i64>,
    /// Terms per output element, worst case: max in-degree × K.
    pub terms: usize,
}

/// In-edges of every destination in (source, edge id) order.
pub fn in_edges<I: Index>(g: &GraphCase<I>) -> Vec<Vec<usize>> {
    let mut lists = vec![Vec::new(); g.num_dst];
    for e in 0..g.num_edges() {
        lists[g.dst[e]].push(e);
    }
    for l in &mut lists {
        l.sort_by_key(|&e| (g.src[e], e));
    }
    lists
}

/// `out[v] = ρ(φ(...) for e into v)` by explicit per-destination lists.
pub fn spmm<I: Index>(g: &GraphCase<I>, m: &Messages<'_>, reduce: ReduceKind) -> SpmmResult {
    let len = m.out_len();
    let lists = in_edges(g);
    let mut r = SpmmResult {
        out: vec![0.0; g.num_dst * len],
        magnitude: vec![0.0; g.num_dst * len],
        arg_u: vec![-1; g.num_dst * len],
        arg_e: vec![-1; g.num_dst * len],
        terms: lists.iter().map(Vec::len).max().unwrap_or(0).max(1) * m.b.k,
    };
    for (v, edges) in lists.iter().enumerate() {
        if edges.is_empty() {
            continue;
        }
        for o in 0..len {
            let i = v * len + o;
            match reduce {
                ReduceKind::Sum | ReduceKind::Mean => {
                    let (mut s, mut a) = (0.0, 0.0);
                    for &e in edges {
                        let (x, t) = m.eval(g.src[e], e, v, o);
                        s += x;
                        a += t;
                    }
                    let div = if reduce == ReduceKind::Mean { edges.len() as f64 } else { 1.0 };
                    r.out[i] = (s / div) as f32;
                    r.magnitude[i] = (a / div) as f32;
                }
                ReduceKind::Max | ReduceKind::Min => {
                    let mut best: Option<(f64, usize)> = None;
                    for &e in edges {
                        let x = f64::from(m.eval(g.src[e], e, v, o).0 as f32);
                        let better = match best {
                            None => true,
                            Some((b, _)) if b.is_nan() => false,
                            Some(_) if x.is_nan() => true,
                            Some((b, _)) => {
                                if reduce == ReduceKind::Max {
                                    x > b
                                } else {
                                    x < b
                                }
                            }
                        };
                        if better {
                            best = Some((x, e));
                        }
                    }
                    let (x, e) = best.unwrap();
                    r.out[i] = x as f32;
                    r.magnitude[i] = x.abs() as f32;
                    r.arg_e[i] = e as i64;
                    r.arg_u[i] = g.src[e] as i64;
                }
            }
        }
    }
    r
}

/// `out[e] = φ(...)` with magnitudes, edge by edge.
pub fn sddmm<I: Index>(g: &GraphCase<I>, m: &Messages<'_>) -> (Vec<f32>, Vec<f32>) {
    let len = m.out_len();
    let mut out = vec![0.0; g.num_edges() * len];
    let mut mag = vec![0.0; g.num_edges() * len];
    for e in 0..g.num_edges() {
        for o in 0..len {
            let (x, t) = m.eval(g.src[e], e, g.dst[e], o);
            out[e * len + o] = x as f32;
            mag[e * len + o] = t as f32;
        }
    }
    (out, mag)
}

/// Dense adjacency `A[u][v]` = number of edges `u -> v`, optionally weighted by `w[e]`.
pub fn dense_adjacency<I: Index>(g: &GraphCase<I>, w: Option<&[f32]>) -> Vec<Vec<f64>> {
    let mut a = vec![vec![0.0; g.num_dst]; g.num_src];
    for e in 0..g.num_edges() {
        a[g.src[e]][g.dst[e]] += w.map_or(1.0, |w| f64::from(w[e]));
    }
    a
}

/// `Aᵀ X` for `X` `[num_src, d]`: `copy_u_sum` (or `u_mul_e_sum` with a weighted `A`).
pub fn at_x<I: Index>(g: &GraphCase<I>, a: &[Vec<f64>], x: &[f32], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; g.num_dst * d];
    for (u, row) in a.iter().enumerate() {
        for (v, &w) in row.iter().enumerate() {
            for j in 0..d {
                out[v * d + j] += w * f64::from(x[u * d + j]);
            }
        }
    }
    out
}

/// Edge softmax over each destination's in-edges, per feature, in f64.
pub fn edge_softmax<I: Index>(g: &GraphCase<I>, logits: &[f32], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; logits.len()];
    for edges in in_edges(g) {
        for j in 0..d {
            let x = |e: usize| f64::from(logits[e * d + j]);
            let max = edges.iter().map(|&e| x(e)).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = edges.iter().map(|&e| (x(e) - max).exp()).sum();
            for &e in &edges {
                out[e * d + j] = (x(e) - max).exp() / sum;
            }
        }
    }
    out
}

/// Segment reduction by explicit loops: `(out, arg, Σ|x| per element)`.
pub fn segment(reduce: ReduceKind, offsets: &[usize], x: &[f32], d: usize) -> (Vec<f32>, Vec<i64>, Vec<f32>) {
    let n = offsets.len() - 1;
    let (mut out, mut arg, mut mag) = (vec![0.0; n * d], vec![-1i64; n * d], vec![0.0; n * d]);
    for s in 0..n {
        let rows = offsets[s]..offsets[s + 1];
        if rows.is_empty() {
            continue;
        }
        for j in 0..d {
            let vals: Vec<(usize, f32)> = rows.clone().map(|r| (r, x[r * d + j])).collect();
            let i = s * d + j;
            match reduce {
                ReduceKind::Sum | ReduceKind::Mean => {
                    let div = if reduce == ReduceKind::Mean { vals.len() as f64 } else { 1.0 };
                    out[i] = (vals.iter().map(|&(_, v)| f64::from(v)).sum::<f64>() / div) as f32;
                    mag[i] = (vals.iter().map(|&(_, v)| f64::from(v).abs()).sum::<f64>() / div) as f32;
                }
                ReduceKind::Max | ReduceKind::Min => {
                    let (mut br, mut bv) = vals[0];
                    for &(r, v) in &vals[1..] {
                        let better =
                            !bv.is_nan() && (v.is_nan() || if reduce == ReduceKind::Max { v > bv } else { v < bv });
                        if better {
                            (br, bv) = (r, v);
                        }
                    }
                    out[i] = bv;
                    arg[i] = br as i64;
                    mag[i] = bv.abs();
                }
            }
        }
    }
    (out, arg, mag)
}
