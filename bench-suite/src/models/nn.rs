//! Pointwise activations, dropout and the masked cross-entropy loss, each as a forward function plus the backward it pairs with.
//! Pointwise loops run in parallel above [`PAR_MIN`](super::dense::PAR_MIN) elements.

use super::dense::{Mat, apply, zip_apply};
use super::dropout::Dropout;
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

/// Activation between layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Relu,
    Elu,
}

/// `h = dropout(act(h))` in place: one pass instead of an activation pass,
/// a copy kept for the activation's backward and a dropout pass.
pub fn activate_dropout(act: Activation, h: &mut [f32], drop: Option<Dropout>) {
    let f = move |v: &mut f32| match act {
        Activation::Relu => *v = v.max(0.0),
        Activation::Elu => {
            if *v < 0.0 {
                *v = v.exp_m1()
            }
        }
    };
    match drop {
        None => apply(h, f),
        Some(d) => d.for_each_block(h, &|block: &mut [f32], _: usize, mask: &[f32]| {
            block.iter_mut().zip(mask).for_each(|(v, &m)| {
                f(v);
                *v *= m;
            });
        }),
    }
}

/// Backward of [`activate_dropout`] from its output `yd` (the next layer's
/// input, which the model keeps anyway): `g *= mask · act'(y)`.
///
/// Where the mask keeps an element, `yd = y / (1 - p)`, so `y` is recovered
/// from `yd`; where it drops one, the gradient is 0 whatever `y` was. For
/// ReLU that needs no mask at all: `mask · [y > 0] = [yd > 0] / (1 - p)`.
/// ELU's derivative is 1 for `y >= 0` and `y + 1` below.
pub fn activate_dropout_backward(act: Activation, yd: &[f32], g: &mut [f32], drop: Option<Dropout>) {
    assert_eq!(yd.len(), g.len(), "activate_dropout_backward lengths");
    match (act, drop) {
        (Activation::Relu, None) => zip_apply(g, yd, |g, y| {
            if y <= 0.0 {
                *g = 0.0
            }
        }),
        (Activation::Relu, Some(d)) => {
            let keep = d.keep_scale();
            zip_apply(g, yd, move |g, y| *g = if y > 0.0 { *g * keep } else { 0.0 });
        }
        (Activation::Elu, None) => zip_apply(g, yd, |g, y| {
            if y < 0.0 {
                *g *= y + 1.0
            }
        }),
        (Activation::Elu, Some(d)) => {
            let inv_keep = 1.0 / d.keep_scale();
            d.for_each_block(g, &|block: &mut [f32], start: usize, mask: &[f32]| {
                let yd = &yd[start..start + block.len()];
                block.iter_mut().zip(yd).zip(mask).for_each(|((g, &y), &m)| {
                    let slope = if y < 0.0 { y * inv_keep + 1.0 } else { 1.0 };
                    *g *= m * slope;
                });
            });
        }
    }
}

/// Mean softmax cross-entropy over the rows listed in `rows`, and its
/// gradient w.r.t. `logits` (zero on unlisted rows). Labels must be in
/// `0..logits.cols` for the listed rows.
pub fn cross_entropy(logits: &Mat, labels: &[i32], rows: &[usize]) -> (f32, Mat) {
    let mut grad = Mat::zeros(logits.rows, logits.cols);
    let loss = cross_entropy_into(logits, labels, rows, &mut grad);
    (loss, grad)
}

/// [`cross_entropy`] writing the gradient into `grad` (`logits`' shape;
/// every element is overwritten). Rows run in parallel: on RMAT 2^20 the
/// 629k training rows × 16 classes take two `exp` each.
pub fn cross_entropy_into(logits: &Mat, labels: &[i32], rows: &[usize], grad: &mut Mat) -> f32 {
    assert_eq!((grad.rows, grad.cols), (logits.rows, logits.cols), "cross_entropy_into shapes");
    let c = logits.cols.max(1);
    // How many times each row is listed: the loss counts repeats, the
    // gradient row is written once (the listed-rows semantics).
    let mut listed = vec![0u32; logits.rows];
    rows.iter().for_each(|&r| listed[r] += 1);
    let scale = 1.0 / rows.len().max(1) as f32;
    let loss: f64 = grad
        .data
        .par_chunks_mut(c)
        .zip(listed.par_iter())
        .enumerate()
        .with_min_len(1024)
        .map(|(r, (g, &count))| {
            if count == 0 {
                g.fill(0.0);
                return 0.0;
            }
            let z = logits.row(r);
            let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = z.iter().map(|&v| (v - max).exp()).sum();
            let y = labels[r] as usize;
            for (j, gj) in g.iter_mut().enumerate() {
                let p = (z[j] - max).exp() / sum;
                *gj = (p - if j == y { 1.0 } else { 0.0 }) * scale;
            }
            f64::from(count) * f64::from(sum.ln() + max - z[y])
        })
        .sum();
    (loss * f64::from(scale)) as f32
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
