//! Dense matrices and GEMM.
//!
//! [`Mat`] is a row-major `rows × cols` f32 matrix; a node tensor of shape
//! `[N, H, D]` is a `Mat` with `cols = H·D`. Products go through the `gemm`
//! crate (its x86-v4 AVX-512 micro-kernels, threaded with rayon above a size
//! threshold). `gemm` computes `dst := alpha·dst + beta·lhs·rhs` — alpha
//! scales the *destination*, the reverse of BLAS — and takes a row stride
//! and a column stride per operand, so a transposed operand is the same
//! memory with the strides swapped: no copies.

use gnnkern::{AlignedVec, CACHE_LINE, aligned_copy, aligned_filled, aligned_with_capacity};
use rayon::prelude::*;

/// Storage of activations, gradients and edge tensors: it starts on a cache
/// line, because the kernels gather rows of it at random (`gnnkern`'s
/// `buffer` rule; a `Vec` from glibc starts 16 bytes into a line).
pub type Buf = AlignedVec<f32>;

/// A row-major `rows × cols` matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Mat {
    pub rows: usize,
    pub cols: usize,
    pub data: Buf,
}

impl Default for Mat {
    /// The empty `0 × 0` matrix.
    fn default() -> Self {
        Self { rows: 0, cols: 0, data: Buf::new(CACHE_LINE) }
    }
}

/// Elementwise loops switch to rayon above this many elements (below it the
/// fork/join costs more than the loop: ~2 µs vs ~1 ns/element).
pub const PAR_MIN: usize = 1 << 15;

/// GEMMs with fewer multiply-adds than this run on one thread.
const GEMM_PAR_MIN: usize = 1 << 18;

impl Mat {
    /// A zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self { rows, cols, data: aligned_filled(rows * cols, 0.0) }
    }

    /// Wraps `data` (`rows·cols` elements, checked).
    pub fn from_vec(rows: usize, cols: usize, data: Buf) -> Self {
        assert_eq!(data.len(), rows * cols, "Mat::from_vec: {rows}x{cols} needs {} elements", rows * cols);
        Self { rows, cols, data }
    }

    /// A copy of `data` (`rows·cols` elements, checked).
    pub fn from_slice(rows: usize, cols: usize, data: &[f32]) -> Self {
        Self::from_vec(rows, cols, aligned_copy(data))
    }

    /// The matrix of `values` in row-major order (`rows·cols` of them, checked).
    pub fn from_values(rows: usize, cols: usize, values: impl IntoIterator<Item = f32>) -> Self {
        let mut data = aligned_with_capacity(rows * cols);
        for x in values {
            data.push(x);
        }
        Self::from_vec(rows, cols, data)
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Row `i`, mutably.
    pub fn row_mut(&mut self, i: usize) -> &mut [f32] {
        &mut self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// `out[j, :] = self[ids[j], :]` (`out` is `ids.len() × cols`).
    pub fn gather_rows_into(&self, ids: &[usize], out: &mut Mat) {
        assert_eq!((out.rows, out.cols), (ids.len(), self.cols), "Mat::gather_rows_into shape");
        let cols = self.cols.max(1);
        out.data
            .par_chunks_mut(cols)
            .zip(ids.par_iter())
            .with_min_len(PAR_MIN / cols + 1)
            .for_each(|(o, &i)| o.copy_from_slice(self.row(i)));
    }

    /// `self += other` elementwise.
    pub fn add_assign(&mut self, other: &Mat) {
        assert_eq!((self.rows, self.cols), (other.rows, other.cols), "Mat::add_assign shapes");
        zip_apply(&mut self.data, &other.data, |a, b| *a += b);
    }

    /// Adds `bias` (length `cols`) to every row.
    pub fn add_row(&mut self, bias: &[f32]) {
        assert_eq!(bias.len(), self.cols, "Mat::add_row length");
        let cols = self.cols.max(1);
        let rows_per = (PAR_MIN / cols).max(1);
        self.data.par_chunks_mut(rows_per * cols).for_each(|chunk| {
            for row in chunk.chunks_mut(cols) {
                row.iter_mut().zip(bias).for_each(|(x, b)| *x += b);
            }
        });
    }

    /// Multiplies row `i` by `s[i]`.
    pub fn scale_rows(&mut self, s: &[f32]) {
        assert_eq!(s.len(), self.rows, "Mat::scale_rows length");
        let cols = self.cols.max(1);
        self.data.par_chunks_mut(cols).zip(s.par_iter()).with_min_len(PAR_MIN / cols + 1).for_each(|(row, &k)| {
            row.iter_mut().for_each(|x| *x *= k);
        });
    }

    /// Column sums accumulated into `acc` (the bias gradient), in f64.
    pub fn col_sums_into(&self, acc: &mut [f32]) {
        assert_eq!(acc.len(), self.cols, "Mat::col_sums_into length");
        let cols = self.cols.max(1);
        let sums = self
            .data
            .par_chunks(cols * 256)
            .map(|block| {
                let mut s = vec![0f64; self.cols];
                for row in block.chunks(cols) {
                    s.iter_mut().zip(row).for_each(|(a, &x)| *a += f64::from(x));
                }
                s
            })
            .reduce(
                || vec![0f64; self.cols],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            );
        acc.iter_mut().zip(sums).for_each(|(a, s)| *a += s as f32);
    }
}

/// `f(a[i], b[i])` for all `i`, in parallel for long slices.
pub fn zip_apply(a: &mut [f32], b: &[f32], f: impl Fn(&mut f32, f32) + Sync + Send) {
    assert_eq!(a.len(), b.len(), "zip_apply lengths");
    if a.len() < PAR_MIN {
        a.iter_mut().zip(b).for_each(|(x, &y)| f(x, y));
    } else {
        a.par_chunks_mut(PAR_MIN)
            .zip(b.par_chunks(PAR_MIN))
            .for_each(|(x, y)| x.iter_mut().zip(y).for_each(|(x, &y)| f(x, y)));
    }
}

/// `f(a[i])` for all `i`, in parallel for long slices.
pub fn apply(a: &mut [f32], f: impl Fn(&mut f32) + Sync + Send) {
    if a.len() < PAR_MIN {
        a.iter_mut().for_each(f);
    } else {
        a.par_chunks_mut(PAR_MIN).for_each(|x| x.iter_mut().for_each(&f));
    }
}

/// A borrowed row-major `rows × cols` matrix (a whole [`Mat`] or its first
/// rows: a block's destination nodes are the prefix of its sources).
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    pub rows: usize,
    pub cols: usize,
    pub data: &'a [f32],
}

/// A mutably borrowed row-major `rows × cols` matrix.
#[derive(Debug)]
pub struct MatMut<'a> {
    pub rows: usize,
    pub cols: usize,
    pub data: &'a mut [f32],
}

impl Mat {
    /// The whole matrix, borrowed.
    pub fn view(&self) -> MatRef<'_> {
        MatRef { rows: self.rows, cols: self.cols, data: &self.data }
    }

    /// The first `rows` rows, borrowed.
    pub fn top(&self, rows: usize) -> MatRef<'_> {
        MatRef { rows, cols: self.cols, data: &self.data[..rows * self.cols] }
    }

    /// The first `rows` rows, mutably borrowed.
    pub fn top_mut(&mut self, rows: usize) -> MatMut<'_> {
        MatMut { rows, cols: self.cols, data: &mut self.data[..rows * self.cols] }
    }

    /// The whole matrix, mutably borrowed.
    pub fn view_mut(&mut self) -> MatMut<'_> {
        let rows = self.rows;
        self.top_mut(rows)
    }

    /// `self[i, :] = s[i] · x[i, :]` (an out-of-place [`Mat::scale_rows`]:
    /// one read and one write pass instead of a copy plus an in-place pass).
    pub fn assign_scaled_rows(&mut self, x: &Mat, s: &[f32]) {
        assert_eq!((self.rows, self.cols), (x.rows, x.cols), "Mat::assign_scaled_rows shapes");
        assert_eq!(s.len(), self.rows, "Mat::assign_scaled_rows length");
        let cols = self.cols.max(1);
        self.data
            .par_chunks_mut(cols)
            .zip(x.data.par_chunks(cols))
            .zip(s.par_iter())
            .with_min_len(PAR_MIN / cols + 1)
            .for_each(|((o, r), &k)| o.iter_mut().zip(r).for_each(|(o, &v)| *o = v * k));
    }
}

/// Row and column strides of a row-major `rows × cols` matrix, read as
/// itself or transposed.
fn strides(cols: usize, transpose: bool) -> (isize, isize) {
    if transpose { (1, cols as isize) } else { (cols as isize, 1) }
}

/// `out = op(a)·op(b)` (or `out += …` with `accumulate`), `op` = transpose
/// where `ta`/`tb` is set. `out` must already be `m × n`.
pub fn gemm_into(a: MatRef<'_>, ta: bool, b: MatRef<'_>, tb: bool, out: MatMut<'_>, accumulate: bool) {
    let (m, k) = if ta { (a.cols, a.rows) } else { (a.rows, a.cols) };
    let (k2, n) = if tb { (b.cols, b.rows) } else { (b.rows, b.cols) };
    assert_eq!(k, k2, "matmul inner dimensions");
    assert_eq!((out.rows, out.cols), (m, n), "matmul output shape");
    assert_eq!(a.data.len(), a.rows * a.cols, "matmul lhs storage");
    assert_eq!(b.data.len(), b.rows * b.cols, "matmul rhs storage");
    assert_eq!(out.data.len(), m * n, "matmul output storage");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            out.data.fill(0.0);
        }
        return;
    }
    let (a_rs, a_cs) = strides(a.cols, ta);
    let (b_rs, b_cs) = strides(b.cols, tb);
    let par = if m * n * k >= GEMM_PAR_MIN {
        gemm::Parallelism::Rayon(rayon::current_num_threads())
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: `a` is `m × k` and `b` is `k × n` under the strides computed
    // from their own shapes, and their slices hold exactly `rows · cols`
    // elements (checked above), so every element gemm reads is inside
    // `a.data`/`b.data`; `out.data` holds `m × n` row-major elements
    // (checked) and is a `&mut`, so it aliases neither input. `read_dst` is
    // set only when accumulating, when `out` holds initialised values.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.data.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.data.as_ptr(),
            a_cs,
            a_rs,
            b.data.as_ptr(),
            b_cs,
            b_rs,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// [`gemm_into`] on whole matrices.
pub fn matmul_into(a: &Mat, ta: bool, b: &Mat, tb: bool, out: &mut Mat, accumulate: bool) {
    gemm_into(a.view(), ta, b.view(), tb, out.view_mut(), accumulate);
}

/// A trainable tensor and its gradient (same shape).
#[derive(Clone, Debug)]
pub struct Param {
    pub value: Mat,
    pub grad: Mat,
}

impl Param {
    /// A parameter with value `value` and a zero gradient.
    pub fn new(value: Mat) -> Self {
        let grad = Mat::zeros(value.rows, value.cols);
        Self { value, grad }
    }

    /// Glorot/Xavier uniform initialisation with `gain`:
    /// `U(-a, a)`, `a = gain·sqrt(6 / (fan_in + fan_out))`.
    pub fn glorot(rows: usize, cols: usize, gain: f32, rng: &mut crate::models::rng::Rng) -> Self {
        Self::glorot_fans(rows, cols, rows, cols, gain, rng)
    }

    /// Glorot uniform with explicit fans (for attention vectors, whose
    /// fans differ from their matrix shape).
    pub fn glorot_fans(
        rows: usize,
        cols: usize,
        fan_in: usize,
        fan_out: usize,
        gain: f32,
        rng: &mut crate::models::rng::Rng,
    ) -> Self {
        let a = gain * (6.0 / (fan_in + fan_out) as f32).sqrt();
        Self::new(Mat::from_values(rows, cols, (0..rows * cols).map(|_| (2.0 * rng.uniform() - 1.0) * a)))
    }

    /// A zero-initialised parameter (biases).
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self::new(Mat::zeros(rows, cols))
    }

    /// Resets the gradient to zero.
    pub fn zero_grad(&mut self) {
        self.grad.data.fill(0.0);
    }
}

/// A fully connected layer `y = x W + b` (torch `nn.Linear`, weight stored
/// `[in, out]`).
#[derive(Clone, Debug)]
pub struct Linear {
    pub weight: Param,
    pub bias: Param,
}

impl Linear {
    /// torch's default init: weight and bias `U(-1/√in, 1/√in)`.
    pub fn new(input: usize, output: usize, rng: &mut crate::models::rng::Rng) -> Self {
        let bound = 1.0 / (input.max(1) as f32).sqrt();
        let mut draw = |rows: usize, cols: usize| {
            Mat::from_values(rows, cols, (0..rows * cols).map(|_| (2.0 * rng.uniform() - 1.0) * bound))
        };
        let weight = Param::new(draw(input, output));
        let bias = Param::new(draw(1, output));
        Self { weight, bias }
    }

    /// `x W + b`, or `out += x W + b` with `accumulate`.
    pub fn forward_into(&self, x: &Mat, out: &mut Mat, accumulate: bool) {
        matmul_into(x, false, &self.weight.value, false, out, accumulate);
        out.add_row(&self.bias.value.data);
    }

    /// `x W + b`.
    pub fn forward(&self, x: &Mat) -> Mat {
        let mut out = Mat::zeros(x.rows, self.weight.value.cols);
        self.forward_into(x, &mut out, false);
        out
    }

    /// Accumulates `dW += xᵀ g`, `db += Σ g`; adds `g Wᵀ` into `dx` when given.
    pub fn backward(&mut self, x: &Mat, g: &Mat, dx: Option<&mut Mat>) {
        matmul_into(x, true, g, false, &mut self.weight.grad, true);
        g.col_sums_into(&mut self.bias.grad.data);
        if let Some(dx) = dx {
            matmul_into(g, false, &self.weight.value, true, dx, true);
        }
    }

    /// Weight and bias.
    pub fn params(&mut self) -> Vec<&mut Param> {
        vec![&mut self.weight, &mut self.bias]
    }
}
