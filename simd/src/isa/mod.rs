//! Instruction-set levels and the small per-ISA vocabulary the kernels use.
//!
//! The kernel templates (`spmm`, `sddmm`, ...) are written once against the
//! [`Simd`] trait; each ISA module supplies only the vocabulary: load/store
//! (with masked tails, and non-temporal for large outputs), arithmetic,
//! compares/selects for max/min with arg outputs, the gathers that turn
//! winning ordinals into ids, the edge-id offsets and scatter-add of the
//! max/min backward, and the two bit tricks the vectorised `exp` needs.
//! A value of an ISA type is a capability token: it can be obtained only
//! from `try_new()` (which checks the CPU) or an `unsafe new_unchecked()`,
//! so holding one proves the instructions exist.
//!
//! Where AVX-512 lives: `avx512.rs`; AVX2 + FMA: `avx2.rs`, and on xmm
//! registers for rows of at most 4 floats, `avx128.rs` (not a level: see
//! [`with_row_token`]); the fallback that runs anywhere: `portable.rs`.
//! Each is one short file.
//!
//! Code generation: vocabulary methods are `#[inline(always)]` and contain
//! the intrinsics. They only become AVX-512 / AVX2 instructions when they
//! are inlined into a function compiled with those target features; that
//! function is [`Simd::vectorize`], which each token implements as a
//! `#[target_feature]` trampoline around a [`Task`]. Kernels therefore put
//! one `vectorize` call *above* their row loop (per worker task) and write
//! everything below it as `#[inline(always)]` generic code.

#[cfg(target_arch = "x86_64")]
mod avx128;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod level;
#[cfg(all(target_arch = "x86_64", any(miri, test)))]
mod miri_stand_ins;
mod portable;

#[cfg(target_arch = "x86_64")]
pub use avx2::Avx2;
#[cfg(target_arch = "x86_64")]
pub use avx128::Avx128;
#[cfg(target_arch = "x86_64")]
pub use avx512::Avx512;
pub use level::{IsaLevel, IsaUnsupported, active_level, with_level};
pub use portable::Portable;

/// `sfence`: makes the non-temporal stores issued before it visible before
/// any store after it (the `store_fence` of both x86 levels). Miri cannot
/// execute `sfence` and models non-temporal stores as plain stores, so
/// under Miri a sequentially consistent fence stands in for it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sfence() {
    #[cfg(not(miri))]
    // SAFETY: `sfence` (SSE) is available on every x86-64 CPU.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
    #[cfg(miri)]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// A unit of kernel work run under one ISA token (see [`Simd::vectorize`]).
///
/// Implementations mark `run` `#[inline(always)]` so that it, and every
/// `#[inline(always)]` function it calls, is compiled with the token's
/// target features.
pub trait Task {
    /// What the task returns.
    type Output;
    /// Runs the task with the vocabulary `s`.
    fn run<S: Simd>(self, s: S) -> Self::Output;
}

/// The vocabulary of one instruction set over `f32` lanes.
///
/// Methods take `self` (the token) so a kernel generic over `S: Simd` can
/// only run where `S` was proven available.
pub trait Simd: Copy + Send + Sync + 'static {
    /// One vector of `f32` lanes.
    type F32: Copy;
    /// One vector of `i32` lanes (same lane count as [`Simd::F32`]).
    type I32: Copy;
    /// A per-lane boolean (a k-mask on AVX-512, a lane mask elsewhere).
    type Mask: Copy;
    /// Number of `f32` lanes in [`Simd::F32`].
    const LANES: usize;
    /// How many [`Simd::F32`] vectors the register file holds at once: what
    /// a kernel may keep live in a loop before the compiler spills.
    const REGISTERS: usize;
    /// Human-readable level name (`"avx512"`, `"avx2"`, `"portable"`).
    const NAME: &'static str;
    /// Whether `i64` lanes compare for equality in one instruction
    /// (`vpcmpeqq`: AVX2 and up), so that plain Rust comparing arrays of
    /// `i64` vectorises. SSE2 has no such compare and the compiler emulates
    /// it: the `arg_e` screen's `i64` membership test ran 7–8× slower than
    /// the lookups it replaces there (56 against 6.8–8.1 ms, uniform 2^16 /
    /// 2^20, d = 128; `kernels/arg_check.rs`).
    const COMPARES_I64: bool;
    /// Whether [`Simd::edge_offsets`] looks its lanes up at once (one
    /// `vpgatherdd`: AVX-512) rather than lane by lane. Below AVX-512 a
    /// caller that only compares what it looks up does better with plain
    /// loads of its own: the `arg_e` screen's lookups went 1.3–1.7× faster
    /// that way at AVX2 on the Zen 3 VM (`kernels/arg_check.rs`).
    const EDGE_OFFSETS_GATHER: bool;
    /// Whether `u32` lanes have a one-instruction minimum (`pminud`,
    /// SSE4.1: every level but the portable one, which the compiler maps
    /// onto SSE2 and emulates it with a sign flip, a compare and a blend).
    /// The `arg_e` screen's distance test is built on it; at the portable
    /// level the compare test it replaces at AVX2 ran 2.0–5.0× faster on
    /// the uniform graph (2^16 / 2^20, d = 32 / 128) and level on RMAT
    /// (Zen 3 VM; `kernels/arg_check.rs`).
    const MIN_U32: bool;

    /// Runs `task` compiled for this ISA: the one place target features are
    /// switched on. Call it above the row loop, once per worker task.
    fn vectorize<T: Task>(self, task: T) -> T::Output;

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
    /// Lane-wise `if a > b { a } else { b }` (x86 `maxps`: `b` when either is NaN).
    fn max(self, a: Self::F32, b: Self::F32) -> Self::F32;
    /// Lane-wise `if a < b { a } else { b }` (x86 `minps`: `b` when either is NaN).
    fn min(self, a: Self::F32, b: Self::F32) -> Self::F32;
    /// Lanes where `a < b` (ordered: false when either is NaN).
    fn lt(self, a: Self::F32, b: Self::F32) -> Self::Mask;
    /// Lanes where `val` replaces `acc` under max: `!acc.is_nan() && !(val <= acc)`,
    /// i.e. [`crate::op::Max`]'s `replaces` (strictly greater, or the first NaN).
    fn replaces_max(self, val: Self::F32, acc: Self::F32) -> Self::Mask;
    /// Lanes where `val` replaces `acc` under min: `!acc.is_nan() && !(val >= acc)`.
    fn replaces_min(self, val: Self::F32, acc: Self::F32) -> Self::Mask;
    /// Lane-wise `if m { a } else { b }`.
    fn select(self, m: Self::Mask, a: Self::F32, b: Self::F32) -> Self::F32;
    /// Rounds to the nearest integer (ties to even), as `f32`.
    fn round(self, a: Self::F32) -> Self::F32;
    /// `2^n` for lanes holding integral values `n` in `-126..=127`.
    fn pow2i(self, n: Self::F32) -> Self::F32;

    /// Hints that the cache line holding `ptr` will be read soon. Never
    /// faults, whatever the address (a no-op on the portable level).
    fn prefetch(self, ptr: *const f32);

    /// All `i32` lanes set to `x`.
    fn splat_i32(self, x: i32) -> Self::I32;
    /// Lane-wise `if m { a } else { b }` on `i32` lanes.
    fn select_i32(self, m: Self::Mask, a: Self::I32, b: Self::I32) -> Self::I32;

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
    /// Stores `LANES` values around the caches (a non-temporal store: no
    /// read for ownership, the line goes to memory); weakly ordered until
    /// [`Simd::store_fence`].
    ///
    /// # Safety
    /// `ptr` must be valid for writing `LANES` `f32`s and aligned to `4 · LANES` bytes.
    unsafe fn stream(self, ptr: *mut f32, v: Self::F32);
    /// Orders this thread's earlier [`Simd::stream`] stores before its later stores.
    fn store_fence(self);
    /// Stores `LANES` `i32` values.
    ///
    /// # Safety
    /// `ptr` must be valid for writing `LANES` `i32`s.
    unsafe fn store_i32(self, ptr: *mut i32, v: Self::I32);
    /// Loads `LANES` `i32` values.
    ///
    /// # Safety
    /// `ptr` must be valid for reading `LANES` `i32`s.
    unsafe fn load_i32(self, ptr: *const i32) -> Self::I32;
    /// The first `n <= LANES` unsigned integers of `bytes` bytes each (1, 2
    /// or 4; 4 holds values below 2^31) at `ptr`, zero-extended into `i32`
    /// lanes; the other lanes are 0. Lane by lane through a buffer unless a
    /// level has widening loads (AVX-512: `vpmovzxbd`/`vpmovzxwd` of a
    /// masked load).
    ///
    /// # Safety
    /// `ptr` must be valid for reading `n · bytes` bytes and aligned to `bytes`.
    #[inline(always)]
    unsafe fn load_narrow_i32(self, ptr: *const u8, bytes: usize, n: usize) -> Self::I32 {
        debug_assert!(n <= Self::LANES && Self::LANES <= 16);
        let mut lanes = [0i32; 16];
        for (l, lane) in lanes[..n].iter_mut().enumerate() {
            // SAFETY: element `l < n` of the caller's range, aligned.
            *lane = unsafe {
                match bytes {
                    1 => i32::from(*ptr.add(l)),
                    2 => i32::from(*ptr.cast::<u16>().add(l)),
                    _ => *ptr.cast::<i32>().add(l),
                }
            };
        }
        // SAFETY: `lanes` holds 16 >= LANES ints.
        unsafe { self.load_i32(lanes.as_ptr()) }
    }
    /// Stores the first `n <= LANES` lanes of `v`, each truncated to its
    /// low `bytes` bytes (1, 2 or 4), at `ptr`; memory past them is not
    /// touched. The inverse of [`Simd::load_narrow_i32`] for lanes that fit.
    ///
    /// # Safety
    /// `ptr` must be valid for writing `n · bytes` bytes and aligned to `bytes`.
    #[inline(always)]
    unsafe fn store_narrow_i32(self, ptr: *mut u8, bytes: usize, v: Self::I32, n: usize) {
        debug_assert!(n <= Self::LANES && Self::LANES <= 16);
        let mut lanes = [0i32; 16];
        // SAFETY: `lanes` holds 16 >= LANES ints.
        unsafe { self.store_i32(lanes.as_mut_ptr(), v) };
        for (l, &lane) in lanes[..n].iter().enumerate() {
            // SAFETY: element `l < n` of the caller's range, aligned.
            unsafe {
                match bytes {
                    1 => *ptr.add(l) = lane as u8,
                    2 => *ptr.cast::<u16>().add(l) = lane as u16,
                    _ => *ptr.cast::<i32>().add(l) = lane,
                }
            }
        }
    }
    /// `out[l] = table[idx[l]]` for the first `n <= LANES` lanes (the ids of
    /// winning edges, looked up by ordinal); lanes past `n` are not read.
    ///
    /// # Safety
    /// `table.add(idx[l])` must be readable and `out.add(l)` writable for every `l < n`.
    unsafe fn gather_i32(self, table: *const i32, idx: Self::I32, out: *mut i32, n: usize);
    /// [`Simd::gather_i32`] for `i64` ids.
    ///
    /// # Safety
    /// As for [`Simd::gather_i32`].
    unsafe fn gather_i64(self, table: *const i64, idx: Self::I32, out: *mut i64, n: usize);
    /// Gradient offsets of a scatter through edge ids (the max/min
    /// backward's `kernels::arg_scatter`): for each lane `l < n`, with
    /// `e = ids[l]` and `rows_len_col = (num_rows, row_len, col)`,
    /// `out[l] = edge_src[e] · row_len + col + l` when `e` is
    /// an edge (`0 <= e < edge_src.len()`) whose source is a row
    /// (`0 <= edge_src[e] < num_rows`), else `-1`; lanes from `n` on get
    /// `-1`. AVX-512 checks and looks up all lanes at once (one
    /// `vpgatherdd`), the other levels lane by lane.
    ///
    /// # Safety
    /// `ids` must be readable for `n <= LANES` ids and `out` writable for
    /// `LANES`; `col + n <= row_len` and `num_rows · row_len <= i32::MAX`
    /// (so every offset fits).
    unsafe fn edge_offsets(
        self,
        ids: *const i32,
        n: usize,
        edge_src: &[i32],
        rows_len_col: (usize, usize, usize),
        out: *mut i32,
    );
    /// `table[idx[l]] += x[l]` in f32 for every lane `l` with `idx[l] >= 0`
    /// (the others are not touched): a gather, an add and a scatter on
    /// AVX-512, lane by lane below it.
    ///
    /// # Safety
    /// `idx` must be readable for `LANES` `i32`s; for every lane with
    /// `idx[l] >= 0`, `table.add(idx[l])` must be readable and writable,
    /// and those lanes' `idx` must be distinct.
    unsafe fn scatter_add(self, table: *mut f32, idx: *const i32, x: Self::F32);
}

/// [`Simd::edge_offsets`] lane by lane, for the levels without a vector
/// form (`lanes`: their `LANES`).
///
/// # Safety
/// As for [`Simd::edge_offsets`], with `LANES = lanes`.
#[inline(always)]
unsafe fn edge_offsets_by_lane(
    lanes: usize,
    (ids, n): (*const i32, usize),
    edge_src: &[i32],
    (num_rows, row_len, col): (usize, usize, usize),
    out: *mut i32,
) {
    for l in 0..lanes {
        // SAFETY: the caller guarantees `n` readable ids.
        let e = if l < n { unsafe { *ids.add(l) } } else { -1 };
        let u = usize::try_from(e).ok().and_then(|e| edge_src.get(e)).and_then(|&u| usize::try_from(u).ok());
        let at = u.filter(|&u| u < num_rows).map_or(-1, |u| (u * row_len + col + l) as i32);
        // SAFETY: the caller guarantees `lanes` writable ints; the offset
        // fits (`num_rows · row_len <= i32::MAX`, `col + n <= row_len`).
        unsafe { *out.add(l) = at };
    }
}

/// [`Simd::scatter_add`] lane by lane (no scatter instruction below
/// AVX-512), with the vector's lanes in `x`.
///
/// # Safety
/// As for [`Simd::scatter_add`], with `LANES = x.len()`.
#[inline(always)]
unsafe fn scatter_add_by_lane(table: *mut f32, idx: *const i32, x: &[f32]) {
    for (l, &x) in x.iter().enumerate() {
        // SAFETY: the caller guarantees `x.len()` readable ids.
        let i = unsafe { *idx.add(l) };
        if i >= 0 {
            // SAFETY: the caller guarantees this lane's element.
            unsafe { *table.add(i as usize) += x };
        }
    }
}

/// Runs `task` with the token of `level`, or of the best supported level
/// below it. The task itself is not compiled for the ISA: drivers call
/// [`Simd::vectorize`] once per worker task, above the row loop.
pub fn with_token<T: Task>(level: IsaLevel, task: T) -> T::Output {
    #[cfg(target_arch = "x86_64")]
    {
        if level >= IsaLevel::Avx512
            && let Some(s) = Avx512::try_new()
        {
            return task.run(s);
        }
        if level >= IsaLevel::Avx2
            && let Some(s) = Avx2::try_new()
        {
            return task.run(s);
        }
    }
    let _ = level;
    task.run(Portable)
}

/// [`with_token`] on the narrowest vector that still covers a
/// `row_len`-float row, for kernels whose vectors never span two rows (the
/// edge softmax's per-edge rows: `[E, h]` logits with a few heads). At the
/// AVX2 and AVX-512 levels, rows of at most 4 floats run on xmm registers
/// ([`Avx128`]) and rows of at most 8 on ymm ([`Avx2`]): a wider register
/// carries dead lanes through every operation, and one or two lanes load
/// and store without a mask on xmm (docs/PERFORMANCE.md, "Partial vectors").
pub fn with_row_token<T: Task>(level: IsaLevel, row_len: usize, task: T) -> T::Output {
    #[cfg(target_arch = "x86_64")]
    if level >= IsaLevel::Avx2 {
        if row_len <= Avx128::LANES
            && let Some(s) = Avx128::try_new()
        {
            return task.run(s);
        }
        if row_len <= Avx2::LANES
            && let Some(s) = Avx2::try_new()
        {
            return task.run(s);
        }
    }
    with_token(level, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams one full vector into a cache line, fences, and reads the
    /// line back: under Miri, this is the streaming-store stand-ins'
    /// alignment and value check at each level.
    struct StreamLine;

    impl Task for StreamLine {
        type Output = Vec<f32>;
        #[inline(always)]
        fn run<S: Simd>(self, s: S) -> Vec<f32> {
            #[repr(align(64))]
            struct Line([f32; 16]);
            let values: Vec<f32> = (0..S::LANES).map(|i| i as f32 + 0.5).collect();
            let mut line = Line([f32::NAN; 16]);
            // SAFETY: `values` holds LANES floats; the 64-byte aligned line
            // holds 16 >= LANES, at every level's stream alignment.
            unsafe { s.stream(line.0.as_mut_ptr(), s.load(values.as_ptr())) };
            s.store_fence();
            line.0[..S::LANES].to_vec()
        }
    }

    /// Every token a kernel can run on: each supported level's own
    /// ([`with_token`]) and its narrow-row ones ([`with_row_token`]).
    fn each_token<T: Task + Copy>(task: T, mut check: impl FnMut(T::Output, &str)) {
        for level in IsaLevel::tested() {
            for row_len in [1, 8, usize::MAX] {
                check(with_row_token(level, row_len, task), &format!("{}, rows of {row_len}", level.name()));
            }
        }
    }

    #[test]
    fn narrow_rows_get_the_narrowest_covering_vector() {
        struct Lanes;
        impl Task for Lanes {
            type Output = usize;
            fn run<S: Simd>(self, _: S) -> usize {
                S::LANES
            }
        }
        for level in IsaLevel::tested() {
            let own = with_token(level, Lanes);
            for (row_len, narrow) in [(0, 4), (1, 4), (4, 4), (5, 8), (8, 8), (9, own), (usize::MAX, own)] {
                let want = if level >= IsaLevel::Avx2 { narrow.min(own) } else { own };
                assert_eq!(with_row_token(level, row_len, Lanes), want, "{}, rows of {row_len}", level.name());
            }
        }
    }

    #[test]
    fn a_streamed_vector_lands_whole_at_every_level() {
        #[derive(Clone, Copy)]
        struct Vectorized;
        impl Task for Vectorized {
            type Output = Vec<f32>;
            fn run<S: Simd>(self, s: S) -> Vec<f32> {
                s.vectorize(StreamLine)
            }
        }
        each_token(Vectorized, |line, token| {
            let want: Vec<f32> = (0..line.len()).map(|i| i as f32 + 0.5).collect();
            assert_eq!(line, want, "{token}");
        });
    }

    /// `load_partial` of `n < LANES` floats from a buffer of exactly `n`
    /// (Miri faults a read past it) gives them and zeros; `store_partial`
    /// of `n` lanes changes exactly the first `n` floats of a buffer; the
    /// `i32` load and the id gathers through it likewise.
    #[derive(Clone, Copy)]
    struct Partials;

    struct PartialLanes;

    impl Task for PartialLanes {
        type Output = ();
        #[inline(always)]
        fn run<S: Simd>(self, s: S) {
            for n in 0..S::LANES {
                let from: Vec<f32> = (0..n).map(|i| i as f32 + 1.5).collect();
                let mut lanes = vec![f32::NAN; S::LANES];
                // SAFETY: `from` holds `n` floats, `lanes` LANES.
                unsafe { s.store(lanes.as_mut_ptr(), s.load_partial(from.as_ptr(), n)) };
                let want: Vec<f32> = (0..S::LANES).map(|i| if i < n { i as f32 + 1.5 } else { 0.0 }).collect();
                assert_eq!(lanes, want, "{}: load_partial({n})", S::NAME);
                let mut to = vec![-1.0f32; S::LANES];
                // SAFETY: `want` holds LANES floats, `to` LANES >= n.
                unsafe { s.store_partial(to.as_mut_ptr(), s.load(want.as_ptr()), n) };
                let kept: Vec<f32> = (0..S::LANES).map(|i| if i < n { want[i] } else { -1.0 }).collect();
                assert_eq!(to, kept, "{}: store_partial({n})", S::NAME);
            }
            // Integer lanes: a loaded index vector gathers exactly the first
            // `n` ids and writes nothing past them.
            let idx: Vec<i32> = (0..S::LANES as i32).map(|l| (l * 5 + 3) % 17).collect();
            let table: Vec<i64> = (0..17).map(|i| 100 + i).collect();
            let table32: Vec<i32> = table.iter().map(|&t| t as i32).collect();
            let mut round = vec![0i32; S::LANES];
            // SAFETY: `idx` and `round` hold LANES ints.
            unsafe { s.store_i32(round.as_mut_ptr(), s.load_i32(idx.as_ptr())) };
            assert_eq!(round, idx, "{}: load_i32", S::NAME);
            for n in 0..=S::LANES {
                let (mut got32, mut got64) = (vec![-1i32; S::LANES], vec![-1i64; S::LANES]);
                // SAFETY: every index is below 17, the tables' length; the
                // outputs hold LANES >= n ids.
                unsafe {
                    let v = s.load_i32(idx.as_ptr());
                    s.gather_i32(table32.as_ptr(), v, got32.as_mut_ptr(), n);
                    s.gather_i64(table.as_ptr(), v, got64.as_mut_ptr(), n);
                }
                let want: Vec<i64> = (0..S::LANES).map(|l| if l < n { table[idx[l] as usize] } else { -1 }).collect();
                assert_eq!(got64, want, "{}: gather_i64({n})", S::NAME);
                assert_eq!(got32, want.iter().map(|&w| w as i32).collect::<Vec<_>>(), "{}: gather_i32({n})", S::NAME);
            }
            // Narrow integers: `n` lanes out, exactly `n · bytes` bytes
            // written, and back zero-extended with zeros past `n`.
            let wide: Vec<i32> = (0..S::LANES as i32).map(|l| l * 97 + 0xF0).collect();
            for bytes in [1usize, 2, 4] {
                let fit = |x: i32| if bytes == 4 { x } else { x & ((1 << (8 * bytes)) - 1) };
                for n in 0..=S::LANES {
                    let mut mem = vec![0xA5u8; 16 * 4 + 4];
                    // SAFETY: `wide` holds LANES ints; `mem` holds 68 >= n ·
                    // bytes bytes, and its 4-aligned start is aligned to `bytes`.
                    let back = unsafe {
                        let at = mem.as_mut_ptr().add(mem.as_ptr().align_offset(4));
                        s.store_narrow_i32(at, bytes, s.load_i32(wide.as_ptr()), n);
                        let mut back = vec![-1i32; S::LANES];
                        s.store_i32(back.as_mut_ptr(), s.load_narrow_i32(at, bytes, n));
                        back
                    };
                    let want: Vec<i32> = (0..S::LANES).map(|l| if l < n { fit(wide[l]) } else { 0 }).collect();
                    assert_eq!(back, want, "{}: narrow {bytes}-byte lanes, n = {n}", S::NAME);
                    let start = mem.as_ptr().align_offset(4);
                    let untouched = mem.iter().enumerate().filter(|&(i, _)| i < start || i >= start + n * bytes);
                    assert!(
                        untouched.into_iter().all(|(_, &b)| b == 0xA5),
                        "{}: store_narrow_i32({bytes}, {n}) wrote past its lanes",
                        S::NAME
                    );
                }
            }
        }
    }

    impl Task for Partials {
        type Output = ();
        fn run<S: Simd>(self, s: S) {
            s.vectorize(PartialLanes)
        }
    }

    #[test]
    fn partial_loads_and_stores_touch_exactly_their_lanes_at_every_level() {
        each_token(Partials, |(), _| {});
    }

    /// [`Simd::edge_offsets`] for every prefix length `n`, over ids that
    /// are edges, negative, past the edges, or edges whose source is past
    /// the rows; each level against the rule written out. `None` where
    /// `n` exceeds the token's lanes (outside the contract).
    struct Offsets(usize);

    impl Task for Offsets {
        type Output = Option<Vec<i32>>;
        #[inline(always)]
        fn run<S: Simd>(self, s: S) -> Option<Vec<i32>> {
            if self.0 > S::LANES {
                return None;
            }
            let ids = [2, -1, 0, 5, 3, i32::MIN, 4, 1, 2, 0, 7, -7, 1, 3, 2, 0];
            let edge_src = [1, 0, 3, 9, 2];
            let mut out = [7i32; 16];
            // SAFETY: `ids` holds 16 >= n ids and `out` 16 >= LANES ints;
            // col 2 + n <= row_len 20, and 4 rows · 20 fit `i32`.
            unsafe { s.edge_offsets(ids.as_ptr(), self.0, &edge_src, (4, 20, 2), out.as_mut_ptr()) };
            Some(out[..S::LANES].to_vec())
        }
    }

    #[derive(Clone, Copy)]
    struct VectorizedOffsets(usize);

    impl Task for VectorizedOffsets {
        type Output = Option<Vec<i32>>;
        fn run<S: Simd>(self, s: S) -> Option<Vec<i32>> {
            s.vectorize(Offsets(self.0))
        }
    }

    #[test]
    fn edge_offsets_follow_the_rule_at_every_level() {
        let ids = [2, -1, 0, 5, 3, i32::MIN, 4, 1, 2, 0, 7, -7, 1, 3, 2, 0];
        let edge_src = [1i32, 0, 3, 9, 2];
        for n in 0..=16 {
            each_token(VectorizedOffsets(n), |got, token| {
                let Some(got) = got else { return };
                let lanes = got.len();
                let want: Vec<i32> = (0..lanes)
                    .map(|l| {
                        let e = if l < n { ids[l] } else { -1 };
                        match usize::try_from(e).ok().and_then(|e| edge_src.get(e)) {
                            Some(&u) if (0..4).contains(&u) => u * 20 + 2 + l as i32,
                            _ => -1,
                        }
                    })
                    .collect();
                assert_eq!(got, want, "{token}, n = {n}");
            });
        }
    }
}
