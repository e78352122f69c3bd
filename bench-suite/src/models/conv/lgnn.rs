//! One LGNN layer (Chen, Li & Bruna, "Supervised community detection with
//! line graph neural networks"), as DGL's `examples/pytorch/line_graph`
//! `GNNModule`. It updates node features `x` on the graph `G` and edge
//! features `y` on its non-backtracking line graph `L` together:
//!
//! ```text
//! x' = bn(½relu( x Θx + (deg_G ∘ x) Θdeg + Σ_k (A^{2^{k-1}}… x) Θ_k + (Pm y) Θy ))
//! y' = bn(½relu( y Γy + (deg_L ∘ y) Γdeg + Σ_k (B^{2^{k-1}}… y) Γ_k + (Pd x) Γx ))
//! ```
//!
//! `A`, `B` are the adjacency operators of `G` and `L` (`copy_u_sum`); the
//! powers are `A x, A² x, A⁴ x, …` (radius terms, each reusing the last);
//! `Pm y` sums each node's in-edge features (`copy_e_sum` on `G`) and
//! `Pd x` copies each edge's source features (g-SDDMM `copy_u`) — the
//! incidence-matrix fusion. `½relu` applies ReLU to the second half of the
//! columns; `bn` is batch norm ([`BatchNorm`]): batch statistics while
//! training, running statistics in evaluation mode.
//!
//! Backward runs the same operators transposed: `Aᵀ` is `copy_u_sum` on the
//! reverse graph, `Pmᵀ` is g-SDDMM `copy_v`, `Pdᵀ` is `copy_e_sum` on the
//! reverse graph.

use crate::models::batch_norm::BatchNorm;
use crate::models::dense::{Linear, Mat, Param};
use crate::models::rng::Rng;
use crate::models::sparse::{G, copy_e_sum, copy_to_edges, copy_u};
use crate::models::{Ctx, Result};

/// The graph, its non-backtracking line graph and their degrees.
#[derive(Debug)]
pub struct LgnnGraphs {
    pub g: G,
    pub lg: G,
    /// In-degrees of `g` and `lg` as `[n, 1]` / `[m, 1]` columns.
    pub deg_g: Mat,
    pub deg_lg: Mat,
}

impl LgnnGraphs {
    /// Builds the non-backtracking line graph of `g`: a node per edge, and
    /// an edge `(u→v) → (v→w)` for every `w ≠ u` (DGL
    /// `line_graph(backtracking=False)`).
    pub fn new(g: G) -> Result<Self> {
        let (src, dst) = g.coo();
        let out = g.out_csr();
        let (mut ls, mut ld) = (Vec::new(), Vec::new());
        for e in 0..g.num_edges() {
            let (u, v) = (src[e], dst[e] as usize);
            for k in out.row_range(v) {
                if out.indices()[k] != u {
                    ls.push(e as i32);
                    ld.push(out.eids()[k]);
                }
            }
        }
        let m = g.num_edges();
        let lg = G::from_coo(m, m, ls, ld)?;
        let col = |d: Vec<usize>| Mat::from_values(d.len(), 1, d.into_iter().map(|x| x as f32));
        let (deg_g, deg_lg) = (col(g.in_degrees()), col(lg.in_degrees()));
        Ok(Self { g, lg, deg_g, deg_lg })
    }
}

/// One side (node or edge) of the layer: its linear maps and batch norm.
#[derive(Clone, Debug)]
struct Side {
    own: Linear,
    deg: Linear,
    powers: Vec<Linear>,
    fused: Linear,
    bn: BatchNorm,
    // Cached by forward.
    deg_in: Mat,
    power_in: Vec<Mat>,
    fused_in: Mat,
    act: Mat,
}

impl Side {
    fn new(input: usize, output: usize, radius: usize, rng: &mut Rng) -> Self {
        let mut lin = || Linear::new(input, output, rng);
        let (own, deg, fused) = (lin(), lin(), lin());
        let powers = (0..radius).map(|_| Linear::new(input, output, rng)).collect();
        Self {
            own,
            deg,
            powers,
            fused,
            bn: BatchNorm::new(output),
            deg_in: Mat::default(),
            power_in: Vec::new(),
            fused_in: Mat::default(),
            act: Mat::default(),
        }
    }

    /// `bn(½relu(z Own + (deg∘z) Deg + Σ powers + fused Fused))`.
    fn forward(&mut self, ctx: &mut Ctx, graph: &G, z: &Mat, degree: &Mat, fused_in: Mat) -> Result<Mat> {
        let powers = adjacency_powers(ctx, graph, z, self.powers.len())?;
        let training = ctx.training;
        let out = ctx.dense(|| {
            let mut deg_in = z.clone();
            deg_in.scale_rows(&degree.data);
            let mut h = self.own.forward(z);
            self.deg.forward_into(&deg_in, &mut h, true);
            for (lin, p) in self.powers.iter().zip(&powers) {
                lin.forward_into(p, &mut h, true);
            }
            self.fused.forward_into(&fused_in, &mut h, true);
            half_relu(&mut h);
            let y = self.bn.forward(&h, training);
            (self.deg_in, self.act) = (deg_in, h);
            y
        });
        (self.power_in, self.fused_in) = (powers, fused_in);
        Ok(out)
    }

    /// Returns `(dz, d fused_in)`.
    fn backward(&mut self, ctx: &mut Ctx, graph: &G, z: &Mat, degree: &Mat, grad: &Mat) -> Result<(Mat, Mat)> {
        let (dz_dense, dpowers, dfused) = ctx.dense(|| {
            let mut dh = self.bn.backward(grad);
            half_relu_backward(&self.act, &mut dh);
            let mut dz = Mat::zeros(z.rows, z.cols);
            self.own.backward(z, &dh, Some(&mut dz));
            let mut ddeg = Mat::zeros(z.rows, z.cols);
            self.deg.backward(&self.deg_in, &dh, Some(&mut ddeg));
            ddeg.scale_rows(&degree.data);
            dz.add_assign(&ddeg);
            let dpowers: Vec<Mat> = self
                .powers
                .iter_mut()
                .zip(&self.power_in)
                .map(|(lin, p)| {
                    let mut d = Mat::zeros(p.rows, p.cols);
                    lin.backward(p, &dh, Some(&mut d));
                    d
                })
                .collect();
            let mut dfused = Mat::zeros(self.fused_in.rows, self.fused_in.cols);
            self.fused.backward(&self.fused_in, &dh, Some(&mut dfused));
            (dz, dpowers, dfused)
        });
        let mut dz = adjacency_powers_backward(ctx, graph, dpowers)?;
        ctx.dense(|| dz.add_assign(&dz_dense));
        Ok((dz, dfused))
    }

    fn params(&mut self) -> Vec<&mut Param> {
        let mut ps = Vec::new();
        for lin in [&mut self.own, &mut self.deg, &mut self.fused].into_iter().chain(self.powers.iter_mut()) {
            ps.extend(lin.params());
        }
        ps.extend(self.bn.params());
        ps
    }
}

/// Number of adjacency applications between consecutive power terms:
/// `A z` (1), then `A` once more (A²), then twice (A⁴), … (`2^{k-1}`).
fn steps(k: usize) -> usize {
    if k == 0 { 1 } else { 1 << (k - 1) }
}

/// `[A z, A² z, A⁴ z, …]` (`radius` terms).
fn adjacency_powers(ctx: &mut Ctx, g: &G, z: &Mat, radius: usize) -> Result<Vec<Mat>> {
    let mut out: Vec<Mat> = Vec::with_capacity(radius);
    for k in 0..radius {
        let mut cur = out.last().unwrap_or(z).clone();
        for _ in 0..steps(k) {
            cur = copy_u(ctx, g, &cur, "sum")?;
        }
        out.push(cur);
    }
    Ok(out)
}

/// Given the gradients of each power term, the gradient of `z`: walk the
/// chain backwards applying `Aᵀ` (the reverse graph).
fn adjacency_powers_backward(ctx: &mut Ctx, g: &G, grads: Vec<Mat>) -> Result<Mat> {
    let rev = g.reverse();
    let mut acc: Option<Mat> = None;
    for (k, gk) in grads.into_iter().enumerate().rev() {
        let mut cur = match acc {
            Some(mut a) => {
                ctx.dense(|| a.add_assign(&gk));
                a
            }
            None => gk,
        };
        for _ in 0..steps(k) {
            cur = copy_u(ctx, &rev, &cur, "sum")?;
        }
        acc = Some(cur);
    }
    Ok(acc.unwrap_or_default())
}

/// ReLU on the second half of the columns (DGL's `cat([x[:, :n], relu(x[:, n:])])`).
fn half_relu(h: &mut Mat) {
    let (c, half) = (h.cols, h.cols / 2);
    for r in 0..h.rows {
        h.data[r * c + half..(r + 1) * c].iter_mut().for_each(|v| *v = v.max(0.0));
    }
}

fn half_relu_backward(act: &Mat, g: &mut Mat) {
    let (c, half) = (act.cols, act.cols / 2);
    for r in 0..act.rows {
        for j in half..c {
            if act.data[r * c + j] <= 0.0 {
                g.data[r * c + j] = 0.0;
            }
        }
    }
}

/// An LGNN layer: node side on `G`, edge side on the line graph.
#[derive(Clone, Debug)]
pub struct LgnnLayer {
    x_side: Side,
    y_side: Side,
}

impl LgnnLayer {
    /// `input → output` features on both sides, `radius` power terms.
    pub fn new(input: usize, output: usize, radius: usize, rng: &mut Rng) -> Self {
        Self { x_side: Side::new(input, output, radius, rng), y_side: Side::new(input, output, radius, rng) }
    }

    /// `(x', y')` from node features `x` `[n, in]` and edge features `y` `[m, in]`.
    pub fn forward(&mut self, ctx: &mut Ctx, gs: &LgnnGraphs, x: &Mat, y: &Mat) -> Result<(Mat, Mat)> {
        let pd_x = copy_to_edges(ctx, &gs.g, x, 'u')?;
        let pm_y = copy_e_sum(ctx, &gs.g, &y.data, y.cols)?;
        let x_out = self.x_side.forward(ctx, &gs.g, x, &gs.deg_g, pm_y)?;
        let y_out = self.y_side.forward(ctx, &gs.lg, y, &gs.deg_lg, pd_x)?;
        Ok((x_out, y_out))
    }

    /// Accumulates parameter gradients; returns `(dx, dy)`.
    pub fn backward(
        &mut self,
        ctx: &mut Ctx,
        gs: &LgnnGraphs,
        x: &Mat,
        y: &Mat,
        dx_out: &Mat,
        dy_out: &Mat,
    ) -> Result<(Mat, Mat)> {
        let (mut dx, dpm_y) = self.x_side.backward(ctx, &gs.g, x, &gs.deg_g, dx_out)?;
        let (mut dy, dpd_x) = self.y_side.backward(ctx, &gs.lg, y, &gs.deg_lg, dy_out)?;
        // Pmᵀ: each edge receives its destination's gradient.
        let from_pm = copy_to_edges(ctx, &gs.g, &dpm_y, 'v')?;
        // Pdᵀ: each node sums the gradients of its out-edges.
        let from_pd = copy_e_sum(ctx, &gs.g.reverse(), &dpd_x.data, dpd_x.cols)?;
        ctx.dense(|| {
            dy.add_assign(&from_pm);
            dx.add_assign(&from_pd);
        });
        Ok((dx, dy))
    }

    /// Every parameter, in a fixed order.
    pub fn params(&mut self) -> Vec<&mut Param> {
        let mut ps = self.x_side.params();
        ps.extend(self.y_side.params());
        ps
    }
}
