//! DGL's broadcasting rules, compiled into contiguous runs.
//!
//! Operand feature shapes (everything after the leading node/edge
//! dimension) broadcast NumPy-style: align at the right, each dimension
//! equal or 1. `dot` first requires equal last dimensions and reduces over
//! them; its output keeps that dimension as 1 (DGL: `[N,H,D]·[N,H,D] -> [N,H,1]`).
//!
//! Instead of DGL's per-element offset tables, the plan collapses dimensions
//! into *runs*: `run_len` consecutive output elements whose lhs (and rhs)
//! elements are either consecutive too or one broadcast scalar. Every case
//! the GNN layers use compiles to very few runs:
//!
//! | lhs      | rhs      | out      | runs × run_len | lhs / rhs within a run |
//! |----------|----------|----------|----------------|------------------------|
//! | `[D]`    | `[D]`    | `[D]`    | 1 × D          | contiguous / contiguous |
//! | `[D]`    | `[1]`    | `[D]`    | 1 × D          | contiguous / scalar     |
//! | `[H,D]`  | `[H,1]`  | `[H,D]`  | H × D          | contiguous / scalar     |
//! | `[H,D]`· | `[H,D]`  | `[H,1]`  | H × 1, K = D   | (dot over K)            |
//!
//! so SIMD kernels loop over runs and vectorize inside a run.

use std::fmt;

/// Which operands an operator reads and whether it reduces the last dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandShape {
    pub uses_lhs: bool,
    pub uses_rhs: bool,
    pub reduces_last_dim: bool,
}

impl OperandShape {
    /// The shape signature of a [`crate::op::BinaryOp`] type.
    pub const fn of<O: crate::op::BinaryOp>() -> Self {
        Self { uses_lhs: O::USE_LHS, uses_rhs: O::USE_RHS, reduces_last_dim: O::REDUCES_LAST_DIM }
    }
}

/// Operand feature shapes that cannot be broadcast together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastError {
    pub lhs: Vec<usize>,
    pub rhs: Vec<usize>,
    pub reason: &'static str,
}

impl fmt::Display for BroadcastError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot broadcast lhs feature shape {:?} with rhs feature shape {:?}: {}",
            self.lhs, self.rhs, self.reason
        )
    }
}

impl std::error::Error for BroadcastError {}

/// One run: `run_len` output elements starting at `out`, reading lhs from
/// `lhs` and rhs from `rhs` (element offsets within one operand row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub out: usize,
    pub lhs: usize,
    pub rhs: usize,
}

/// How output elements of one row map onto operand elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastPlan {
    /// Output feature shape (dot keeps a trailing 1).
    pub out_shape: Vec<usize>,
    /// Elements per lhs row (0 when the operator does not read lhs).
    pub lhs_len: usize,
    /// Elements per rhs row (0 when the operator does not read rhs).
    pub rhs_len: usize,
    /// Elements per output row.
    pub out_len: usize,
    /// Length of the reduced last dimension for dot, else 1.
    pub reduce_len: usize,
    /// Output elements per run (1 for dot: each output is one K-long dot).
    pub run_len: usize,
    /// Within a run, lhs advances with the output (else it is one scalar).
    pub lhs_contiguous: bool,
    /// Within a run, rhs advances with the output (else it is one scalar).
    pub rhs_contiguous: bool,
    /// The runs, in output order; they tile `0..out_len` exactly.
    pub runs: Vec<Run>,
}

impl BroadcastPlan {
    /// Plans `φ(lhs, rhs)` for feature shapes `lhs` and `rhs`.
    ///
    /// A shape the operator does not read is ignored (pass `&[]`).
    pub fn new(op: OperandShape, lhs: &[usize], rhs: &[usize]) -> Result<Self, BroadcastError> {
        let err = |reason| BroadcastError { lhs: lhs.to_vec(), rhs: rhs.to_vec(), reason };
        match (op.uses_lhs, op.uses_rhs) {
            (false, false) => Err(err("the operator reads neither operand")),
            (true, false) | (false, true) => {
                if op.reduces_last_dim {
                    return Err(err("a reducing operator needs both operands"));
                }
                let shape = if op.uses_lhs { lhs } else { rhs };
                let len = shape.iter().product();
                Ok(Self {
                    out_shape: shape.to_vec(),
                    lhs_len: if op.uses_lhs { len } else { 0 },
                    rhs_len: if op.uses_rhs { len } else { 0 },
                    out_len: len,
                    reduce_len: 1,
                    run_len: len,
                    lhs_contiguous: op.uses_lhs,
                    rhs_contiguous: op.uses_rhs,
                    runs: if len == 0 { Vec::new() } else { vec![Run { out: 0, lhs: 0, rhs: 0 }] },
                })
            }
            (true, true) if op.reduces_last_dim => {
                let (Some((&kl, lead_l)), Some((&kr, lead_r))) = (lhs.split_last(), rhs.split_last()) else {
                    return Err(err("dot needs at least one feature dimension on both sides"));
                };
                if kl != kr {
                    return Err(err("dot needs equal last dimensions"));
                }
                let mut plan =
                    Self::elementwise(lead_l, lead_r).ok_or_else(|| err("dimensions differ and neither is 1"))?;
                // Expand runs to single outputs, each a K-long dot product.
                let mut runs = Vec::with_capacity(plan.out_len);
                for r in &plan.runs {
                    for j in 0..plan.run_len {
                        let l = r.lhs + if plan.lhs_contiguous { j } else { 0 };
                        let rr = r.rhs + if plan.rhs_contiguous { j } else { 0 };
                        runs.push(Run { out: r.out + j, lhs: l * kl, rhs: rr * kl });
                    }
                }
                plan.out_shape.push(1);
                plan.lhs_len *= kl;
                plan.rhs_len *= kl;
                plan.reduce_len = kl;
                plan.run_len = 1;
                plan.lhs_contiguous = true;
                plan.rhs_contiguous = true;
                if kl == 0 {
                    // An empty dot product is 0: keep the outputs, nothing to read.
                    plan.lhs_len = 0;
                    plan.rhs_len = 0;
                }
                plan.runs = runs;
                Ok(plan)
            }
            (true, true) => Self::elementwise(lhs, rhs).ok_or_else(|| err("dimensions differ and neither is 1")),
        }
    }

    /// True when the plan is one run over identical, contiguous operands
    /// (or one used operand): the fastest path.
    pub fn is_plain(&self) -> bool {
        self.runs.len() <= 1 && self.reduce_len == 1 && self.run_len == self.out_len
    }

    /// Elementwise broadcast of two shapes, as runs.
    fn elementwise(lhs: &[usize], rhs: &[usize]) -> Option<Self> {
        let ndim = lhs.len().max(rhs.len());
        let pad = |s: &[usize]| -> Vec<usize> {
            let mut v = vec![1; ndim - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (l, r) = (pad(lhs), pad(rhs));
        let mut out_shape = Vec::with_capacity(ndim);
        for (&a, &b) in l.iter().zip(&r) {
            out_shape.push(match (a, b) {
                _ if a == b => a,
                (1, b) => b,
                (a, 1) => a,
                _ => return None,
            });
        }
        let strides = |s: &[usize]| -> Vec<usize> {
            let mut st = vec![0; ndim];
            let mut acc = 1;
            for d in (0..ndim).rev() {
                st[d] = if s[d] == 1 { 0 } else { acc };
                acc *= s[d];
            }
            st
        };
        let (ls, rs) = (strides(&l), strides(&r));
        // Dimensions of size > 1 as (size, lhs stride, rhs stride), merged
        // outward while both operands stay contiguous across the boundary.
        let mut dims: Vec<(usize, usize, usize)> = Vec::new();
        for d in (0..ndim).rev() {
            let n = out_shape[d];
            if n == 1 {
                continue;
            }
            if let Some(last) = dims.last_mut() {
                let mergeable = |inner_stride: usize, outer_stride: usize| outer_stride == inner_stride * last.0;
                if mergeable(last.1, ls[d]) && mergeable(last.2, rs[d]) {
                    last.0 *= n;
                    continue;
                }
            }
            dims.push((n, ls[d], rs[d]));
        }
        let out_len: usize = out_shape.iter().product();
        let lhs_len: usize = l.iter().product();
        let rhs_len: usize = r.iter().product();
        let (run_len, lhs_contiguous, rhs_contiguous) = match dims.first() {
            Some(&(n, a, b)) => (n, a == 1, b == 1),
            None => (1, true, true),
        };
        let mut runs = Vec::new();
        if out_len > 0 {
            let outer = &dims[dims.len().min(1)..];
            let count = out_len / run_len;
            runs.reserve(count);
            let mut idx = vec![0usize; outer.len()];
            for k in 0..count {
                let (mut lo, mut ro) = (0, 0);
                for (i, &(_, a, b)) in outer.iter().enumerate() {
                    lo += idx[i] * a;
                    ro += idx[i] * b;
                }
                runs.push(Run { out: k * run_len, lhs: lo, rhs: ro });
                for (i, &(n, _, _)) in outer.iter().enumerate() {
                    idx[i] += 1;
                    if idx[i] < n {
                        break;
                    }
                    idx[i] = 0;
                }
            }
        }
        Some(Self {
            out_shape,
            lhs_len,
            rhs_len,
            out_len,
            reduce_len: 1,
            run_len,
            lhs_contiguous: lhs_contiguous || lhs_len == 1 && run_len == 1,
            rhs_contiguous: rhs_contiguous || rhs_len == 1 && run_len == 1,
            runs,
        })
    }

    /// Element offsets `(lhs, rhs)` of output element `o` — the slow,
    /// obviously-correct form, for oracles and tests.
    pub fn element(&self, o: usize) -> (usize, usize) {
        let run = &self.runs[o / self.run_len];
        let j = o % self.run_len;
        (run.lhs + if self.lhs_contiguous { j } else { 0 }, run.rhs + if self.rhs_contiguous { j } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: OperandShape = OperandShape { uses_lhs: true, uses_rhs: true, reduces_last_dim: false };
    const DOT: OperandShape = OperandShape { uses_lhs: true, uses_rhs: true, reduces_last_dim: true };

    /// NumPy-style index arithmetic, element by element.
    fn naive(lhs: &[usize], rhs: &[usize]) -> (Vec<usize>, Vec<(usize, usize)>) {
        let nd = lhs.len().max(rhs.len());
        let pad = |s: &[usize]| [vec![1; nd - s.len()], s.to_vec()].concat();
        let (l, r) = (pad(lhs), pad(rhs));
        let out: Vec<usize> = l.iter().zip(&r).map(|(&a, &b)| a.max(b)).collect();
        let n: usize = out.iter().product();
        let mut v = Vec::new();
        for o in 0..n {
            let (mut rem, mut lo, mut ro, mut ls, mut rs) = (o, 0, 0, 1, 1);
            for d in (0..nd).rev() {
                let i = rem % out[d];
                rem /= out[d];
                lo += if l[d] == 1 { 0 } else { i * ls };
                ro += if r[d] == 1 { 0 } else { i * rs };
                ls *= l[d];
                rs *= r[d];
            }
            v.push((lo, ro));
        }
        (out, v)
    }

    #[test]
    fn runs_match_numpy_indexing() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[8], &[8]),
            (&[8], &[1]),
            (&[1], &[8]),
            (&[4, 32], &[4, 1]),
            (&[4, 1], &[1, 32]),
            (&[2, 1, 4], &[3, 1]),
            (&[3, 5], &[5]),
            (&[1], &[1]),
            (&[2, 3, 4], &[2, 3, 4]),
            (&[], &[5]),
        ];
        for &(l, r) in cases {
            let plan = BroadcastPlan::new(BIN, l, r).unwrap();
            let (out, elems) = naive(l, r);
            assert_eq!(plan.out_shape, out, "{l:?} {r:?}");
            assert_eq!(plan.out_len, elems.len());
            for (o, &e) in elems.iter().enumerate() {
                assert_eq!(plan.element(o), e, "{l:?} {r:?} element {o}");
            }
        }
    }

    #[test]
    fn gat_heads_are_h_runs_with_scalar_rhs() {
        let plan = BroadcastPlan::new(BIN, &[4, 32], &[4, 1]).unwrap();
        assert_eq!((plan.runs.len(), plan.run_len), (4, 32));
        assert!(plan.lhs_contiguous && !plan.rhs_contiguous);
        assert_eq!(plan.runs[3], Run { out: 96, lhs: 96, rhs: 3 });
    }

    #[test]
    fn dot_reduces_last_dim_and_keeps_it_as_one() {
        let plan = BroadcastPlan::new(DOT, &[4, 16], &[4, 16]).unwrap();
        assert_eq!(plan.out_shape, vec![4, 1]);
        assert_eq!((plan.reduce_len, plan.runs.len()), (16, 4));
        assert_eq!(plan.runs[2], Run { out: 2, lhs: 32, rhs: 32 });
        let plan = BroadcastPlan::new(DOT, &[4, 16], &[1, 16]).unwrap();
        assert_eq!(plan.runs[2], Run { out: 2, lhs: 32, rhs: 0 });
        assert!(BroadcastPlan::new(DOT, &[4, 16], &[4, 8]).is_err());
        assert!(BroadcastPlan::new(DOT, &[], &[]).is_err());
    }

    #[test]
    fn incompatible_shapes_name_both() {
        let e = BroadcastPlan::new(BIN, &[4, 32], &[3, 1]).unwrap_err();
        assert_eq!((&e.lhs[..], &e.rhs[..]), (&[4, 32][..], &[3, 1][..]));
        assert!(e.to_string().contains("[4, 32]"));
    }

    #[test]
    fn copy_ignores_the_unused_operand() {
        let copy_u = OperandShape { uses_lhs: true, uses_rhs: false, reduces_last_dim: false };
        let plan = BroadcastPlan::new(copy_u, &[4, 8], &[999]).unwrap();
        assert!(plan.is_plain());
        assert_eq!((plan.out_len, plan.rhs_len), (32, 0));
    }
}
