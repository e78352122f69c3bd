//! Pointwise activations, dropout and the masked cross-entropy loss, each as a forward function plus the backward it pairs with.
//! Pointwise loops run in parallel above [`PAR_MIN`] elements.

use super::dense::{Mat, PAR_MIN, apply, zip_apply};
use super::rng::uniform_at;
use rayon::prelude::*;

/// ReLU in place.
pub fn relu(x: &mut Mat) {
    apply(&mut x.data, |v| *v = v.max(0.0));
}

/// ReLU backward from its output `y`: `g *= [y > 0]`.
pub fn relu_backward(y: &Mat, g: &mut Mat) {
    zip_apply(&mut g.data, &y.data, |g, y| {
        if y <= 0.0 {
            *g = 0.0
        }
    });
}

/// ELU (α = 1) in place.
pub fn elu(x: &mut Mat) {
    apply(&mut x.data, |v| {
        if *v < 0.0 {
            *v = v.exp_m1()
        }
    });
}

/// ELU backward from its output `y`: `g *= 1` where `y > 0`, else `y + 1`.
pub fn elu_backward(y: &Mat, g: &mut Mat) {
    zip_apply(&mut g.data, &y.data, |g, y| {
        if y < 0.0 {
            *g *= y + 1.0
        }
    });
}

/// LeakyReLU with `slope` in place.
pub fn leaky_relu(x: &mut [f32], slope: f32) {
    apply(x, |v| {
        if *v < 0.0 {
            *v *= slope
        }
    });
}

/// LeakyReLU backward from its *input* `x` (a positive slope keeps the
/// sign, so the output works too).
pub fn leaky_relu_backward(x: &[f32], g: &mut [f32], slope: f32) {
    zip_apply(g, x, |g, x| {
        if x < 0.0 {
            *g *= slope
        }
    });
}

/// Inverted dropout with drop probability `p` on stream `stream`: zeroes
/// each element with probability `p` and scales survivors by `1/(1-p)`.
/// Returns the mask multiplier per element (0 or `1/(1-p)`) for backward;
/// `None` when nothing is dropped (`p == 0`).
pub fn dropout(x: &mut [f32], p: f32, stream: u64) -> Option<Vec<f32>> {
    if p <= 0.0 {
        return None;
    }
    let keep = 1.0 / (1.0 - p);
    let mut mask = vec![0f32; x.len()];
    mask.par_chunks_mut(PAR_MIN).enumerate().for_each(|(c, m)| {
        for (j, m) in m.iter_mut().enumerate() {
            let i = (c * PAR_MIN + j) as u64;
            *m = if uniform_at(stream, i) >= p { keep } else { 0.0 };
        }
    });
    zip_apply(x, &mask, |x, m| *x *= m);
    Some(mask)
}

/// Dropout backward: multiply by the same mask.
pub fn dropout_backward(mask: Option<&[f32]>, g: &mut [f32]) {
    if let Some(mask) = mask {
        zip_apply(g, mask, |g, m| *g *= m);
    }
}

/// Mean softmax cross-entropy over the rows listed in `rows`, and its
/// gradient w.r.t. `logits` (zero on unlisted rows). Labels must be in
/// `0..logits.cols` for the listed rows.
pub fn cross_entropy(logits: &Mat, labels: &[i32], rows: &[usize]) -> (f32, Mat) {
    let c = logits.cols;
    let mut grad = Mat::zeros(logits.rows, c);
    let scale = 1.0 / rows.len().max(1) as f32;
    let mut loss = 0f64;
    for &r in rows {
        let z = logits.row(r);
        let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = z.iter().map(|&v| (v - max).exp()).sum();
        let y = labels[r] as usize;
        loss += f64::from(sum.ln() + max - z[y]);
        let g = grad.row_mut(r);
        for (j, gj) in g.iter_mut().enumerate() {
            let p = (z[j] - max).exp() / sum;
            *gj = (p - if j == y { 1.0 } else { 0.0 }) * scale;
        }
    }
    ((loss * f64::from(scale)) as f32, grad)
}

/// Fraction of `rows` whose arg-max logit equals the label.
pub fn accuracy(logits: &Mat, labels: &[i32], rows: &[usize]) -> f32 {
    let hits = rows.iter().filter(|&&r| argmax(logits.row(r)) == labels[r] as usize).count();
    hits as f32 / rows.len().max(1) as f32
}

/// Index of the largest element (first on ties).
pub fn argmax(xs: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x > xs[best] {
            best = i;
        }
    }
    best
}
