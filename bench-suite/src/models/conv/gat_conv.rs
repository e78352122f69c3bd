//! `GatConv` (Veličković et al.), multi-head, as DGL's `GATConv`:
//!
//! ```text
//! f      = x W                                  [N, H, D]   dense
//! el, er = Σ_d f·a_l, Σ_d f·a_r                 [N, H]      dense
//! s_e    = LeakyReLU_0.2(el[u] + er[v])         [E, H]      g-SDDMM u_add_v
//! α      = edge_softmax(s)                      [E, H]      sparse
//! α'     = dropout(α)                           [E, H]
//! out_v  = Σ_{e=(u,v)} α'_e f_u + b             [N, H, D]   g-SpMM u_mul_e_sum
//! ```
//!
//! Backward, with `Gᵀ` the reverse graph:
//! `df = u_mul_e_sum(Gᵀ, dout, α')`, `dα' = u_dot_v(G, f, dout)`, dropout
//! mask, `ds = edge_softmax_backward(α, dα)`, LeakyReLU slope where
//! `s < 0`, `del = copy_e_sum(Gᵀ, ds)`, `der = copy_e_sum(G, ds)`, then the
//! dense chain back through `el`, `er` and `W`.

use super::{Conv, G};
use crate::models::dense::{Buf, Mat, Param, matmul_into};
use crate::models::dropout::Dropout;
use crate::models::nn::{leaky_relu, leaky_relu_backward};
use crate::models::rng::Rng;
use crate::models::sparse::{copy_e_sum, edge_softmax, edge_softmax_backward, u_add_v, u_dot_v, u_mul_e_sum};
use crate::models::{Ctx, Result};
use gnnkern::CACHE_LINE;
use rayon::prelude::*;

/// LeakyReLU slope of the attention logits.
const SLOPE: f32 = 0.2;

/// A multi-head graph attention layer; output `[N, heads·out]` (heads
/// concatenated).
#[derive(Clone, Debug)]
pub struct GatConv {
    pub heads: usize,
    pub weight: Param,
    pub attn_l: Param,
    pub attn_r: Param,
    pub bias: Param,
    pub attn_drop: f32,
    salt: u64,
    // Cached by forward.
    feat: Mat,
    logits: Buf,
    alpha: Buf,
    /// `alpha` after attention dropout, and that dropout (its mask is
    /// regenerated in backward); empty and `None` without dropout.
    alpha_dropped: Buf,
    drop: Option<Dropout>,
}

/// `out[n, h] = Σ_d f[n, h, d] · a[h, d]` for the first `rows` rows.
fn head_dot(f: &Mat, rows: usize, a: &[f32], heads: usize) -> Mat {
    let d = f.cols / heads;
    let mut out = Mat::zeros(rows, heads);
    out.data.par_chunks_mut(heads).enumerate().with_min_len(256).for_each(|(n, o)| {
        let fr = f.row(n);
        for h in 0..heads {
            o[h] = fr[h * d..(h + 1) * d].iter().zip(&a[h * d..(h + 1) * d]).map(|(x, y)| x * y).sum();
        }
    });
    out
}

/// Backward of [`head_dot`]: `df[n, h, :] += g[n, h]·a[h, :]` and
/// `da[h, :] += Σ_n g[n, h]·f[n, h, :]`.
fn head_dot_backward(f: &Mat, a: &[f32], g: &Mat, heads: usize, df: &mut Mat, da: &mut [f32]) {
    let d = f.cols / heads;
    let rows = g.rows;
    df.data[..rows * f.cols].par_chunks_mut(f.cols).enumerate().with_min_len(256).for_each(|(n, dfr)| {
        for h in 0..heads {
            let gv = g.row(n)[h];
            dfr[h * d..(h + 1) * d].iter_mut().zip(&a[h * d..(h + 1) * d]).for_each(|(x, &y)| *x += gv * y);
        }
    });
    let sums = (0..rows)
        .into_par_iter()
        .with_min_len(1024)
        .fold(
            || vec![0f32; f.cols],
            |mut acc, n| {
                let fr = f.row(n);
                for h in 0..heads {
                    let gv = g.row(n)[h];
                    acc[h * d..(h + 1) * d].iter_mut().zip(&fr[h * d..(h + 1) * d]).for_each(|(s, &x)| *s += gv * x);
                }
                acc
            },
        )
        .reduce(
            || vec![0f32; f.cols],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    da.iter_mut().zip(sums).for_each(|(x, s)| *x += s);
}

impl GatConv {
    /// Xavier-normal-like init (uniform with the same gain √2 as DGL's
    /// `reset_parameters`), zero bias. `salt` makes this layer's dropout
    /// masks distinct from other layers'.
    pub fn new(input: usize, out: usize, heads: usize, attn_drop: f32, salt: u64, rng: &mut Rng) -> Self {
        let gain = 2f32.sqrt();
        Self {
            heads,
            weight: Param::glorot(input, heads * out, gain, rng),
            attn_l: Param::glorot_fans(1, heads * out, heads, out, gain, rng),
            attn_r: Param::glorot_fans(1, heads * out, heads, out, gain, rng),
            bias: Param::zeros(1, heads * out),
            attn_drop,
            salt,
            feat: Mat::default(),
            logits: Buf::new(CACHE_LINE),
            alpha: Buf::new(CACHE_LINE),
            alpha_dropped: Buf::new(CACHE_LINE),
            drop: None,
        }
    }
}

impl Conv for GatConv {
    fn forward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat) -> Result<Mat> {
        let h = self.heads;
        let mut feat = ctx.mat(x.rows, self.weight.value.cols);
        ctx.dense(|| matmul_into(x, false, &self.weight.value, false, &mut feat, false));
        let (el, er) = ctx.dense(|| {
            (
                head_dot(&feat, feat.rows, &self.attn_l.value.data, h),
                head_dot(&feat, g.num_dst(), &self.attn_r.value.data, h),
            )
        });
        let mut logits = u_add_v(ctx, g, &el, &er)?;
        ctx.dense(|| leaky_relu(&mut logits, SLOPE));
        let alpha = edge_softmax(ctx, g, &logits, h)?;
        let drop = if ctx.training { Dropout::new(self.attn_drop, ctx.stream(self.salt)) } else { None };
        let alpha_dropped = match drop {
            Some(d) => {
                let mut a = ctx.buf(alpha.len());
                ctx.dense(|| d.apply_into(&alpha, &mut a));
                a
            }
            None => Buf::new(CACHE_LINE),
        };
        let used = if drop.is_some() { &alpha_dropped } else { &alpha };
        let mut out = u_mul_e_sum(ctx, g, &feat, h, used)?;
        ctx.dense(|| out.add_row(&self.bias.value.data));
        let old_feat = std::mem::replace(&mut self.feat, feat);
        ctx.recycle(old_feat);
        for old in [
            std::mem::replace(&mut self.logits, logits),
            std::mem::replace(&mut self.alpha, alpha),
            std::mem::replace(&mut self.alpha_dropped, alpha_dropped),
        ] {
            ctx.recycle_buf(old);
        }
        self.drop = drop;
        Ok(out)
    }

    fn backward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat, grad_out: &Mat, need_dx: bool) -> Result<Option<Mat>> {
        let h = self.heads;
        let rev = g.reverse();
        ctx.dense(|| grad_out.col_sums_into(&mut self.bias.grad.data));
        let used = if self.drop.is_some() { &self.alpha_dropped } else { &self.alpha };
        let mut dfeat = u_mul_e_sum(ctx, &rev, grad_out, h, used)?;
        let mut dalpha = u_dot_v(ctx, g, &self.feat, grad_out, h)?;
        if let Some(d) = self.drop {
            ctx.dense(|| d.apply(&mut dalpha));
        }
        let mut dlogits = edge_softmax_backward(ctx, g, &self.alpha, &dalpha, h)?;
        ctx.recycle_buf(dalpha);
        ctx.dense(|| leaky_relu_backward(&self.logits, &mut dlogits, SLOPE));
        let del = copy_e_sum(ctx, &rev, &dlogits, h)?;
        let der = copy_e_sum(ctx, g, &dlogits, h)?;
        ctx.recycle_buf(dlogits);
        let mut dx = need_dx.then(|| ctx.mat(x.rows, x.cols));
        ctx.dense(|| {
            head_dot_backward(&self.feat, &self.attn_l.value.data, &del, h, &mut dfeat, &mut self.attn_l.grad.data);
            head_dot_backward(&self.feat, &self.attn_r.value.data, &der, h, &mut dfeat, &mut self.attn_r.grad.data);
            matmul_into(x, true, &dfeat, false, &mut self.weight.grad, true);
            if let Some(dx) = dx.as_mut() {
                matmul_into(&dfeat, false, &self.weight.value, true, dx, false);
            }
        });
        ctx.recycle(dfeat);
        ctx.recycle(del);
        ctx.recycle(der);
        Ok(dx)
    }

    fn params(&mut self) -> Vec<&mut Param> {
        vec![&mut self.weight, &mut self.attn_l, &mut self.attn_r, &mut self.bias]
    }
}
