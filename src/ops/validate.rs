//! Input checks shared by the op entry points. Each returns a typed error
//! naming the operand, the expected and the actual shape.

use crate::backend::target_rows;
use crate::graph::Graph;
use crate::tensor::{TensorMut, TensorRef};
use crate::{Error, Index, Result};
use gnnkern_simd::layout::{BroadcastPlan, OperandShape};
use gnnkern_simd::op::{BinaryOp, Reducer, Target};

/// Validated operands of a binary message and their broadcast plan.
pub(crate) struct Checked<'a> {
    pub plan: BroadcastPlan,
    pub lhs: &'a [f32],
    pub rhs: &'a [f32],
}

fn operand<'a, I: Index>(
    graph: &Graph<I>,
    what: &str,
    side: &str,
    used: bool,
    (target, tensor): (Target, Option<TensorRef<'a>>),
) -> Result<(&'a [f32], &'a [usize])> {
    if !used {
        return Ok((&[], &[]));
    }
    let t = tensor.ok_or_else(|| {
        Error::MissingOperand(format!(
            "{what}: the operator reads its {side} operand ({}) but none was given",
            target.letter()
        ))
    })?;
    let rows = target_rows(graph, target);
    if t.rows() != rows {
        let mut expected = t.shape().to_vec();
        expected[0] = rows;
        return Err(Error::BadShape {
            what: format!(
                "{what}: {side} operand on '{}' needs one row per {}",
                target.letter(),
                match target {
                    Target::Src => "source node",
                    Target::Edge => "edge",
                    Target::Dst => "destination node",
                }
            ),
            expected,
            actual: t.shape().to_vec(),
        });
    }
    Ok((t.data(), t.feat_shape()))
}

/// Checks operand presence and leading sizes and plans broadcasting.
pub(crate) fn binary<'a, O: BinaryOp, I: Index>(
    graph: &Graph<I>,
    family: &str,
    lhs: (Target, Option<TensorRef<'a>>),
    rhs: (Target, Option<TensorRef<'a>>),
) -> Result<Checked<'a>> {
    let what = format!("{family} {}", O::NAME);
    let (l, lshape) = operand(graph, &what, "lhs", O::USE_LHS, lhs)?;
    let (r, rshape) = operand(graph, &what, "rhs", O::USE_RHS, rhs)?;
    let plan = BroadcastPlan::new(OperandShape::of::<O>(), lshape, rshape).map_err(|e| Error::ShapeMismatch {
        what,
        lhs: e.lhs,
        rhs: e.rhs,
        reason: e.reason.to_string(),
    })?;
    Ok(Checked { plan, lhs: l, rhs: r })
}

/// The output must be `[rows, out_feat...]`.
pub(crate) fn output(what: &str, out: &TensorMut<'_>, rows: usize, out_feat: &[usize]) -> Result<()> {
    let mut expected = vec![rows];
    expected.extend_from_slice(out_feat);
    if out.shape() != expected.as_slice() {
        return Err(Error::BadShape { what: format!("{what}: output"), expected, actual: out.shape().to_vec() });
    }
    Ok(())
}

/// A read-only tensor must be `[rows, feat...]`.
pub(crate) fn tensor_shape(what: &str, actual: &[usize], rows: usize, feat: &[usize]) -> Result<()> {
    let mut expected = vec![rows];
    expected.extend_from_slice(feat);
    if actual != expected.as_slice() {
        return Err(Error::BadShape { what: what.to_string(), expected, actual: actual.to_vec() });
    }
    Ok(())
}

/// Arg outputs exist only for max/min and then have the output's length.
pub(crate) fn arg_outputs<R: Reducer, I: Index>(
    out_len: usize,
    arg_u: Option<&[I]>,
    arg_e: Option<&[I]>,
) -> Result<()> {
    for (name, arg) in [("arg_u", arg_u), ("arg_e", arg_e)] {
        let Some(a) = arg else { continue };
        if !R::HAS_ARG {
            return Err(Error::MissingOperand(format!("{name} was given but reducer {} has no arg output", R::NAME)));
        }
        if a.len() != out_len {
            return Err(Error::LengthMismatch { what: name, expected: out_len, actual: a.len() });
        }
    }
    Ok(())
}

/// An edge tensor needs one row per edge.
pub(crate) fn edge_tensor(what: &str, shape: &[usize], num_edges: usize) -> Result<()> {
    if shape[0] != num_edges {
        let mut expected = shape.to_vec();
        expected[0] = num_edges;
        return Err(Error::BadShape {
            what: format!("{what} needs one row per edge"),
            expected,
            actual: shape.to_vec(),
        });
    }
    Ok(())
}

/// Two tensors that must have identical shapes.
pub(crate) fn same_shape(what: &str, expected: &[usize], actual: &[usize]) -> Result<()> {
    if expected != actual {
        return Err(Error::BadShape { what: what.to_string(), expected: expected.to_vec(), actual: actual.to_vec() });
    }
    Ok(())
}
