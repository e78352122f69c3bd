//! `GraphConv` (Kipf & Welling): `out = D_v^{-1/2} A D_u^{-1/2} X W + b`,
//! DGL's `norm="both"` with degrees clamped to 1. Self-loops are part of
//! the graph the caller passes (GCN adds them once up front).
//!
//! The product order follows DGL: with `in > out` the GEMM runs first and
//! the graph aggregates `out`-wide rows; otherwise aggregation runs first.
//! Backward of the aggregation `A` is aggregation on the reverse graph.

use super::{Conv, G};
use crate::models::dense::{Mat, Param, matmul_into};
use crate::models::rng::Rng;
use crate::models::sparse::{copy_u, inv_sqrt_degrees};
use crate::models::{Ctx, Result};
use std::sync::Arc;

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

/// `norm="both"` factors of a graph: `d^{-1/2}` of the sources' out-degrees
/// and of the destinations' in-degrees, computed once per graph and kept in
/// its cache (forward and backward of every layer read them).
struct Norms {
    src: Vec<f32>,
    dst: Vec<f32>,
}

fn norms(g: &G) -> Result<Arc<Norms>> {
    Ok(g.cached(|| Ok(Norms { src: inv_sqrt_degrees(&g.out_degrees()), dst: inv_sqrt_degrees(&g.in_degrees()) }))?)
}

impl Conv for GraphConv {
    fn forward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat) -> Result<Mat> {
        let n = norms(g)?;
        let w = &self.weight.value;
        let mut out = if self.weight_first() {
            let mut h = ctx.mat(x.rows, w.cols);
            ctx.dense(|| {
                matmul_into(x, false, w, false, &mut h, false);
                h.scale_rows(&n.src);
            });
            let mut agg = copy_u(ctx, g, &h, "sum")?;
            ctx.recycle(h);
            ctx.dense(|| agg.scale_rows(&n.dst));
            agg
        } else {
            let mut h = ctx.mat(x.rows, x.cols);
            ctx.dense(|| h.assign_scaled_rows(x, &n.src));
            let mut agg = copy_u(ctx, g, &h, "sum")?;
            ctx.recycle(h);
            let mut out = ctx.mat(agg.rows, w.cols);
            ctx.dense(|| {
                agg.scale_rows(&n.dst);
                matmul_into(&agg, false, w, false, &mut out, false);
            });
            let old = std::mem::replace(&mut self.agg, agg);
            ctx.recycle(old);
            out
        };
        ctx.dense(|| out.add_row(&self.bias.value.data));
        Ok(out)
    }

    fn backward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat, grad_out: &Mat, need_dx: bool) -> Result<Option<Mat>> {
        let n = norms(g)?;
        let rev = g.reverse();
        ctx.dense(|| grad_out.col_sums_into(&mut self.bias.grad.data));
        if self.weight_first() {
            let mut gs = ctx.mat(grad_out.rows, grad_out.cols);
            ctx.dense(|| gs.assign_scaled_rows(grad_out, &n.dst));
            let mut gh = copy_u(ctx, &rev, &gs, "sum")?;
            ctx.recycle(gs);
            ctx.dense(|| {
                gh.scale_rows(&n.src);
                matmul_into(x, true, &gh, false, &mut self.weight.grad, true);
            });
            let dx = if need_dx {
                let mut dx = ctx.mat(gh.rows, self.weight.value.rows);
                ctx.dense(|| matmul_into(&gh, false, &self.weight.value, true, &mut dx, false));
                Some(dx)
            } else {
                None
            };
            ctx.recycle(gh);
            Ok(dx)
        } else {
            ctx.dense(|| matmul_into(&self.agg, true, grad_out, false, &mut self.weight.grad, true));
            if !need_dx {
                return Ok(None);
            }
            let mut gagg = ctx.mat(grad_out.rows, self.weight.value.rows);
            ctx.dense(|| {
                matmul_into(grad_out, false, &self.weight.value, true, &mut gagg, false);
                gagg.scale_rows(&n.dst);
            });
            let mut dx = copy_u(ctx, &rev, &gagg, "sum")?;
            ctx.recycle(gagg);
            ctx.dense(|| dx.scale_rows(&n.src));
            Ok(Some(dx))
        }
    }

    fn params(&mut self) -> Vec<&mut Param> {
        vec![&mut self.weight, &mut self.bias]
    }
}
