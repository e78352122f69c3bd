//! Dense, graph-free helpers of the backward passes: DGL's `_reduce_grad`
//! (sum a gradient over the dimensions its operand was broadcast along) and
//! the elementwise post-scalings. All work on node- or edge-indexed rows in
//! parallel and accumulate in f64.

use gnnkern_simd::layout::{BroadcastPlan, OperandShape};
use rayon::prelude::*;

/// Left-pads `shape` with 1s to `rank` dimensions.
pub(super) fn pad(shape: &[usize], rank: usize) -> Vec<usize> {
    let mut v = vec![1; rank.saturating_sub(shape.len())];
    v.extend_from_slice(shape);
    v
}

/// The broadcast of two feature shapes (they are known to be compatible).
pub(super) fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    const BIN: OperandShape = OperandShape { uses_lhs: true, uses_rhs: true, reduces_last_dim: false };
    BroadcastPlan::new(BIN, a, b).expect("gradient shapes are broadcasts of validated operand shapes").out_shape
}

/// For each element of a row of shape `full`, the element of a row of shape
/// `part` it is summed into (`part` broadcasts to `full`).
pub(super) fn reduce_map(full: &[usize], part: &[usize]) -> Vec<usize> {
    let rank = full.len();
    let part = pad(part, rank);
    let mut strides = vec![0; rank];
    let mut acc = 1;
    for d in (0..rank).rev() {
        strides[d] = if part[d] == 1 { 0 } else { acc };
        acc *= part[d];
    }
    let len: usize = full.iter().product();
    let mut map = Vec::with_capacity(len);
    let mut idx = vec![0usize; rank];
    for _ in 0..len {
        map.push(idx.iter().zip(&strides).map(|(i, s)| i * s).sum());
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < full[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    map
}

/// `dst[r][map[o]] = Σ src[r][o]` row by row (`src` rows have `map.len()`
/// elements, `dst` rows `dst_len`).
pub(super) fn reduce_rows(src: &[f32], map: &[usize], dst: &mut [f32], dst_len: usize) {
    if dst_len == 0 {
        return;
    }
    let src_len = map.len();
    dst.par_chunks_mut(dst_len).enumerate().for_each_init(
        || vec![0f64; dst_len],
        |acc, (r, out)| {
            acc.fill(0.0);
            if src_len > 0 {
                for (&x, &m) in src[r * src_len..(r + 1) * src_len].iter().zip(map) {
                    acc[m] += f64::from(x);
                }
            }
            for (o, a) in out.iter_mut().zip(acc.iter()) {
                *o = *a as f32;
            }
        },
    );
}

/// `dst[r] = src[r] * scale[r]` for rows of `len` elements.
pub(super) fn scale_rows(src: &[f32], scale: &[f32], dst: &mut [f32], len: usize) {
    if len == 0 {
        return;
    }
    dst.par_chunks_mut(len).zip(src.par_chunks(len)).zip(scale.par_iter()).for_each(|((d, s), &k)| {
        for (d, &s) in d.iter_mut().zip(s) {
            *d = s * k;
        }
    });
}

/// Negates every element.
pub(super) fn negate(x: &mut [f32]) {
    x.par_iter_mut().for_each(|v| *v = -*v);
}

/// The rhs gradient of `div` from `s = Σ lhs·g`: `grad = -s / rhs²`, with
/// rows of degree 0 (no message read them) left at exactly 0.
pub(super) fn div_rhs_post(grad: &mut [f32], rhs: &[f32], len: usize, degree: impl Fn(usize) -> usize + Sync) {
    if len == 0 {
        return;
    }
    grad.par_chunks_mut(len).zip(rhs.par_chunks(len)).enumerate().for_each(|(r, (g, y))| {
        if degree(r) == 0 {
            g.fill(0.0);
            return;
        }
        for (g, &y) in g.iter_mut().zip(y) {
            let y = f64::from(y);
            *g = (-f64::from(*g) / (y * y)) as f32;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_map_sums_broadcast_dimensions() {
        // [2,3] summed into [2,1]: rows collapse.
        assert_eq!(reduce_map(&[2, 3], &[2, 1]), vec![0, 0, 0, 1, 1, 1]);
        // [2,3] summed into [3] (leading dimension broadcast).
        assert_eq!(reduce_map(&[2, 3], &[3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(reduce_map(&[2, 3], &[1]), vec![0; 6]);
        let mut dst = vec![9.0; 4];
        reduce_rows(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], &[0, 0, 0, 1, 1, 1], &mut dst, 2);
        assert_eq!(dst, vec![6.0, 15.0, 3.0, 3.0]);
    }

    #[test]
    fn div_rhs_post_leaves_unread_rows_zero() {
        let mut g = vec![2.0, 2.0];
        div_rhs_post(&mut g, &[0.0, 2.0], 1, |r| r);
        assert_eq!(g, vec![0.0, -0.5]);
    }
}
