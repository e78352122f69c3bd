//! Batch normalisation over rows (torch `BatchNorm1d`: eps 1e-5, momentum
//! 0.1, learnable `gamma`/`beta`).
//!
//! - Training mode normalises with the batch's mean and biased variance and
//!   updates the running statistics:
//!   `running = (1 − momentum)·running + momentum·batch`, with the
//!   *unbiased* batch variance (`n/(n−1)` times the biased one) for
//!   `running_var`, as torch does. Running mean starts at 0, variance at 1.
//! - Evaluation mode normalises with the running statistics, so the output
//!   of a row does not depend on the other rows of the batch.
//!
//! Backward in training mode differentiates through the batch statistics;
//! in evaluation mode the statistics are constants and `dx = g·γ/σ`.

use super::dense::{Mat, Param};

/// torch's default `eps`.
const EPS: f64 = 1e-5;
/// torch's default `momentum`.
pub const MOMENTUM: f32 = 0.1;

/// A batch-norm layer over `channels` columns.
#[derive(Clone, Debug)]
pub struct BatchNorm {
    pub gamma: Param,
    pub beta: Param,
    pub running_mean: Vec<f32>,
    pub running_var: Vec<f32>,
    pub momentum: f32,
    cache: Cache,
}

/// What backward needs from the last forward.
#[derive(Clone, Debug, Default)]
struct Cache {
    xhat: Mat,
    inv_std: Vec<f32>,
    /// Whether the forward used batch statistics (training mode).
    batch_stats: bool,
}

/// Column means and biased variances of `x`, accumulated in f64.
fn column_stats(x: &Mat) -> (Vec<f64>, Vec<f64>) {
    let (n, c) = (x.rows, x.cols);
    let mut mean = vec![0f64; c];
    for r in 0..n {
        x.row(r).iter().zip(&mut mean).for_each(|(&v, m)| *m += f64::from(v));
    }
    mean.iter_mut().for_each(|m| *m /= n.max(1) as f64);
    let mut var = vec![0f64; c];
    for r in 0..n {
        x.row(r).iter().zip(&mean).zip(&mut var).for_each(|((&v, m), s)| *s += (f64::from(v) - m).powi(2));
    }
    var.iter_mut().for_each(|s| *s /= n.max(1) as f64);
    (mean, var)
}

impl BatchNorm {
    /// `gamma = 1`, `beta = 0`, running mean 0 and variance 1.
    pub fn new(channels: usize) -> Self {
        Self {
            gamma: Param::new(Mat::from_values(1, channels, std::iter::repeat_n(1.0, channels))),
            beta: Param::zeros(1, channels),
            running_mean: vec![0.0; channels],
            running_var: vec![1.0; channels],
            momentum: MOMENTUM,
            cache: Cache::default(),
        }
    }

    /// Normalises `x` (`[n, channels]`): with batch statistics (and a
    /// running-statistics update) when `training`, else with the running
    /// statistics.
    pub fn forward(&mut self, x: &Mat, training: bool) -> Mat {
        assert_eq!(x.cols, self.running_mean.len(), "BatchNorm channels");
        let (mean, inv_std): (Vec<f64>, Vec<f32>) = if training {
            let (mean, var) = column_stats(x);
            let n = x.rows as f64;
            // torch stores the unbiased variance; a single row has none, and
            // torch refuses that batch in training mode — keep the old value.
            let m = f64::from(self.momentum);
            for j in 0..x.cols {
                self.running_mean[j] = ((1.0 - m) * f64::from(self.running_mean[j]) + m * mean[j]) as f32;
                if x.rows > 1 {
                    let unbiased = var[j] * n / (n - 1.0);
                    self.running_var[j] = ((1.0 - m) * f64::from(self.running_var[j]) + m * unbiased) as f32;
                }
            }
            let inv_std = var.iter().map(|v| (1.0 / (v + EPS).sqrt()) as f32).collect();
            (mean, inv_std)
        } else {
            let mean = self.running_mean.iter().map(|&m| f64::from(m)).collect();
            let inv_std = self.running_var.iter().map(|&v| (1.0 / (f64::from(v) + EPS).sqrt()) as f32).collect();
            (mean, inv_std)
        };
        let (gamma, beta) = (&self.gamma.value.data, &self.beta.value.data);
        let mut xhat = Mat::zeros(x.rows, x.cols);
        let mut y = Mat::zeros(x.rows, x.cols);
        for r in 0..x.rows {
            for j in 0..x.cols {
                let h = (x.row(r)[j] - mean[j] as f32) * inv_std[j];
                xhat.row_mut(r)[j] = h;
                y.row_mut(r)[j] = gamma[j] * h + beta[j];
            }
        }
        self.cache = Cache { xhat, inv_std, batch_stats: training };
        y
    }

    /// Accumulates `dgamma`, `dbeta` for the last forward and returns `dx`.
    pub fn backward(&mut self, g: &Mat) -> Mat {
        let Cache { xhat, inv_std, batch_stats } = &self.cache;
        assert_eq!((g.rows, g.cols), (xhat.rows, xhat.cols), "BatchNorm::backward shape");
        let (n, c) = (g.rows, g.cols);
        let mut sum_g = vec![0f64; c];
        let mut sum_gx = vec![0f64; c];
        for r in 0..n {
            for j in 0..c {
                let gv = f64::from(g.row(r)[j]);
                sum_g[j] += gv;
                sum_gx[j] += gv * f64::from(xhat.row(r)[j]);
            }
        }
        for j in 0..c {
            self.gamma.grad.data[j] += sum_gx[j] as f32;
            self.beta.grad.data[j] += sum_g[j] as f32;
        }
        let gamma = &self.gamma.value.data;
        let nf = n.max(1) as f64;
        let mut dx = Mat::zeros(n, c);
        for r in 0..n {
            for j in 0..c {
                let gv = f64::from(g.row(r)[j]);
                let scale = f64::from(gamma[j] * inv_std[j]);
                let d = if *batch_stats {
                    // d/dx of (x − μ(x))/σ(x): the batch statistics depend on x.
                    let h = f64::from(xhat.row(r)[j]);
                    scale * (gv - sum_g[j] / nf - h * sum_gx[j] / nf)
                } else {
                    scale * gv
                };
                dx.row_mut(r)[j] = d as f32;
            }
        }
        dx
    }

    /// `gamma` and `beta`.
    pub fn params(&mut self) -> Vec<&mut Param> {
        vec![&mut self.gamma, &mut self.beta]
    }
}
