//! WGSL generation: every shader constant is defined once here, in Rust, and
//! injected into the WGSL text; one source is generated per (kernel,
//! operator, reducer) and its compiled pipeline cached by the context.
//!
//! The per-dispatch parameters (sizes, window bases, broadcast plan fields)
//! travel in a uniform block whose Rust mirror (`*Params`) is `#[repr(C)]`,
//! all `u32`, padded to 16 bytes — the WGSL struct lists the same fields in
//! the same order.

use crate::error::{GpuError, Result};
use bytemuck::{Pod, Zeroable};
use gnnkern_simd::layout::OperandShape;
use gnnkern_simd::op::{BinaryOp, ReduceKind, Target};

/// Threads per workgroup. 64 is a multiple of every vendor's SIMD width
/// (32 on NVIDIA, 32/64 on AMD, 8–32 on Intel, 4–16 lanes on llvmpipe) and
/// within WebGPU's guaranteed 256 invocations.
pub const WG: u32 = 64;
/// Output columns each g-SpMM thread accumulates at once: a workgroup covers
/// a `WG · ACC = 256`-wide feature tile per sweep over a segment's edges, so
/// rows up to 256 features read each edge's ids once.
pub const ACC: u32 = 4;
/// In-CSR entries per g-SpMM segment: rows with more in-edges are split into
/// several segments accumulated by different workgroups and merged by the
/// finalize pass. 256 edges keep a workgroup busy for ~256·(loads + op)
/// per column while a power-law hub of 10⁵ edges still spreads over ~400
/// workgroups.
pub const SEGMENT_EDGES: usize = 256;
/// Marker for "no CSR slot" in partial results. Max/min accumulators start
/// at (0, NONE_SLOT) and the merge rule takes any message over an empty
/// slot, so no ±inf identity (which WGSL cannot spell) is ever needed.
pub(crate) const NONE_SLOT: u32 = u32::MAX;

/// A message function in the form the shaders need: a WGSL expression in
/// the f32 variables `a` and `b`, and which operands it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageOp {
    /// Name used in error messages.
    pub name: &'static str,
    /// WGSL expression of `φ(a, b)` (for dot: one product term).
    pub wgsl: &'static str,
    pub uses_lhs: bool,
    pub uses_rhs: bool,
    /// Whether the elementwise results are summed over the last feature dimension.
    pub reduces_last_dim: bool,
}

impl MessageOp {
    /// The GPU form of a [`BinaryOp`]; unsupported when it has no WGSL expression.
    pub fn of<O: BinaryOp>() -> Result<Self> {
        let wgsl = O::WGSL.ok_or_else(|| {
            GpuError::Unsupported(format!("operator {} has no WGSL form (BinaryOp::WGSL is None)", O::NAME))
        })?;
        Ok(Self {
            name: O::NAME,
            wgsl,
            uses_lhs: O::USE_LHS,
            uses_rhs: O::USE_RHS,
            reduces_last_dim: O::REDUCES_LAST_DIM,
        })
    }

    /// `exp(a - b)`: the numerator of softmax, `a` the logit, `b` the row maximum.
    pub(crate) const EXP_SUB: Self =
        Self { name: "exp_sub", wgsl: "exp(a - b)", uses_lhs: true, uses_rhs: true, reduces_last_dim: false };

    /// The operand signature, for building a broadcast plan.
    pub fn shape(&self) -> OperandShape {
        OperandShape { uses_lhs: self.uses_lhs, uses_rhs: self.uses_rhs, reduces_last_dim: self.reduces_last_dim }
    }
}

/// Shader encoding of a [`Target`] (matches `target_row` in the WGSL).
pub(crate) const fn target_code(t: Target) -> u32 {
    match t {
        Target::Src => 0,
        Target::Edge => 1,
        Target::Dst => 2,
    }
}

/// Uniforms of the g-SpMM accumulate pass.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct AccParams {
    pub n_items: u32,
    pub seg_first: u32,
    pub seg_base: u32,
    pub nbr_base: u32,
    pub lhs_base: u32,
    pub rhs_base: u32,
    pub part_base: u32,
    pub merge: u32,
    pub lhs_lo: u32,
    pub lhs_hi: u32,
    pub rhs_lo: u32,
    pub rhs_hi: u32,
    pub lhs_target: u32,
    pub rhs_target: u32,
    pub out_len: u32,
    pub lhs_len: u32,
    pub rhs_len: u32,
    pub run_len: u32,
    pub reduce_len: u32,
    pub contig: u32,
}

/// Uniforms of the g-SpMM finalize pass.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct FinParams {
    pub n_items: u32,
    pub row_first: u32,
    pub rp_base: u32,
    pub rs_base: u32,
    pub part_base: u32,
    pub nbr_base: u32,
    pub out_base: u32,
    pub arg_base: u32,
    pub out_len: u32,
    pub write_arg: u32,
    pub pad0: u32,
    pub pad1: u32,
}

/// Uniforms of the g-SDDMM kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct SddParams {
    pub n_items: u32,
    pub e_first: u32,
    pub coo_base: u32,
    pub out_base: u32,
    pub lhs_base: u32,
    pub rhs_base: u32,
    pub lhs_lo: u32,
    pub lhs_hi: u32,
    pub rhs_lo: u32,
    pub rhs_hi: u32,
    pub lhs_target: u32,
    pub rhs_target: u32,
    pub out_len: u32,
    pub lhs_len: u32,
    pub rhs_len: u32,
    pub run_len: u32,
    pub reduce_len: u32,
    pub contig: u32,
    pub pad0: u32,
    pub pad1: u32,
}

/// The kernels, each with its fixed binding list (binding 0 is the uniform).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    /// runs, segs, nbr, lhs, rhs | part (rw)
    SpmmAccumulate,
    /// row_ptr, row_seg, part, nbr | out (rw), arg (rw)
    SpmmFinalize,
    /// runs, coo, lhs, rhs | out (rw)
    Sddmm,
    /// runs, coo, lhs, rhs | out (rw)
    SddmmDot,
}

impl Kernel {
    /// Read-only storage bindings, then read-write ones (bindings 1..).
    pub(crate) const fn storage(self) -> (u32, u32) {
        match self {
            Kernel::SpmmAccumulate => (5, 1),
            Kernel::SpmmFinalize => (4, 2),
            Kernel::Sddmm | Kernel::SddmmDot => (4, 1),
        }
    }
}

/// WGSL shared by every kernel: NaN test, max/min merge rule, operand helpers.
const COMMON: &str = r"
const WG: u32 = $WG;
const ACC: u32 = $ACC;
const NONE: u32 = $NONE;
const USES_LHS: bool = $USES_LHS;
const USES_RHS: bool = $USES_RHS;

// Bit test: WGSL lets compilers assume finite math, so `x != x` is unreliable.
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn op(a: f32, b: f32) -> f32 {
    return $OP;
}

// Operand row of edge e = (u, v) for a target code (0 = u, 1 = e, 2 = v).
fn target_row(t: u32, u: u32, e: u32, v: u32) -> u32 {
    if (t == 0u) { return u; }
    if (t == 1u) { return e; }
    return v;
}

fn in_window(row: u32, lo: u32, hi: u32) -> bool {
    return row >= lo && row < hi;
}
";

/// The max/min merge rule: does message `(v, k)` (value, CSR slot) replace
/// the accumulator `(a, ka)`? The first NaN wins and sticks; otherwise the
/// strictly better value wins; equal values keep the smaller slot (the
/// earlier one in row order). The rule is a total order on (value, slot), so
/// partial results merge to the same winner in any order.
const BETTER: &str = r"
fn better(v: f32, k: u32, a: f32, ka: u32) -> bool {
    if (k == NONE) { return false; }
    if (ka == NONE) { return true; }
    let nv = is_nan(v);
    let na = is_nan(a);
    if (nv && na) { return k < ka; }
    if (na) { return false; }
    if (nv) { return true; }
    if (v $CMP a) { return true; }
    return v == a && k < ka;
}
";

const SPMM_ACCUMULATE: &str = r"
struct Params {
    n_items: u32, seg_first: u32, seg_base: u32, nbr_base: u32,
    lhs_base: u32, rhs_base: u32, part_base: u32, merge: u32,
    lhs_lo: u32, lhs_hi: u32, rhs_lo: u32, rhs_hi: u32,
    lhs_target: u32, rhs_target: u32, out_len: u32, lhs_len: u32,
    rhs_len: u32, run_len: u32, reduce_len: u32, contig: u32,
};
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> runs: array<u32>;
@group(0) @binding(2) var<storage, read> segs: array<u32>;
@group(0) @binding(3) var<storage, read> nbr: array<u32>;
@group(0) @binding(4) var<storage, read> lhs: array<f32>;
@group(0) @binding(5) var<storage, read> rhs: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<u32>;

const HAS_ARG: bool = $HAS_ARG;
const IS_SUM: bool = $IS_SUM;
const DOT: bool = $DOT;
const PSTRIDE: u32 = $PSTRIDE;

fn ld_u32(i: u32) -> u32 { if (i < arrayLength(&nbr)) { return nbr[i]; } return 0u; }
fn ld_lhs(i: u32) -> f32 { if (i < arrayLength(&lhs)) { return lhs[i]; } return 0.0; }
fn ld_rhs(i: u32) -> f32 { if (i < arrayLength(&rhs)) { return rhs[i]; } return 0.0; }

@compute @workgroup_size($WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let s = wid.y * nwg.x + wid.x;
    if (s >= p.n_items) { return; }
    let sg = (p.seg_first + s) * 3u - p.seg_base;
    if (sg + 2u >= arrayLength(&segs)) { return; }
    let v = segs[sg];
    let k0 = segs[sg + 1u];
    let k1 = segs[sg + 2u];
    let lhs_contig = (p.contig & 1u) != 0u;
    let rhs_contig = (p.contig & 2u) != 0u;
    for (var tile = 0u; tile < p.out_len; tile += WG * ACC) {
        var acc: array<f32, ACC>;
        var slot: array<u32, ACC>;
        var lo: array<u32, ACC>;
        var ro: array<u32, ACC>;
        for (var i = 0u; i < ACC; i++) {
            acc[i] = 0.0;
            slot[i] = NONE;
            let o = tile + i * WG + t;
            if (o < p.out_len) {
                let run = o / p.run_len;
                let j = o % p.run_len;
                let r = 3u * run;
                if (r + 2u < arrayLength(&runs)) {
                    lo[i] = runs[r + 1u] + select(0u, j, lhs_contig);
                    ro[i] = runs[r + 2u] + select(0u, j, rhs_contig);
                }
            }
        }
        for (var k = k0; k < k1; k++) {
            let nb = 2u * k - p.nbr_base;
            let u = ld_u32(nb);
            let e = ld_u32(nb + 1u);
            let lrow = target_row(p.lhs_target, u, e, v);
            let rrow = target_row(p.rhs_target, u, e, v);
            if (USES_LHS && !in_window(lrow, p.lhs_lo, p.lhs_hi)) { continue; }
            if (USES_RHS && !in_window(rrow, p.rhs_lo, p.rhs_hi)) { continue; }
            let lb = lrow * p.lhs_len - p.lhs_base;
            let rb = rrow * p.rhs_len - p.rhs_base;
            for (var i = 0u; i < ACC; i++) {
                let o = tile + i * WG + t;
                if (o >= p.out_len) { break; }
                var m = 0.0;
                if (DOT) {
                    m = -0.0;
                    for (var q = 0u; q < p.reduce_len; q++) {
                        m += op(ld_lhs(lb + lo[i] + q), ld_rhs(rb + ro[i] + q));
                    }
                } else {
                    var a = 0.0;
                    var b = 0.0;
                    if (USES_LHS) { a = ld_lhs(lb + lo[i]); }
                    if (USES_RHS) { b = ld_rhs(rb + ro[i]); }
                    m = op(a, b);
                }
                if (IS_SUM) {
                    acc[i] += m;
                } else if (better(m, k, acc[i], slot[i])) {
                    acc[i] = m;
                    slot[i] = k;
                }
            }
        }
        for (var i = 0u; i < ACC; i++) {
            let o = tile + i * WG + t;
            if (o >= p.out_len) { break; }
            let idx = ((p.seg_first + s) * p.out_len + o) * PSTRIDE - p.part_base;
            if (idx + PSTRIDE - 1u >= arrayLength(&part)) { break; }
            var a = acc[i];
            var ka = slot[i];
            if (p.merge != 0u) {
                let prev = bitcast<f32>(part[idx]);
                if (IS_SUM) {
                    a += prev;
                } else {
                    let kp = part[idx + 1u];
                    if (!better(a, ka, prev, kp)) {
                        a = prev;
                        ka = kp;
                    }
                }
            }
            part[idx] = bitcast<u32>(a);
            if (HAS_ARG) { part[idx + 1u] = ka; }
        }
    }
}
";

const SPMM_FINALIZE: &str = r"
struct Params {
    n_items: u32, row_first: u32, rp_base: u32, rs_base: u32,
    part_base: u32, nbr_base: u32, out_base: u32, arg_base: u32,
    out_len: u32, write_arg: u32, pad0: u32, pad1: u32,
};
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(2) var<storage, read> row_seg: array<u32>;
@group(0) @binding(3) var<storage, read> part: array<u32>;
@group(0) @binding(4) var<storage, read> nbr: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> arg: array<i32>;

const HAS_ARG: bool = $HAS_ARG;
const IS_SUM: bool = $IS_SUM;
const IS_MEAN: bool = $IS_MEAN;
const PSTRIDE: u32 = $PSTRIDE;

fn ld(i: u32) -> u32 { if (i < arrayLength(&part)) { return part[i]; } return 0u; }

@compute @workgroup_size($WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let r = wid.y * nwg.x + wid.x;
    if (r >= p.n_items) { return; }
    let row = p.row_first + r;
    let ri = row - p.rp_base;
    let si = row - p.rs_base;
    if (ri + 1u >= arrayLength(&row_ptr) || si + 1u >= arrayLength(&row_seg)) { return; }
    let degree = row_ptr[ri + 1u] - row_ptr[ri];
    let s0 = row_seg[si];
    let s1 = row_seg[si + 1u];
    for (var o = t; o < p.out_len; o += WG) {
        var a = 0.0;
        var ka = NONE;
        for (var s = s0; s < s1; s++) {
            let idx = (s * p.out_len + o) * PSTRIDE - p.part_base;
            let v = bitcast<f32>(ld(idx));
            if (IS_SUM) {
                a += v;
            } else {
                let k = ld(idx + 1u);
                if (better(v, k, a, ka)) {
                    a = v;
                    ka = k;
                }
            }
        }
        if (degree == 0u) {
            a = 0.0;
        } else if (IS_MEAN) {
            a = a / f32(degree);
        }
        let oi = row * p.out_len + o - p.out_base;
        if (oi < arrayLength(&out)) { out[oi] = a; }
        if (HAS_ARG && p.write_arg != 0u) {
            var au = -1;
            var ae = -1;
            if (degree != 0u && ka != NONE) {
                let nb = 2u * ka - p.nbr_base;
                if (nb + 1u < arrayLength(&nbr)) {
                    au = i32(nbr[nb]);
                    ae = i32(nbr[nb + 1u]);
                }
            }
            let ai = 2u * (row * p.out_len + o) - p.arg_base;
            if (ai + 1u < arrayLength(&arg)) {
                arg[ai] = au;
                arg[ai + 1u] = ae;
            }
        }
    }
}
";

const SDDMM_HEADER: &str = r"
struct Params {
    n_items: u32, e_first: u32, coo_base: u32, out_base: u32,
    lhs_base: u32, rhs_base: u32, lhs_lo: u32, lhs_hi: u32,
    rhs_lo: u32, rhs_hi: u32, lhs_target: u32, rhs_target: u32,
    out_len: u32, lhs_len: u32, rhs_len: u32, run_len: u32,
    reduce_len: u32, contig: u32, pad0: u32, pad1: u32,
};
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> runs: array<u32>;
@group(0) @binding(2) var<storage, read> coo: array<u32>;
@group(0) @binding(3) var<storage, read> lhs: array<f32>;
@group(0) @binding(4) var<storage, read> rhs: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

fn ld_lhs(i: u32) -> f32 { if (i < arrayLength(&lhs)) { return lhs[i]; } return 0.0; }
fn ld_rhs(i: u32) -> f32 { if (i < arrayLength(&rhs)) { return rhs[i]; } return 0.0; }
fn ld_coo(i: u32) -> u32 { if (i < arrayLength(&coo)) { return coo[i]; } return 0u; }

// Operand element offsets (lhs, rhs) of output element o within a row.
fn offsets(o: u32) -> vec2<u32> {
    let run = o / p.run_len;
    let j = o % p.run_len;
    let r = 3u * run;
    if (r + 2u >= arrayLength(&runs)) { return vec2<u32>(0u, 0u); }
    return vec2<u32>(runs[r + 1u] + select(0u, j, (p.contig & 1u) != 0u),
                     runs[r + 2u] + select(0u, j, (p.contig & 2u) != 0u));
}
";

const SDDMM_ELEMENTWISE: &str = r"
@compute @workgroup_size($WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let id = (wid.y * nwg.x + wid.x) * WG + t;
    if (id >= p.n_items * p.out_len) { return; }
    let el = id / p.out_len;
    let o = id % p.out_len;
    let e = p.e_first + el;
    let c = 2u * e - p.coo_base;
    let u = ld_coo(c);
    let v = ld_coo(c + 1u);
    let lrow = target_row(p.lhs_target, u, e, v);
    let rrow = target_row(p.rhs_target, u, e, v);
    if (USES_LHS && !in_window(lrow, p.lhs_lo, p.lhs_hi)) { return; }
    if (USES_RHS && !in_window(rrow, p.rhs_lo, p.rhs_hi)) { return; }
    let off = offsets(o);
    var a = 0.0;
    var b = 0.0;
    if (USES_LHS) { a = ld_lhs(lrow * p.lhs_len - p.lhs_base + off.x); }
    if (USES_RHS) { b = ld_rhs(rrow * p.rhs_len - p.rhs_base + off.y); }
    let oi = e * p.out_len + o - p.out_base;
    if (oi < arrayLength(&out)) { out[oi] = op(a, b); }
}
";

const SDDMM_DOT: &str = r"
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size($WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let el = wid.y * nwg.x + wid.x;
    if (el >= p.n_items) { return; }
    let e = p.e_first + el;
    let c = 2u * e - p.coo_base;
    let u = ld_coo(c);
    let v = ld_coo(c + 1u);
    let lrow = target_row(p.lhs_target, u, e, v);
    let rrow = target_row(p.rhs_target, u, e, v);
    let live = in_window(lrow, p.lhs_lo, p.lhs_hi) && in_window(rrow, p.rhs_lo, p.rhs_hi);
    let lb = lrow * p.lhs_len - p.lhs_base;
    let rb = rrow * p.rhs_len - p.rhs_base;
    for (var o = 0u; o < p.out_len; o++) {
        let off = offsets(o);
        // -0.0 is the exact additive identity (0.0 + -0.0 would lose a sign).
        var sum = -0.0;
        if (live) {
            for (var q = t; q < p.reduce_len; q += WG) {
                sum += op(ld_lhs(lb + off.x + q), ld_rhs(rb + off.y + q));
            }
        }
        red[t] = sum;
        workgroupBarrier();
        for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
            if (t < stride) { red[t] += red[t + stride]; }
            workgroupBarrier();
        }
        if (t == 0u && live) {
            let oi = e * p.out_len + o - p.out_base;
            if (oi < arrayLength(&out)) { out[oi] = red[0]; }
        }
        workgroupBarrier();
    }
}
";

/// Generates the WGSL source of `kernel` for message `op` and `reduce`.
pub(crate) fn source(kernel: Kernel, op: &MessageOp, reduce: ReduceKind) -> String {
    let body = match kernel {
        Kernel::SpmmAccumulate => [COMMON, BETTER, SPMM_ACCUMULATE].concat(),
        Kernel::SpmmFinalize => [COMMON, BETTER, SPMM_FINALIZE].concat(),
        Kernel::Sddmm => [COMMON, SDDMM_HEADER, SDDMM_ELEMENTWISE].concat(),
        Kernel::SddmmDot => [COMMON, SDDMM_HEADER, SDDMM_DOT].concat(),
    };
    let has_arg = reduce.has_arg();
    body.replace("$WG", &format!("{WG}u"))
        .replace("$ACC", &format!("{ACC}u"))
        .replace("$NONE", &format!("{NONE_SLOT}u"))
        .replace("$USES_LHS", &op.uses_lhs.to_string())
        .replace("$USES_RHS", &op.uses_rhs.to_string())
        .replace("$OP", op.wgsl)
        .replace("$CMP", if reduce == ReduceKind::Min { "<" } else { ">" })
        .replace("$HAS_ARG", &has_arg.to_string())
        .replace("$IS_SUM", &matches!(reduce, ReduceKind::Sum | ReduceKind::Mean).to_string())
        .replace("$IS_MEAN", &(reduce == ReduceKind::Mean).to_string())
        .replace("$DOT", &op.reduces_last_dim.to_string())
        .replace("$PSTRIDE", &format!("{}u", pstride(reduce)))
}

/// u32 words per partial result: the value, plus the winning slot for max/min.
pub(crate) const fn pstride(reduce: ReduceKind) -> u32 {
    if reduce.has_arg() { 2 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gnnkern_simd::op::{Add, CopyLhs, Dot};

    #[test]
    fn every_placeholder_is_filled() {
        let ops =
            [MessageOp::of::<Add>().unwrap(), MessageOp::of::<CopyLhs>().unwrap(), MessageOp::of::<Dot>().unwrap()];
        for kernel in [Kernel::SpmmAccumulate, Kernel::SpmmFinalize, Kernel::Sddmm, Kernel::SddmmDot] {
            for op in &ops {
                for reduce in ReduceKind::ALL {
                    let src = source(kernel, op, reduce);
                    assert!(!src.contains('$'), "{kernel:?} {op:?} {reduce:?} left a placeholder");
                }
            }
        }
    }

    #[test]
    fn params_are_uniform_sized() {
        for size in [size_of::<AccParams>(), size_of::<FinParams>(), size_of::<SddParams>()] {
            assert_eq!(size % 16, 0);
        }
    }
}
