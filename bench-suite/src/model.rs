//! The FLOP count and the minimum-traffic model of every op family — the
//! denominators of `gflops` and `gbps` (also stated in docs/BENCHMARKS.md).
//!
//! Notation: `N_s`/`N_d` source/destination nodes, `E` edges, `b` index
//! bytes (4 for i32 graphs, 8 for i64), `L`/`R`/`O` elements per lhs / rhs /
//! output row, `K` the length a `dot` reduces. Features are f32 (4 bytes).
//!
//! **FLOPs** (one multiply, add, compare, divide or exp = 1 FLOP):
//! - message `φ` per edge: copy 0; add/sub/mul/div `O`; dot `2·K·O`;
//! - g-SpMM: `E·(φ + O)` (one reduction step per message element), plus
//!   `N_d·O` divisions for `mean`. So `copy_u_sum` = `E·d`, `u_mul_e_sum` = `2·E·d`;
//! - g-SDDMM: `E·φ` (`copy_*` is pure data movement: 0 FLOPs, gflops 0);
//! - edge_softmax: `5·E·O` (max, subtract, exp, sum, divide per element);
//! - edge_softmax_backward: `4·E·O` (product, row sum, subtract, product);
//! - g-SpMM / g-SDDMM gradient ops: `G·E·(φ + O)` for `G` operand gradients
//!   (`O`, `φ` of the forward; each gradient element is at least accumulated).
//!
//! **Minimum traffic** (bytes that must cross the memory interface at least
//! once; assumes every operand row is fetched once however often it is
//! reused — perfect cache reuse — and counts no write-allocate reads, as
//! STREAM does, so `pct_of_triad` is comparable):
//! - g-SpMM (traversal of the in-CSR): `(N_d+1)·b` indptr + `E·b` column
//!   indices, `+ E·b` edge ids if an operand lives on edges; each operand
//!   read once (`N_s·L·4` for a source operand, `E·L·4` for an edge operand,
//!   `N_d·L·4` for a destination operand); output `N_d·O·4` written once.
//!   E.g. `copy_u_sum`: `(N_d+1+E)·b + N_s·d·4 + N_d·d·4`;
//! - g-SDDMM (edge-parallel): `E·b` per distinct node target read (source
//!   ids and/or destination ids), operands read once, output `E·O·4`;
//! - edge_softmax: `(N_d+1)·b + E·b` (indptr + edge ids), logits read once
//!   and output written once (`2·E·O·4`); real kernels make 2–3 passes;
//! - edge_softmax_backward: the same structure, three `E·O·4` tensors;
//! - gradient ops: per operand gradient one traversal's structure
//!   (`(max(N_s, N_d)+1)·b` indptr, `E·b` indices, `E·b` edge ids), plus every
//!   operand and the output gradient read once and every gradient written once.
//!
//! These are lower bounds: a kernel at 100% of the model's bandwidth moves
//! no more than the unavoidable bytes, so `pct_of_triad` reads as "how close
//! to streaming the unavoidable data at triad speed".

use crate::opspec::{BenchOp, GraphDims, OpFamily, OpShapes};
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{SddmmSpec, SpmmSpec};

/// FLOPs and minimum bytes of one op execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cost {
    pub flops: u64,
    pub bytes: u64,
}

fn operand_bytes(op: &Option<crate::opspec::Operand>) -> u64 {
    op.as_ref().map_or(0, |o| o.len() as u64 * 4)
}

/// The cost model of `op` with `shapes` on graph `g` with `idx_bytes` indices.
pub fn cost(op: &BenchOp, g: GraphDims, shapes: &OpShapes, idx_bytes: u64) -> Cost {
    let e = g.num_edges as u64;
    let n_d = g.num_dst as u64;
    let o = shapes.out[1..].iter().product::<usize>() as u64;
    let k = shapes.reduce_len as u64;
    let operands = operand_bytes(&shapes.lhs) + operand_bytes(&shapes.rhs);
    let out_bytes = shapes.out.iter().product::<usize>() as u64 * 4;
    let phi = |kind: BinaryOpKind| match kind {
        BinaryOpKind::CopyLhs | BinaryOpKind::CopyRhs => 0,
        BinaryOpKind::Dot => 2 * k * o,
        BinaryOpKind::Add | BinaryOpKind::Sub | BinaryOpKind::Mul | BinaryOpKind::Div => o,
    };
    let targets = || [shapes.lhs.as_ref(), shapes.rhs.as_ref()].into_iter().flatten().map(|x| x.target);
    match op.family {
        OpFamily::Spmm(spec) => {
            let mean = if spec.reduce == ReduceKind::Mean { n_d * o } else { 0 };
            let edge_ids = if targets().any(|t| t == Target::Edge) { e * idx_bytes } else { 0 };
            Cost {
                flops: e * (phi(spec.op) + o) + mean,
                bytes: (n_d + 1 + e) * idx_bytes + edge_ids + operands + out_bytes,
            }
        }
        OpFamily::Sddmm(spec) => {
            let mut node_targets: Vec<Target> = targets().filter(|&t| t != Target::Edge).collect();
            node_targets.dedup();
            Cost { flops: e * phi(spec.op), bytes: node_targets.len() as u64 * e * idx_bytes + operands + out_bytes }
        }
        OpFamily::EdgeSoftmax => Cost { flops: 5 * e * o, bytes: (n_d + 1 + e) * idx_bytes + operands + out_bytes },
        OpFamily::EdgeSoftmaxBackward => {
            Cost { flops: 4 * e * o, bytes: (n_d + 1 + e) * idx_bytes + operands + out_bytes }
        }
        OpFamily::SpmmBackward(SpmmSpec { op: kind, .. }) | OpFamily::SddmmBackward(SddmmSpec { op: kind, .. }) => {
            let grads = targets().count() as u64;
            let o_fwd = shapes.grad_out.as_ref().map_or(0, |g| g.row_len() as u64);
            let phi = match kind {
                BinaryOpKind::CopyLhs | BinaryOpKind::CopyRhs => 0,
                BinaryOpKind::Dot => 2 * k * o_fwd,
                _ => o_fwd,
            };
            let n = g.num_src.max(g.num_dst) as u64;
            let grad_out = shapes.grad_out.as_ref().map_or(0, |g| g.len() as u64 * 4);
            Cost {
                flops: grads * e * (phi + o_fwd),
                bytes: grads * (n + 1 + 2 * e) * idx_bytes + operands + grad_out + out_bytes,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opspec::shapes;

    const G: GraphDims = GraphDims { num_src: 100, num_dst: 100, num_edges: 1000 };

    fn c(name: &str, dim: usize, heads: Option<usize>) -> Cost {
        let op = BenchOp::parse(name).unwrap();
        cost(&op, G, &shapes(&op, G, dim, heads).unwrap(), 4)
    }

    #[test]
    fn formulas_match_the_documentation() {
        // copy_u_sum: E·d FLOPs; (N+1+E)·4 + N·d·4 + N·d·4 bytes.
        assert_eq!(c2("copy_u_sum", 32), Cost { flops: 1000 * 32, bytes: 1101 * 4 + 2 * 100 * 32 * 4 });
        // mean adds N·d divisions.
        assert_eq!(c2("copy_u_mean", 32).flops, 1000 * 32 + 100 * 32);
        // u_mul_e_sum with a scalar edge weight: 2·E·d FLOPs, + E ids + E weights.
        assert_eq!(
            c2("u_mul_e_sum", 32),
            Cost { flops: 2 * 1000 * 32, bytes: 1101 * 4 + 1000 * 4 + 100 * 32 * 4 + 1000 * 4 + 100 * 32 * 4 }
        );
        // u_dot_v, 4 heads of 8: 2·K·O = 2·8·4 per edge; src+dst ids; two node operands; E·4 outputs.
        assert_eq!(
            c("u_dot_v", 32, Some(4)),
            Cost { flops: 1000 * 64, bytes: 2 * 1000 * 4 + 2 * 100 * 32 * 4 + 1000 * 4 * 4 }
        );
        assert_eq!(c("copy_u", 8, None).flops, 0);
        assert_eq!(c("edge_softmax", 8, None).flops, 5 * 1000 * 8);
        // u_mul_e_sum_backward: 2 gradients × E·(d + d); structure twice; x, w, grad_out read; grads written.
        assert_eq!(
            c("u_mul_e_sum_backward", 8, None),
            Cost {
                flops: 2 * 1000 * 16,
                bytes: 2 * 2101 * 4 + (100 * 8 + 1000) * 4 + 100 * 8 * 4 + (100 * 8 + 1000) * 4
            }
        );
    }

    fn c2(name: &str, dim: usize) -> Cost {
        c(name, dim, None)
    }

    #[test]
    fn models_scale_with_dimension() {
        assert!(c2("copy_u_max", 128).bytes > c2("copy_u_max", 32).bytes);
    }
}
