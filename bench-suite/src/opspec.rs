//! What `--op NAME --dim D [--heads H]` means: the op family, the operand
//! shapes the benchmark feeds it, and the output shape.
//!
//! Operand layout (the same in `peers/peer_op.py`):
//! - node operands (`u`, `v`) are `[N, D]`, or `[N, H, D/H]` with `--heads H`;
//! - edge operands (`e`) are `[E, H, 1]` with `--heads H`; without heads they
//!   are `[E, 1]` (a scalar edge weight, as in GCN) when the other operand is
//!   a node operand and the operator is elementwise, else `[E, D]`
//!   (`copy_e_*`, `e_add_e`, `u_dot_e`, ...);
//! - `edge_softmax` logits are `[E, H, 1]` with heads, else `[E, D]`;
//!   `edge_softmax_backward` takes the softmax output and the output gradient,
//!   both of that shape.
//! - Gradient ops are named `<forward name>_backward` (`u_mul_e_sum_backward`,
//!   `u_dot_v_backward`): the forward operands plus the output gradient (the
//!   forward output's shape); they write the gradient of every operand the
//!   operator reads, concatenated (lhs first) into one flat output. Max/min
//!   gradients route through the forward's arg outputs, computed once before
//!   timing.
//!
//! Inputs are seeded ([`crate::rng`]): lhs stream seed 1, rhs stream seed 2,
//! output gradient seed 3, values in `[-1, 1)`, except a `div` denominator,
//! which is in `[0.5, 1.5)`.

use crate::error::{BenchError, Result};
use gnnkern::op::{BinaryOpKind, Target};
use gnnkern::{SddmmSpec, SpmmSpec};
use gnnkern_simd::layout::{BroadcastPlan, OperandShape};

/// Seed of the lhs (or only) input stream.
pub const LHS_SEED: u64 = 1;
/// Seed of the rhs input stream.
pub const RHS_SEED: u64 = 2;
/// Seed of the output-gradient stream of gradient ops.
pub const GRAD_SEED: u64 = 3;

/// The op families the bench runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpFamily {
    /// A g-SpMM (`copy_u_sum`, `u_mul_e_max`, ...).
    Spmm(SpmmSpec),
    /// A g-SDDMM (`u_dot_v`, `u_add_v`, `copy_u`, ...).
    Sddmm(SddmmSpec),
    /// `edge_softmax` over each destination's in-edges.
    EdgeSoftmax,
    /// The gradient of `edge_softmax` w.r.t. its logits.
    EdgeSoftmaxBackward,
    /// The gradients of a g-SpMM w.r.t. the operands it reads.
    SpmmBackward(SpmmSpec),
    /// The gradients of a g-SDDMM w.r.t. the operands it reads.
    SddmmBackward(SddmmSpec),
}

/// A parsed op name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchOp {
    pub name: String,
    pub family: OpFamily,
}

impl BenchOp {
    /// Parses a DGL op name, `edge_softmax`, or a gradient op `<name>_backward`.
    pub fn parse(name: &str) -> Result<Self> {
        if let Some(forward) = name.strip_suffix("_backward").filter(|f| *f != "edge_softmax") {
            let family = match Self::parse(forward)?.family {
                OpFamily::Spmm(s) => OpFamily::SpmmBackward(s),
                OpFamily::Sddmm(s) => OpFamily::SddmmBackward(s),
                _ => return Err(BenchError::input("--op", format!("`{name}` has no gradient op"))),
            };
            return Ok(Self { name: name.to_string(), family });
        }
        let family = match name {
            "edge_softmax" => OpFamily::EdgeSoftmax,
            "edge_softmax_backward" => OpFamily::EdgeSoftmaxBackward,
            _ => match SpmmSpec::from_name(name) {
                Ok(spec) => OpFamily::Spmm(spec),
                Err(_) => match SddmmSpec::from_name(name) {
                    Ok(spec) => OpFamily::Sddmm(spec),
                    Err(_) => {
                        return Err(BenchError::input(
                            "--op",
                            format!(
                                "unknown op `{name}` (expected a g-SpMM name such as copy_u_sum or u_mul_e_max, \
                                 a g-SDDMM name such as u_dot_v or copy_u, edge_softmax, or one of these \
                                 followed by _backward)"
                            ),
                        ));
                    }
                },
            },
        };
        Ok(Self { name: name.to_string(), family })
    }

    /// The message operator and its operand targets (g-SpMM / g-SDDMM only).
    pub fn message(&self) -> Option<(BinaryOpKind, Target, Target)> {
        match self.family {
            OpFamily::Spmm(s) | OpFamily::SpmmBackward(s) => Some((s.op, s.lhs, s.rhs)),
            OpFamily::Sddmm(s) | OpFamily::SddmmBackward(s) => Some((s.op, s.lhs, s.rhs)),
            OpFamily::EdgeSoftmax | OpFamily::EdgeSoftmaxBackward => None,
        }
    }

    /// Whether this is a g-SpMM or g-SDDMM gradient op.
    pub fn is_gradient(&self) -> bool {
        matches!(self.family, OpFamily::SpmmBackward(_) | OpFamily::SddmmBackward(_))
    }
}

/// Sizes of the graph an op runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphDims {
    pub num_src: usize,
    pub num_dst: usize,
    pub num_edges: usize,
}

impl GraphDims {
    /// Rows of a tensor attached to `target`.
    pub fn rows(&self, target: Target) -> usize {
        match target {
            Target::Src => self.num_src,
            Target::Dst => self.num_dst,
            Target::Edge => self.num_edges,
        }
    }
}

/// One operand: where its rows live and its full shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    pub target: Target,
    pub shape: Vec<usize>,
    /// Value range of the seeded input.
    pub range: (f32, f32),
}

impl Operand {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the operand has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements per row.
    pub fn row_len(&self) -> usize {
        self.shape[1..].iter().product()
    }
}

/// The shapes of one benchmark case.
#[derive(Clone, Debug, PartialEq)]
pub struct OpShapes {
    pub lhs: Option<Operand>,
    pub rhs: Option<Operand>,
    /// The output gradient a gradient op reads (the forward output's shape).
    pub grad_out: Option<Operand>,
    /// Output shape (rows first); for gradient ops `[len(grad lhs) + len(grad rhs)]`.
    pub out: Vec<usize>,
    /// Length of the last dimension a `dot` reduces (1 otherwise).
    pub reduce_len: usize,
}

const DEFAULT_RANGE: (f32, f32) = (-1.0, 1.0);
const DENOMINATOR_RANGE: (f32, f32) = (0.5, 1.5);

/// The operand and output shapes of `op` at feature size `dim` and `heads`.
pub fn shapes(op: &BenchOp, g: GraphDims, dim: usize, heads: Option<usize>) -> Result<OpShapes> {
    if dim == 0 {
        return Err(BenchError::input("--dim", "must be at least 1"));
    }
    if let Some(h) = heads
        && (h == 0 || !dim.is_multiple_of(h))
    {
        return Err(BenchError::input("--heads", format!("{h} heads must be at least 1 and divide --dim {dim}")));
    }
    let node_feat = match heads {
        Some(h) => vec![h, dim / h],
        None => vec![dim],
    };
    let edge_value_feat = match heads {
        Some(h) => vec![h, 1],
        None => vec![dim],
    };
    let Some((kind, lhs_t, rhs_t)) = op.message() else {
        let feat = edge_value_feat;
        let operand = |_| Operand { target: Target::Edge, shape: with_rows(g.num_edges, &feat), range: DEFAULT_RANGE };
        let rhs = match op.family {
            OpFamily::EdgeSoftmaxBackward => Some(operand(())),
            _ => None,
        };
        return Ok(OpShapes {
            lhs: Some(operand(())),
            rhs,
            grad_out: None,
            out: with_rows(g.num_edges, &feat),
            reduce_len: 1,
        });
    };
    let is_dot = kind == BinaryOpKind::Dot;
    let feat_of = |target: Target, other: Option<Target>| -> Vec<usize> {
        match target {
            Target::Src | Target::Dst => node_feat.clone(),
            Target::Edge => match (heads, other) {
                (Some(h), _) => vec![h, 1],
                (None, Some(Target::Src | Target::Dst)) if !is_dot => vec![1],
                _ => vec![dim],
            },
        }
    };
    let uses_lhs = kind.uses_lhs();
    let uses_rhs = kind.uses_rhs();
    let lhs_feat = uses_lhs.then(|| feat_of(lhs_t, uses_rhs.then_some(rhs_t)));
    let rhs_feat = uses_rhs.then(|| feat_of(rhs_t, uses_lhs.then_some(lhs_t)));
    let plan = BroadcastPlan::new(
        OperandShape { uses_lhs, uses_rhs, reduces_last_dim: is_dot },
        lhs_feat.as_deref().unwrap_or(&[]),
        rhs_feat.as_deref().unwrap_or(&[]),
    )
    .map_err(|e| BenchError::input(format!("operands of {}", op.name), e.to_string()))?;
    let operand = |target: Target, feat: Vec<usize>, denominator: bool| Operand {
        target,
        shape: with_rows(g.rows(target), &feat),
        range: if denominator { DENOMINATOR_RANGE } else { DEFAULT_RANGE },
    };
    let is_div = kind == BinaryOpKind::Div;
    let out_rows = match op.family {
        OpFamily::Spmm(_) | OpFamily::SpmmBackward(_) => g.num_dst,
        _ => g.num_edges,
    };
    let lhs = lhs_feat.map(|f| operand(lhs_t, f, false));
    let rhs = rhs_feat.map(|f| operand(rhs_t, f, is_div));
    let forward_out = with_rows(out_rows, &plan.out_shape);
    if op.is_gradient() {
        let grads = lhs.as_ref().map_or(0, Operand::len) + rhs.as_ref().map_or(0, Operand::len);
        let grad_target = if out_rows == g.num_dst { Target::Dst } else { Target::Edge };
        return Ok(OpShapes {
            lhs,
            rhs,
            grad_out: Some(Operand { target: grad_target, shape: forward_out, range: DEFAULT_RANGE }),
            out: vec![grads],
            reduce_len: plan.reduce_len,
        });
    }
    Ok(OpShapes { lhs, rhs, grad_out: None, out: forward_out, reduce_len: plan.reduce_len })
}

fn with_rows(rows: usize, feat: &[usize]) -> Vec<usize> {
    let mut s = Vec::with_capacity(feat.len() + 1);
    s.push(rows);
    s.extend_from_slice(feat);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: GraphDims = GraphDims { num_src: 10, num_dst: 8, num_edges: 30 };

    fn sh(name: &str, dim: usize, heads: Option<usize>) -> OpShapes {
        shapes(&BenchOp::parse(name).unwrap(), G, dim, heads).unwrap()
    }

    #[test]
    fn shapes_follow_the_documented_layout() {
        let s = sh("copy_u_sum", 32, None);
        assert_eq!(s.lhs.unwrap().shape, vec![10, 32]);
        assert!(s.rhs.is_none());
        assert_eq!(s.out, vec![8, 32]);

        let s = sh("u_mul_e_sum", 32, None);
        assert_eq!(s.rhs.unwrap().shape, vec![30, 1]);
        assert_eq!(s.out, vec![8, 32]);

        let s = sh("u_mul_e_sum", 32, Some(4));
        assert_eq!(s.lhs.unwrap().shape, vec![10, 4, 8]);
        assert_eq!(s.rhs.unwrap().shape, vec![30, 4, 1]);
        assert_eq!(s.out, vec![8, 4, 8]);

        let s = sh("u_dot_v", 32, Some(4));
        assert_eq!(s.out, vec![30, 4, 1]);
        assert_eq!(s.reduce_len, 8);

        let s = sh("copy_e_max", 16, None);
        assert_eq!(s.lhs.unwrap().shape, vec![30, 16]);

        let s = sh("u_div_e_sum", 16, None);
        assert_eq!(s.rhs.unwrap().range, DENOMINATOR_RANGE);

        let s = sh("edge_softmax", 16, Some(2));
        assert_eq!(s.out, vec![30, 2, 1]);
        let s = sh("edge_softmax_backward", 16, None);
        assert_eq!(s.rhs.unwrap().shape, vec![30, 16]);

        let s = sh("u_mul_e_sum_backward", 16, None);
        assert_eq!(s.grad_out.unwrap().shape, vec![8, 16]);
        assert_eq!(s.out, vec![10 * 16 + 30]);
        let s = sh("copy_u_max_backward", 16, None);
        assert_eq!(s.out, vec![10 * 16]);
        let s = sh("u_dot_v_backward", 16, Some(2));
        assert_eq!(s.grad_out.unwrap().shape, vec![30, 2, 1]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(BenchOp::parse("u_pow_e_sum").is_err());
        assert!(BenchOp::parse("u_pow_e_sum_backward").is_err());
        assert!(BenchOp::parse("u_dot_v_backward").unwrap().is_gradient());
        let op = BenchOp::parse("copy_u_sum").unwrap();
        assert!(shapes(&op, G, 0, None).is_err());
        assert!(shapes(&op, G, 30, Some(4)).is_err());
    }
}
