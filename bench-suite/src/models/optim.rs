//! Adam (Kingma & Ba) with L2 weight decay added to the gradient, as
//! `torch.optim.Adam(weight_decay=…)`, optionally on a leading subset of
//! the parameters only (Kipf & Welling's GCN decays its first layer; PyG's
//! reproduction passes two parameter groups).

use super::dense::Param;
use rayon::prelude::*;

/// Adam state for a fixed list of parameters.
#[derive(Clone, Debug)]
pub struct Adam {
    pub lr: f32,
    pub weight_decay: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    /// Weight decay applies to the first `decayed` parameters.
    decayed: usize,
    t: i32,
    m: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
}

impl Adam {
    /// Adam with torch's defaults (β = 0.9, 0.999; ε = 1e-8).
    pub fn new(lr: f32, weight_decay: f32) -> Self {
        Self {
            lr,
            weight_decay,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            decayed: usize::MAX,
            t: 0,
            m: Vec::new(),
            v: Vec::new(),
        }
    }

    /// Applies weight decay to the first `n` parameters of each `step` only.
    pub fn decay_first(self, n: usize) -> Self {
        Self { decayed: n, ..self }
    }

    /// One update of every parameter from its gradient; the order of
    /// `params` must be the same at every call.
    pub fn step(&mut self, params: &mut [&mut Param]) {
        if self.m.is_empty() {
            self.m = params.iter().map(|p| vec![0.0; p.value.data.len()]).collect();
            self.v = self.m.clone();
        }
        self.t += 1;
        let (b1, b2, eps, lr) = (self.beta1, self.beta2, self.eps, self.lr);
        let c1 = 1.0 - b1.powi(self.t);
        let c2 = 1.0 - b2.powi(self.t);
        for (i, ((p, m), v)) in params.iter_mut().zip(&mut self.m).zip(&mut self.v).enumerate() {
            let wd = if i < self.decayed { self.weight_decay } else { 0.0 };
            let Param { value, grad } = &mut **p;
            value
                .data
                .par_iter_mut()
                .zip(grad.data.par_iter())
                .zip(m.par_iter_mut().zip(v.par_iter_mut()))
                .with_min_len(4096)
                .for_each(|((w, &g), (m, v))| {
                    let g = g + wd * *w;
                    *m = b1 * *m + (1.0 - b1) * g;
                    *v = b2 * *v + (1.0 - b2) * g * g;
                    *w -= lr * (*m / c1) / ((*v / c2).sqrt() + eps);
                });
        }
    }
}
