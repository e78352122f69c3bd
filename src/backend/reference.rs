//! The reference backend: plain loops, f64 accumulation, written for
//! clarity. It is the oracle every other backend is tested against.
//!
//! Semantics it pins down (every backend must match):
//! - sum/mean accumulate in f64 and round once; mean divides by the
//!   in-degree; an empty row gives 0;
//! - max/min compare each message *after rounding it to f32* (what an f32
//!   kernel computes for an elementwise operator), keep the first extreme
//!   in in-CSR row order, propagate NaN ([`Reducer::replaces`]); an empty
//!   row gives 0 with arg outputs -1;
//! - dot sums its K products in f64.

use super::{Backend, BackendKind, EdgeSoftmaxBackwardCall, EdgeSoftmaxCall, SddmmCall, SpmmCall};
use crate::{Index, Result};
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{BinaryOp, Reducer, Target};
use rayon::prelude::*;

/// The reference backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

/// The operand row a target selects for edge `e = (u, v)`.
fn row_of(target: Target, u: usize, e: usize, v: usize) -> usize {
    match target {
        Target::Src => u,
        Target::Edge => e,
        Target::Dst => v,
    }
}

/// Output element `o` of the message `φ(lhs_row, rhs_row)`, in f64.
fn message<O: BinaryOp>(plan: &BroadcastPlan, lhs: &[f32], rhs: &[f32], o: usize) -> f64 {
    let (lo, ro) = plan.element(o);
    let at = |row: &[f32], i: usize| row.get(i).map_or(0.0, |&x| f64::from(x));
    if O::REDUCES_LAST_DIM {
        (0..plan.reduce_len).map(|k| O::apply_f64(at(lhs, lo + k), at(rhs, ro + k))).sum()
    } else {
        O::apply_f64(at(lhs, lo), at(rhs, ro))
    }
}

fn row(data: &[f32], len: usize, r: usize) -> &[f32] {
    if len == 0 { &[] } else { &data[r * len..(r + 1) * len] }
}

impl Backend for Reference {
    const KIND: BackendKind = BackendKind::Reference;

    fn gspmm<O: BinaryOp, R: Reducer, I: Index>(&self, call: SpmmCall<'_, I>) -> Result<()> {
        let SpmmCall { graph, lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e } = call;
        let csr = graph.in_csr();
        let len = plan.out_len;
        if len == 0 {
            return Ok(());
        }
        // The winning in-CSR slot of every output element (max/min only).
        let mut winners: Vec<Option<usize>> = vec![None; out.len()];
        out.par_chunks_mut(len).zip(winners.par_chunks_mut(len)).enumerate().for_each(|(v, (out_row, best))| {
            let range = csr.row_range(v);
            let degree = range.len();
            let mut acc = vec![f64::from(R::IDENTITY); len];
            let mut slot: Vec<Option<usize>> = vec![None; len];
            for k in range {
                let (u, e) = (csr.indices()[k].to_usize(), csr.eids()[k].to_usize());
                let l = row(lhs, plan.lhs_len, row_of(lhs_target, u, e, v));
                let r = row(rhs, plan.rhs_len, row_of(rhs_target, u, e, v));
                for o in 0..len {
                    let m = message::<O>(plan, l, r, o);
                    if R::HAS_ARG {
                        let m = f64::from(m as f32);
                        if slot[o].is_none() || R::replaces_f64(m, acc[o]) {
                            acc[o] = m;
                            slot[o] = Some(k);
                        }
                    } else {
                        acc[o] += m;
                    }
                }
            }
            for o in 0..len {
                out_row[o] = match degree {
                    0 => 0.0,
                    d if R::DIVIDES_BY_DEGREE => (acc[o] / d as f64) as f32,
                    _ => acc[o] as f32,
                };
            }
            best.copy_from_slice(&slot);
        });
        let ids_of = |ids: &[I], arg: Option<&mut [I]>| {
            if let Some(arg) = arg {
                for (a, w) in arg.iter_mut().zip(&winners) {
                    *a = w.map_or(I::NONE, |k| ids[k]);
                }
            }
        };
        ids_of(csr.indices(), arg_u);
        ids_of(csr.eids(), arg_e);
        Ok(())
    }

    fn gsddmm<O: BinaryOp, I: Index>(&self, call: SddmmCall<'_, I>) -> Result<()> {
        let SddmmCall { graph, lhs_target, rhs_target, plan, lhs, rhs, out } = call;
        let len = plan.out_len;
        if len == 0 {
            return Ok(());
        }
        let (src, dst) = graph.coo();
        out.par_chunks_mut(len).enumerate().for_each(|(e, out_row)| {
            let (u, v) = (src[e].to_usize(), dst[e].to_usize());
            let l = row(lhs, plan.lhs_len, row_of(lhs_target, u, e, v));
            let r = row(rhs, plan.rhs_len, row_of(rhs_target, u, e, v));
            for (o, x) in out_row.iter_mut().enumerate() {
                *x = message::<O>(plan, l, r, o) as f32;
            }
        });
        Ok(())
    }

    fn edge_softmax<I: Index>(&self, call: EdgeSoftmaxCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxCall { graph, logits, row_len: d, out } = call;
        let csr = graph.in_csr();
        // Sequential over destinations: each writes the rows of its own
        // in-edges, which are scattered through `out` by edge id.
        for v in 0..graph.num_dst() {
            let edges: Vec<usize> = csr.row_range(v).map(|k| csr.eids()[k].to_usize()).collect();
            for j in 0..d {
                let x = |e: usize| f64::from(logits[e * d + j]);
                let max = edges.iter().map(|&e| x(e)).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = edges.iter().map(|&e| (x(e) - max).exp()).sum();
                for &e in &edges {
                    out[e * d + j] = ((x(e) - max).exp() / sum) as f32;
                }
            }
        }
        Ok(())
    }

    fn edge_softmax_backward<I: Index>(&self, call: EdgeSoftmaxBackwardCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxBackwardCall { graph, out: y, grad_out: g, row_len: d, grad_logits } = call;
        let csr = graph.in_csr();
        for v in 0..graph.num_dst() {
            let edges: Vec<usize> = csr.row_range(v).map(|k| csr.eids()[k].to_usize()).collect();
            for j in 0..d {
                let at = |t: &[f32], e: usize| f64::from(t[e * d + j]);
                let dot: f64 = edges.iter().map(|&e| at(g, e) * at(y, e)).sum();
                for &e in &edges {
                    grad_logits[e * d + j] = (at(y, e) * (at(g, e) - dot)) as f32;
                }
            }
        }
        Ok(())
    }
}
