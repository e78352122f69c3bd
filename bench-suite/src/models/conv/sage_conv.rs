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

use super::{Conv, G, dst_rows, inv_degrees};
use crate::models::dense::{Mat, Param, matmul, matmul_into};
use crate::models::nn::{relu, relu_backward};
use crate::models::rng::Rng;
use crate::models::sparse::{copy_u, copy_u_max};
use crate::models::{Ctx, Result};

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

impl Conv for SageConv {
    fn forward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat) -> Result<Mat> {
        let neigh = match self.aggregator {
            SageAggregator::Mean if self.lin_before_mp() => {
                let h = ctx.dense(|| matmul(x, false, &self.w_neigh.value, false));
                copy_u(ctx, g, &h, "mean")?
            }
            SageAggregator::Mean => {
                self.agg = copy_u(ctx, g, x, "mean")?;
                ctx.dense(|| matmul(&self.agg, false, &self.w_neigh.value, false))
            }
            SageAggregator::Pool => {
                let (wp, bp) = self.w_pool.as_ref().expect("a pool SageConv has pool weights");
                let pooled = ctx.dense(|| {
                    let mut h = matmul(x, false, &wp.value, false);
                    h.add_row(&bp.value.data);
                    relu(&mut h);
                    h
                });
                let (agg, arg) = copy_u_max(ctx, g, &pooled)?;
                let neigh = ctx.dense(|| matmul(&agg, false, &self.w_neigh.value, false));
                (self.agg, self.pooled, self.arg) = (agg, pooled, arg);
                neigh
            }
        };
        let x_dst = dst_rows(x, g.num_dst());
        Ok(ctx.dense(|| {
            let mut out = matmul(&x_dst, false, &self.w_self.value, false);
            out.add_assign(&neigh);
            out.add_row(&self.bias.value.data);
            out
        }))
    }

    fn backward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat, grad_out: &Mat, need_dx: bool) -> Result<Option<Mat>> {
        let rev = g.reverse();
        let nd = g.num_dst();
        let x_dst = dst_rows(x, nd);
        ctx.dense(|| {
            grad_out.col_sums_into(&mut self.bias.grad.data);
            matmul_into(&x_dst, true, grad_out, false, &mut self.w_self.grad, true);
        });
        // Gradient w.r.t. x through the neighbour path (all source rows).
        let mut dx = match self.aggregator {
            SageAggregator::Mean if self.lin_before_mp() => {
                let mut gs = grad_out.clone();
                ctx.dense(|| gs.scale_rows(&inv_degrees(g)));
                let dh = copy_u(ctx, &rev, &gs, "sum")?;
                ctx.dense(|| matmul_into(x, true, &dh, false, &mut self.w_neigh.grad, true));
                if need_dx { Some(ctx.dense(|| matmul(&dh, false, &self.w_neigh.value, true))) } else { None }
            }
            SageAggregator::Mean => {
                ctx.dense(|| matmul_into(&self.agg, true, grad_out, false, &mut self.w_neigh.grad, true));
                if need_dx {
                    let mut dagg = ctx.dense(|| matmul(grad_out, false, &self.w_neigh.value, true));
                    ctx.dense(|| dagg.scale_rows(&inv_degrees(g)));
                    Some(copy_u(ctx, &rev, &dagg, "sum")?)
                } else {
                    None
                }
            }
            SageAggregator::Pool => {
                let dagg = ctx.dense(|| {
                    matmul_into(&self.agg, true, grad_out, false, &mut self.w_neigh.grad, true);
                    matmul(grad_out, false, &self.w_neigh.value, true)
                });
                // Max backward: each output element's gradient goes to the
                // source that won it.
                let mut dpool = Mat::zeros(self.pooled.rows, self.pooled.cols);
                ctx.sparse(|_| {
                    let c = dpool.cols;
                    for (i, (&a, &gv)) in self.arg.iter().zip(&dagg.data).enumerate() {
                        if a >= 0 {
                            dpool.data[a as usize * c + i % c] += gv;
                        }
                    }
                });
                let (wp, bp) = self.w_pool.as_mut().expect("a pool SageConv has pool weights");
                ctx.dense(|| {
                    relu_backward(&self.pooled, &mut dpool);
                    dpool.col_sums_into(&mut bp.grad.data);
                    matmul_into(x, true, &dpool, false, &mut wp.grad, true);
                    need_dx.then(|| matmul(&dpool, false, &wp.value, true))
                })
            }
        };
        if let Some(dx) = dx.as_mut() {
            let d_self = ctx.dense(|| matmul(grad_out, false, &self.w_self.value, true));
            ctx.dense(|| {
                let n = d_self.data.len();
                crate::models::dense::zip_apply(&mut dx.data[..n], &d_self.data, |a, b| *a += b)
            });
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
