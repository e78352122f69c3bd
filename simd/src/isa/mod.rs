//! Instruction-set levels and the small per-ISA vocabulary the kernels use.
//!
//! The kernel templates (`spmm`, `sddmm`, ...) are written once against the
//! [`Simd`] trait; each ISA module supplies only the vocabulary: load/store
//! (with masked tails), arithmetic, and the few reductions the loops need.
//! A value of an ISA type is a capability token: it can be obtained only
//! from `try_new()` (which checks the CPU) or an `unsafe new_unchecked()`,
//! so holding one proves the instructions exist.

mod level;

pub use level::{IsaLevel, IsaUnsupported, active_level, with_level};

/// The vocabulary of one instruction set over `f32` lanes.
///
/// Methods take `self` (the token) so a kernel generic over `S: Simd` can
/// only run where `S` was proven available.
pub trait Simd: Copy + Send + Sync + 'static {
    /// One vector of `f32` lanes.
    type F32: Copy;
    /// Number of `f32` lanes in [`Simd::F32`].
    const LANES: usize;
    /// Human-readable level name (`"avx512"`, `"avx2"`, `"portable"`).
    const NAME: &'static str;

    /// All lanes set to `x`.
    fn splat(self, x: f32) -> Self::F32;
    /// `a + b`
    fn add(self, a: Self::F32, b: Self::F32) -> Self::F32;
    /// `a - b`
    fn sub(self, a: Self::F32, b: Self::F32) -> Self::F32;
    /// `a * b`
    fn mul(self, a: Self::F32, b: Self::F32) -> Self::F32;
    /// `a / b`
    fn div(self, a: Self::F32, b: Self::F32) -> Self::F32;
    /// `a * b + c`, fused where the ISA has FMA.
    fn mul_add(self, a: Self::F32, b: Self::F32, c: Self::F32) -> Self::F32;
    /// Sum of all lanes.
    fn reduce_sum(self, a: Self::F32) -> f32;

    /// Loads `LANES` values.
    ///
    /// # Safety
    /// `ptr` must be valid for reading `LANES` `f32`s.
    unsafe fn load(self, ptr: *const f32) -> Self::F32;
    /// Stores `LANES` values.
    ///
    /// # Safety
    /// `ptr` must be valid for writing `LANES` `f32`s.
    unsafe fn store(self, ptr: *mut f32, v: Self::F32);
    /// Loads the first `n < LANES` values; the other lanes are zero.
    ///
    /// # Safety
    /// `ptr` must be valid for reading `n` `f32`s.
    unsafe fn load_partial(self, ptr: *const f32, n: usize) -> Self::F32;
    /// Stores the first `n < LANES` lanes; memory past them is not touched.
    ///
    /// # Safety
    /// `ptr` must be valid for writing `n` `f32`s.
    unsafe fn store_partial(self, ptr: *mut f32, v: Self::F32, n: usize);
}
