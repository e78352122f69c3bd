//! `GraphConv` (Kipf & Welling): `out = D_v^{-1/2} A D_u^{-1/2} X W + b`,
//! DGL's `norm="both"` with degrees clamped to 1. Self-loops are part of
//! the graph the caller passes (GCN adds them once up front).
//!
//! The product order follows DGL: with `in > out` the GEMM runs first and
//! the graph aggregates `out`-wide rows; otherwise aggregation runs first.
//! Backward of the aggregation `A` is aggregation on the reverse graph.

use super::{Conv, G};
use crate::models::dense::{Mat, Param, matmul, matmul_into};
use crate::models::rng::Rng;
use crate::models::sparse::{copy_u, inv_sqrt_degrees};
use crate::models::{Ctx, Result};

/// A GCN layer.
#[derive(Clone, Debug)]
pub struct GraphConv {
    pub weight: Param,
    pub bias: Param,
    /// Cached: the normalised aggregation (aggregate-first order only).
    agg: Mat,
}

impl GraphConv {
    /// Glorot-initialised weight `[in, out]`, zero bias.
    pub fn new(input: usize, output: usize, rng: &mut Rng) -> Self {
        Self { weight: Param::glorot(input, output, 1.0, rng), bias: Param::zeros(1, output), agg: Mat::default() }
    }

    fn weight_first(&self) -> bool {
        self.weight.value.rows > self.weight.value.cols
    }
}

/// `(src norm, dst norm)` of `g`.
fn norms(g: &G) -> (Vec<f32>, Vec<f32>) {
    (inv_sqrt_degrees(&g.out_degrees()), inv_sqrt_degrees(&g.in_degrees()))
}

impl Conv for GraphConv {
    fn forward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat) -> Result<Mat> {
        let (ns, nd) = norms(g);
        let mut out = if self.weight_first() {
            let mut h = ctx.dense(|| matmul(x, false, &self.weight.value, false));
            ctx.dense(|| h.scale_rows(&ns));
            let mut agg = copy_u(ctx, g, &h, "sum")?;
            ctx.dense(|| agg.scale_rows(&nd));
            agg
        } else {
            let mut h = x.clone();
            ctx.dense(|| h.scale_rows(&ns));
            let mut agg = copy_u(ctx, g, &h, "sum")?;
            ctx.dense(|| agg.scale_rows(&nd));
            let out = ctx.dense(|| matmul(&agg, false, &self.weight.value, false));
            self.agg = agg;
            out
        };
        ctx.dense(|| out.add_row(&self.bias.value.data));
        Ok(out)
    }

    fn backward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat, grad_out: &Mat, need_dx: bool) -> Result<Option<Mat>> {
        let (ns, nd) = norms(g);
        let rev = g.reverse();
        ctx.dense(|| grad_out.col_sums_into(&mut self.bias.grad.data));
        if self.weight_first() {
            let mut gs = grad_out.clone();
            ctx.dense(|| gs.scale_rows(&nd));
            let mut gh = copy_u(ctx, &rev, &gs, "sum")?;
            ctx.dense(|| gh.scale_rows(&ns));
            ctx.dense(|| matmul_into(x, true, &gh, false, &mut self.weight.grad, true));
            Ok(if need_dx { Some(ctx.dense(|| matmul(&gh, false, &self.weight.value, true))) } else { None })
        } else {
            ctx.dense(|| matmul_into(&self.agg, true, grad_out, false, &mut self.weight.grad, true));
            if !need_dx {
                return Ok(None);
            }
            let mut gagg = ctx.dense(|| matmul(grad_out, false, &self.weight.value, true));
            ctx.dense(|| gagg.scale_rows(&nd));
            let mut dx = copy_u(ctx, &rev, &gagg, "sum")?;
            ctx.dense(|| dx.scale_rows(&ns));
            Ok(Some(dx))
        }
    }

    fn params(&mut self) -> Vec<&mut Param> {
        vec![&mut self.weight, &mut self.bias]
    }
}
