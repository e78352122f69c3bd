//! The gnnkern calls the layers make, with shapes spelled out and time
//! booked as "sparse". Node tensors are [`Mat`]s (`[N, H·D]` read as
//! `[N, H, D]`), edge tensors flat `[E, H]` slices indexed by edge id.
//! gnnkern writes outputs in overwrite mode, so every output buffer comes
//! from the context's pool unzeroed ([`Ctx::buf`]); callers hand back the
//! ones they are done with ([`Ctx::recycle`], [`Ctx::recycle_buf`]).
//!
//! Backward rules used by the layers (`Gᵀ` = `g.reverse()`, same edge ids):
//! - `copy_u_sum` on `G`  ⟶ input gradient = `copy_u_sum` on `Gᵀ`;
//! - `u_mul_e_sum(x, a)`  ⟶ `dx = u_mul_e_sum(dy, a)` on `Gᵀ`,
//!   `da = u_dot_v(x, dy)` on `G`;
//! - `u_add_v(l, r)`      ⟶ `dl = copy_e_sum` on `Gᵀ`, `dr = copy_e_sum` on `G`.

use super::{Buf, Ctx, Mat, Result};
use gnnkern::{Graph, SddmmIo, SddmmSpec, SpmmIo, SpmmSpec, TensorMut, TensorRef};

/// The graph type of the model suite (32-bit ids).
pub type G = Graph<i32>;

fn spmm(
    ctx: &mut Ctx,
    g: &G,
    name: &str,
    lhs: Option<(&[f32], &[usize])>,
    rhs: Option<(&[f32], &[usize])>,
    out_feat: &[usize],
) -> Result<Buf> {
    let spec = SpmmSpec::from_name(name)?;
    let mut out_shape = vec![g.num_dst()];
    out_shape.extend_from_slice(out_feat);
    let mut out = ctx.buf(out_shape.iter().product());
    let lhs = lhs.map(|(d, s)| TensorRef::new(d, s)).transpose()?;
    let rhs = rhs.map(|(d, s)| TensorRef::new(d, s)).transpose()?;
    let view = TensorMut::new(&mut out, &out_shape)?;
    ctx.sparse(|exec| exec.gspmm(g, spec, SpmmIo::new(lhs, rhs, view)))?;
    Ok(out)
}

fn sddmm(
    ctx: &mut Ctx,
    g: &G,
    name: &str,
    lhs: (&[f32], &[usize]),
    rhs: Option<(&[f32], &[usize])>,
    out_feat: &[usize],
) -> Result<Buf> {
    let spec = SddmmSpec::from_name(name)?;
    let mut out_shape = vec![g.num_edges()];
    out_shape.extend_from_slice(out_feat);
    let mut out = ctx.buf(out_shape.iter().product());
    let lhs = TensorRef::new(lhs.0, lhs.1)?;
    let rhs = rhs.map(|(d, s)| TensorRef::new(d, s)).transpose()?;
    let view = TensorMut::new(&mut out, &out_shape)?;
    ctx.sparse(|exec| exec.gsddmm(g, spec, SddmmIo { lhs: Some(lhs), rhs, out: view }))?;
    Ok(out)
}

/// `out[e] = x[u]` (`end = 'u'`) or `x[v]` (`end = 'v'`) for `e = (u, v)`:
/// node rows copied onto edges (an incidence-matrix product).
pub fn copy_to_edges(ctx: &mut Ctx, g: &G, x: &Mat, end: char) -> Result<Mat> {
    let shape = [x.rows, x.cols];
    let out = sddmm(ctx, g, &format!("copy_{end}"), (&x.data, &shape), None, &[x.cols])?;
    Ok(Mat::from_vec(g.num_edges(), x.cols, out))
}

/// `out[v] = reduce_{u→v} x[u]` for `reduce` in `sum`, `mean`.
pub fn copy_u(ctx: &mut Ctx, g: &G, x: &Mat, reduce: &str) -> Result<Mat> {
    let shape = [x.rows, x.cols];
    let out = spmm(ctx, g, &format!("copy_u_{reduce}"), Some((&x.data, &shape)), None, &[x.cols])?;
    Ok(Mat::from_vec(g.num_dst(), x.cols, out))
}

/// `out[v] = max_{u→v} x[u]` and, per output element, the winning source
/// (`-1` for a node without in-edges).
pub fn copy_u_max(ctx: &mut Ctx, g: &G, x: &Mat) -> Result<(Mat, Vec<i32>)> {
    let spec = SpmmSpec::from_name("copy_u_max")?;
    let in_shape = [x.rows, x.cols];
    let out_shape = [g.num_dst(), x.cols];
    let mut out = ctx.buf(g.num_dst() * x.cols);
    let mut arg = vec![0i32; out.len()];
    let lhs = TensorRef::new(&x.data, &in_shape)?;
    let view = TensorMut::new(&mut out, &out_shape)?;
    let io = SpmmIo { lhs: Some(lhs), rhs: None, out: view, arg_u: Some(&mut arg), arg_e: None };
    ctx.sparse(|exec| exec.gspmm(g, spec, io))?;
    Ok((Mat::from_vec(g.num_dst(), x.cols, out), arg))
}

/// `out[v, h, :] = Σ_{e=(u,v)} a[e, h] · x[u, h, :]` with `x` `[N, H, D]`.
pub fn u_mul_e_sum(ctx: &mut Ctx, g: &G, x: &Mat, heads: usize, a: &[f32]) -> Result<Mat> {
    let d = x.cols / heads;
    let xs = [x.rows, heads, d];
    let es = [g.num_edges(), heads, 1];
    let out = spmm(ctx, g, "u_mul_e_sum", Some((&x.data, &xs)), Some((a, &es)), &[heads, d])?;
    Ok(Mat::from_vec(g.num_dst(), x.cols, out))
}

/// `out[e, h] = l[u, h] + r[v, h]` for `e = (u, v)`.
pub fn u_add_v(ctx: &mut Ctx, g: &G, l: &Mat, r: &Mat) -> Result<Buf> {
    let ls = [l.rows, l.cols];
    let rs = [r.rows, r.cols];
    sddmm(ctx, g, "u_add_v", (&l.data, &ls), Some((&r.data, &rs)), &[l.cols])
}

/// `out[e, h] = ⟨x[u, h, :], y[v, h, :]⟩` with `x`, `y` `[N, H, D]`.
pub fn u_dot_v(ctx: &mut Ctx, g: &G, x: &Mat, y: &Mat, heads: usize) -> Result<Buf> {
    let d = x.cols / heads;
    let xs = [x.rows, heads, d];
    let ys = [y.rows, heads, d];
    sddmm(ctx, g, "u_dot_v", (&x.data, &xs), Some((&y.data, &ys)), &[heads, 1])
}

/// `out[v, h] = Σ_{e into v} w[e, h]`.
pub fn copy_e_sum(ctx: &mut Ctx, g: &G, w: &[f32], heads: usize) -> Result<Mat> {
    let ws = [g.num_edges(), heads];
    let out = spmm(ctx, g, "copy_e_sum", Some((w, &ws)), None, &[heads])?;
    Ok(Mat::from_vec(g.num_dst(), heads, out))
}

/// Softmax of `[E, H]` logits over each destination's in-edges.
pub fn edge_softmax(ctx: &mut Ctx, g: &G, logits: &[f32], heads: usize) -> Result<Buf> {
    let shape = [g.num_edges(), heads];
    let mut out = ctx.buf(logits.len());
    let l = TensorRef::new(logits, &shape)?;
    let o = TensorMut::new(&mut out, &shape)?;
    ctx.sparse(|exec| exec.edge_softmax(g, l, o))?;
    Ok(out)
}

/// Gradient of [`edge_softmax`] from its output `y` and output gradient.
pub fn edge_softmax_backward(ctx: &mut Ctx, g: &G, y: &[f32], grad: &[f32], heads: usize) -> Result<Buf> {
    let shape = [g.num_edges(), heads];
    let mut out = ctx.buf(y.len());
    let yv = TensorRef::new(y, &shape)?;
    let gv = TensorRef::new(grad, &shape)?;
    let o = TensorMut::new(&mut out, &shape)?;
    ctx.sparse(|exec| exec.edge_softmax_backward(g, yv, gv, o))?;
    Ok(out)
}

/// `d^{-1/2}` with degrees clamped to at least 1 (DGL `GraphConv`
/// `norm="both"`).
pub fn inv_sqrt_degrees(degrees: &[usize]) -> Vec<f32> {
    degrees.iter().map(|&d| 1.0 / (d.max(1) as f32).sqrt()).collect()
}
