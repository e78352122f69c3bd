//! `SageConv` (Hamilton et al.): `out = x_v W_self + agg_{u→v}(·) W_neigh + b`
//! with separate self and neighbour weights, as DGL's `SAGEConv`.
//!
//! - `Mean`: `agg = mean_u x_u`. Mean is linear, so with `in > out` the
//!   neighbour GEMM runs first and the graph averages `out`-wide rows
//!   (DGL's `lin_before_mp`). Backward: scale by `1/deg(v)`, then sum on
//!   the reverse graph.
//! - `Pool` (max): `agg = max_u relu(x_u W_pool + b_pool)`. The forward
//!   `copy_u_max` also returns, per output element, the winning source
//!   (`arg_u`); backward routes each gradient element to that source only.

use super::{Conv, G};
use crate::models::dense::{Mat, Param, gemm_into, matmul_into};
use crate::models::nn::{relu, relu_backward};
use crate::models::rng::Rng;
use crate::models::sparse::{copy_u, copy_u_max};
use crate::models::{Ctx, Result};
use std::sync::Arc;

/// The neighbour aggregator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SageAggregator {
    Mean,
    /// Max over `relu(fc_pool(x))` (DGL `"pool"`).
    Pool,
}

/// A GraphSAGE layer.
#[derive(Clone, Debug)]
pub struct SageConv {
    pub aggregator: SageAggregator,
    pub w_self: Param,
    pub w_neigh: Param,
    pub bias: Param,
    /// Pool only: `W_pool [in, in]`, `b_pool [in]`.
    pub w_pool: Option<(Param, Param)>,
    /// Cached: the aggregation that entered the neighbour GEMM (mean
    /// aggregate-first, pool), the pooled activations and the max winners.
    agg: Mat,
    pooled: Mat,
    arg: Vec<i32>,
}

impl SageConv {
    /// Xavier-uniform weights (gain √2, DGL's `calculate_gain("relu")`),
    /// zero biases.
    pub fn new(input: usize, output: usize, aggregator: SageAggregator, rng: &mut Rng) -> Self {
        let gain = 2f32.sqrt();
        let w_pool = (aggregator == SageAggregator::Pool)
            .then(|| (Param::glorot(input, input, gain, rng), Param::zeros(1, input)));
        Self {
            aggregator,
            w_self: Param::glorot(input, output, gain, rng),
            w_neigh: Param::glorot(input, output, gain, rng),
            bias: Param::zeros(1, output),
            w_pool,
            agg: Mat::default(),
            pooled: Mat::default(),
            arg: Vec::new(),
        }
    }

    fn lin_before_mp(&self) -> bool {
        self.aggregator == SageAggregator::Mean && self.w_neigh.value.rows > self.w_neigh.value.cols
    }
}

/// `1 / max(d, 1)` per destination of a graph (mean aggregation's
/// backward), computed once per graph and kept in its cache.
struct InvDegrees(Vec<f32>);

fn inv_degrees(g: &G) -> Result<Arc<InvDegrees>> {
    Ok(g.cached(|| Ok(InvDegrees(g.in_degrees().iter().map(|&d| 1.0 / d.max(1) as f32).collect())))?)
}

impl Conv for SageConv {
    fn forward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat) -> Result<Mat> {
        let nd = g.num_dst();
        // `out` starts as the neighbour term; the self term and the bias
        // are added into it (no separate `neigh` tensor and add pass).
        let mut out = match self.aggregator {
            SageAggregator::Mean if self.lin_before_mp() => {
                let mut h = ctx.mat(x.rows, self.w_neigh.value.cols);
                ctx.dense(|| matmul_into(x, false, &self.w_neigh.value, false, &mut h, false));
                let neigh = copy_u(ctx, g, &h, "mean")?;
                ctx.recycle(h);
                neigh
            }
            SageAggregator::Mean => {
                let agg = copy_u(ctx, g, x, "mean")?;
                let mut neigh = ctx.mat(nd, self.w_neigh.value.cols);
                ctx.dense(|| matmul_into(&agg, false, &self.w_neigh.value, false, &mut neigh, false));
                let old = std::mem::replace(&mut self.agg, agg);
                ctx.recycle(old);
                neigh
            }
            SageAggregator::Pool => {
                let (wp, bp) = self.w_pool.as_ref().expect("a pool SageConv has pool weights");
                let mut pooled = ctx.mat(x.rows, wp.value.cols);
                ctx.dense(|| {
                    matmul_into(x, false, &wp.value, false, &mut pooled, false);
                    pooled.add_row(&bp.value.data);
                    relu(&mut pooled);
                });
                let (agg, arg) = copy_u_max(ctx, g, &pooled)?;
                let mut neigh = ctx.mat(nd, self.w_neigh.value.cols);
                ctx.dense(|| matmul_into(&agg, false, &self.w_neigh.value, false, &mut neigh, false));
                let old_agg = std::mem::replace(&mut self.agg, agg);
                let old_pooled = std::mem::replace(&mut self.pooled, pooled);
                ctx.recycle(old_agg);
                ctx.recycle(old_pooled);
                self.arg = arg;
                neigh
            }
        };
        ctx.dense(|| {
            gemm_into(x.top(nd), false, self.w_self.value.view(), false, out.view_mut(), true);
            out.add_row(&self.bias.value.data);
        });
        Ok(out)
    }

    fn backward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat, grad_out: &Mat, need_dx: bool) -> Result<Option<Mat>> {
        let rev = g.reverse();
        let nd = g.num_dst();
        ctx.dense(|| {
            grad_out.col_sums_into(&mut self.bias.grad.data);
            gemm_into(x.top(nd), true, grad_out.view(), false, self.w_self.grad.view_mut(), true);
        });
        // Gradient w.r.t. x through the neighbour path (all source rows).
        let mut dx = match self.aggregator {
            SageAggregator::Mean if self.lin_before_mp() => {
                let inv = inv_degrees(g)?;
                let mut gs = ctx.mat(grad_out.rows, grad_out.cols);
                ctx.dense(|| gs.assign_scaled_rows(grad_out, &inv.0));
                let dh = copy_u(ctx, &rev, &gs, "sum")?;
                ctx.recycle(gs);
                ctx.dense(|| matmul_into(x, true, &dh, false, &mut self.w_neigh.grad, true));
                let dx = if need_dx {
                    let mut dx = ctx.mat(x.rows, x.cols);
                    ctx.dense(|| matmul_into(&dh, false, &self.w_neigh.value, true, &mut dx, false));
                    Some(dx)
                } else {
                    None
                };
                ctx.recycle(dh);
                dx
            }
            SageAggregator::Mean => {
                ctx.dense(|| matmul_into(&self.agg, true, grad_out, false, &mut self.w_neigh.grad, true));
                if need_dx {
                    let inv = inv_degrees(g)?;
                    let mut dagg = ctx.mat(nd, self.w_neigh.value.rows);
                    ctx.dense(|| {
                        matmul_into(grad_out, false, &self.w_neigh.value, true, &mut dagg, false);
                        dagg.scale_rows(&inv.0);
                    });
                    let dx = copy_u(ctx, &rev, &dagg, "sum")?;
                    ctx.recycle(dagg);
                    Some(dx)
                } else {
                    None
                }
            }
            SageAggregator::Pool => {
                let mut dagg = ctx.mat(nd, self.w_neigh.value.rows);
                ctx.dense(|| {
                    matmul_into(&self.agg, true, grad_out, false, &mut self.w_neigh.grad, true);
                    matmul_into(grad_out, false, &self.w_neigh.value, true, &mut dagg, false);
                });
                // Max backward: each output element's gradient goes to the
                // source that won it.
                let mut dpool = ctx.mat(self.pooled.rows, self.pooled.cols);
                ctx.sparse(|_| {
                    dpool.data.fill(0.0);
                    let c = dpool.cols;
                    for (i, (&a, &gv)) in self.arg.iter().zip(dagg.data.iter()).enumerate() {
                        if a >= 0 {
                            dpool.data[a as usize * c + i % c] += gv;
                        }
                    }
                });
                ctx.recycle(dagg);
                let (wp, bp) = self.w_pool.as_mut().expect("a pool SageConv has pool weights");
                let mut dx = need_dx.then(|| ctx.mat(x.rows, x.cols));
                ctx.dense(|| {
                    relu_backward(&self.pooled, &mut dpool);
                    dpool.col_sums_into(&mut bp.grad.data);
                    matmul_into(x, true, &dpool, false, &mut wp.grad, true);
                    if let Some(dx) = dx.as_mut() {
                        matmul_into(&dpool, false, &wp.value, true, dx, false);
                    }
                });
                ctx.recycle(dpool);
                dx
            }
        };
        if let Some(dx) = dx.as_mut() {
            ctx.dense(|| gemm_into(grad_out.view(), false, self.w_self.value.view(), true, dx.top_mut(nd), true));
        }
        Ok(dx)
    }

    fn params(&mut self) -> Vec<&mut Param> {
        let mut ps = vec![&mut self.w_self, &mut self.w_neigh, &mut self.bias];
        if let Some((wp, bp)) = self.w_pool.as_mut() {
            ps.push(wp);
            ps.push(bp);
        }
        ps
    }
}
