//! Pieces every kernel template shares: operand rows, vector slots of a
//! broadcast plan, nnz-balanced row partitions and the dot product.

use crate::Index;
use crate::error::KernelError;
use crate::isa::Simd;
use crate::layout::{BroadcastPlan, CsrView};
use crate::op::{BinaryOp, Target};

/// The row of an operand that edge `e = (u, v)` reads.
#[inline(always)]
pub(crate) fn pick(target: Target, u: usize, e: usize, v: usize) -> usize {
    match target {
        Target::Src => u,
        Target::Edge => e,
        Target::Dst => v,
    }
}

/// The source ids and edge ids of the slots a pass walks: a CSR's own
/// arrays (plain pass) or a blocked layout's copies. Every id is in bounds
/// for the operands of the call (a validated CSR, or a layout that
/// [`super::BlockedCsr::matches`] it).
#[derive(Clone, Copy)]
pub(crate) struct EdgeIds<'a, I: Index> {
    pub cols: &'a [I],
    pub eids: &'a [I],
}

impl<'a, I: Index> EdgeIds<'a, I> {
    /// The slots of `csr` itself.
    pub fn of(csr: &CsrView<'a, I>) -> Self {
        Self { cols: csr.indices(), eids: csr.eids() }
    }
}

/// One operand tensor as the kernels read it.
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub data: &'a [f32],
    pub row_len: usize,
    pub target: Target,
    /// Within a run, consecutive outputs read consecutive elements (else one broadcast scalar).
    pub contiguous: bool,
}

impl Operand<'_> {
    /// Start of the operand row for edge `(u, e, v)`.
    ///
    /// # Safety
    /// The row index must be below the operand's row count (true for ids
    /// of a validated CSR whose operand lengths were checked by [`plan_slots`]).
    #[inline(always)]
    pub unsafe fn row(&self, u: usize, e: usize, v: usize) -> *const f32 {
        // SAFETY: by the caller's contract the offset is inside `data`
        // (`row_len == 0` gives the start pointer, never dereferenced).
        unsafe { self.data.as_ptr().add(pick(self.target, u, e, v) * self.row_len) }
    }

    /// `len` operand values of a vector slot at element offset `off` of `row`.
    ///
    /// # Safety
    /// `row + off` must be readable for `len` floats (contiguous) or one float.
    #[inline(always)]
    pub unsafe fn fetch<S: Simd>(&self, s: S, row: *const f32, off: usize, len: usize) -> S::F32 {
        // SAFETY: forwarded from the caller.
        unsafe {
            if !self.contiguous {
                s.splat(*row.add(off))
            } else if len == S::LANES {
                s.load(row.add(off))
            } else {
                s.load_partial(row.add(off), len)
            }
        }
    }
}

/// One vector of output: `len <= LANES` elements at `out`, reading the
/// operands at `lhs` / `rhs` (element offsets within their rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub out: usize,
    pub lhs: usize,
    pub rhs: usize,
    pub len: usize,
}

/// Number of rows an operand on `target` has.
pub(crate) fn target_rows<I: Index>(csr: &CsrView<'_, I>, target: Target) -> usize {
    match target {
        Target::Src => csr.num_cols(),
        Target::Edge => csr.num_edges(),
        Target::Dst => csr.num_rows(),
    }
}

/// Checks a plan and the operand slices against the graph, then cuts the
/// plan's runs into vector slots of `lanes` (for dot: one slot per run,
/// whose `len` is the reduced length K).
///
/// `rows_of(target)` gives the operand row count for a target and `out_rows`
/// the number of output rows. Every later unchecked access relies on this.
pub(crate) fn plan_slots<O: BinaryOp>(
    plan: &BroadcastPlan,
    lanes: usize,
    (lhs, lhs_rows): (&[f32], usize),
    (rhs, rhs_rows): (&[f32], usize),
    (out_len_total, out_rows): (usize, usize),
) -> Result<Vec<Slot>, KernelError> {
    let err = |what, expected, actual| Err(KernelError { what, expected, actual });
    if O::REDUCES_LAST_DIM && plan.run_len != 1 {
        return err("broadcast plan run_len (a reducing operator needs a dot plan)", 1, plan.run_len);
    }
    if !O::REDUCES_LAST_DIM && plan.reduce_len != 1 {
        return err(
            "broadcast plan reduce_len (an elementwise operator needs an elementwise plan)",
            1,
            plan.reduce_len,
        );
    }
    let need = |used: bool, len: usize| if used { len } else { 0 };
    crate::error::check_len("lhs elements", need(O::USE_LHS, lhs_rows * plan.lhs_len), lhs.len())?;
    crate::error::check_len("rhs elements", need(O::USE_RHS, rhs_rows * plan.rhs_len), rhs.len())?;
    crate::error::check_len("output elements", out_rows * plan.out_len, out_len_total)?;
    if plan.run_len == 0 || plan.runs.len() * plan.run_len != plan.out_len {
        return err("broadcast plan outputs (runs × run_len)", plan.out_len, plan.runs.len() * plan.run_len);
    }
    let k = if O::REDUCES_LAST_DIM { plan.reduce_len } else { 1 };
    let span = |contiguous: bool| if contiguous { plan.run_len * k } else { 1 };
    let mut slots = Vec::new();
    for (i, run) in plan.runs.iter().enumerate() {
        if run.out != i * plan.run_len {
            return err("broadcast plan run offset", i * plan.run_len, run.out);
        }
        if O::USE_LHS && k > 0 && run.lhs + span(plan.lhs_contiguous) > plan.lhs_len {
            return err("broadcast plan lhs extent", plan.lhs_len, run.lhs + span(plan.lhs_contiguous));
        }
        if O::USE_RHS && k > 0 && run.rhs + span(plan.rhs_contiguous) > plan.rhs_len {
            return err("broadcast plan rhs extent", plan.rhs_len, run.rhs + span(plan.rhs_contiguous));
        }
        if O::REDUCES_LAST_DIM {
            slots.push(Slot { out: run.out, lhs: run.lhs, rhs: run.rhs, len: k });
            continue;
        }
        let mut j = 0;
        while j < plan.run_len {
            let len = lanes.min(plan.run_len - j);
            let step = |contiguous: bool| if contiguous { j } else { 0 };
            slots.push(Slot {
                out: run.out + j,
                lhs: run.lhs + step(plan.lhs_contiguous),
                rhs: run.rhs + step(plan.rhs_contiguous),
                len,
            });
            j += len;
        }
    }
    Ok(slots)
}

/// `Σ_j φ(a[j], b[j])` for `j < k`, with four independent accumulators
/// (2 FMA ports × 4 cycles latency wants 8; 4 already saturate the loads of
/// one gathered row pair, which is the real bound).
///
/// # Safety
/// `a` and `b` must be readable for `k` floats.
#[inline(always)]
pub(crate) unsafe fn dot<O: BinaryOp, S: Simd>(s: S, a: *const f32, b: *const f32, k: usize) -> f32 {
    let l = S::LANES;
    let zero = s.splat(0.0);
    let mut acc = [zero; 4];
    let mut j = 0;
    // SAFETY: every load below stays below `k` elements of `a` and `b`.
    unsafe {
        while j + 4 * l <= k {
            for (t, acc_t) in acc.iter_mut().enumerate() {
                let off = j + t * l;
                *acc_t = O::accumulate_vec(s, s.load(a.add(off)), s.load(b.add(off)), *acc_t);
            }
            j += 4 * l;
        }
        while j + l <= k {
            acc[0] = O::accumulate_vec(s, s.load(a.add(j)), s.load(b.add(j)), acc[0]);
            j += l;
        }
        // The tail as one masked step: masked-off lanes load 0 in both
        // operands and add 0·0 = +0 (multi-head dots are often K = 8 < 16
        // lanes, which a scalar tail ran at one element per FMA).
        if j < k {
            acc[1] = O::accumulate_vec(s, s.load_partial(a.add(j), k - j), s.load_partial(b.add(j), k - j), acc[1]);
        }
        s.reduce_sum(s.add(s.add(acc[0], acc[1]), s.add(acc[2], acc[3])))
    }
}

/// Splits `0..n` into at most `parts` ranges of about equal weight, where
/// `cum(i)` is the (non-decreasing) weight of the first `i` items.
pub(crate) fn balanced_bounds(n: usize, parts: usize, cum: impl Fn(usize) -> usize) -> Vec<usize> {
    let total = cum(n);
    let parts = parts.max(1);
    let mut bounds = Vec::with_capacity(parts + 1);
    bounds.push(0);
    for p in 1..parts {
        let target = (total as u128 * p as u128 / parts as u128) as usize;
        // First i with cum(i) >= target, searched above the previous bound.
        let (mut lo, mut hi) = (*bounds.last().unwrap_or(&0), n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if cum(mid) < target { lo = mid + 1 } else { hi = mid }
        }
        if lo > *bounds.last().unwrap_or(&0) && lo < n {
            bounds.push(lo);
        }
    }
    bounds.push(n);
    bounds
}

/// How many tasks to cut `work` (edges + rows) into: a few per worker for
/// stealing, fewer when the work is small (one task below ~16K edges).
pub(crate) fn num_parts(work: usize) -> usize {
    (rayon::current_num_threads() * 4).min(work / 16_384 + 1)
}

/// Splits `data` (rows of `row_len`) at the row `bounds` (first 0, last = rows).
pub(crate) fn split_rows<'a, T>(mut data: &'a mut [T], bounds: &[usize], row_len: usize) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(bounds.len().saturating_sub(1));
    for w in bounds.windows(2) {
        let (head, tail) = std::mem::take(&mut data).split_at_mut((w[1] - w[0]) * row_len);
        parts.push(head);
        data = tail;
    }
    parts
}

/// Splits an optional slice like [`split_rows`], or yields `None`s.
pub(crate) fn split_opt<'a, T>(
    data: Option<&'a mut [T]>,
    bounds: &[usize],
    row_len: usize,
) -> Vec<Option<&'a mut [T]>> {
    match data {
        Some(d) => split_rows(d, bounds, row_len).into_iter().map(Some).collect(),
        None => (1..bounds.len()).map(|_| None).collect(),
    }
}

/// A mutable buffer written through disjoint index sets by several workers.
///
/// Public for passes outside this crate that split one output the same way
/// (the max/min backward scatter); every use states, at its `unsafe` call of
/// [`SharedMut::at`], why its workers' element sets are disjoint.
#[derive(Clone, Copy)]
pub struct SharedMut<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: `SharedMut` is only created by passes that hand each worker a
// disjoint set of elements (edge ids of its own CSR rows, `eids` being a
// permutation; the columns of its own stripe), so no element is accessed by
// two threads; `at`'s contract makes each caller state it.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    pub fn new(data: &mut [T]) -> Self {
        Self { ptr: data.as_mut_ptr(), len: data.len() }
    }

    /// The whole capacity of `buf`, initialised or not: scratch whose
    /// users write every element before they read it (and state so at
    /// their `unsafe` accesses).
    pub fn from_capacity(buf: &mut crate::buffer::AlignedVec<T>) -> Self {
        Self { ptr: buf.as_mut_ptr(), len: buf.capacity() }
    }

    /// Pointer to element `i`.
    ///
    /// # Safety
    /// `i <= len`, and the elements accessed through it belong to the caller alone.
    #[inline(always)]
    pub unsafe fn at(&self, i: usize) -> *mut T {
        debug_assert!(i <= self.len);
        // SAFETY: forwarded from the caller (`i` is in bounds).
        unsafe { self.ptr.add(i) }
    }
}

/// Bytes of the widest f32 operand row a walk gathers, from
/// `(gathered, floats per row)` per operand (0 when it gathers none): what
/// [`crate::tuning::Tuning::prefetch_slots`] sizes the prefetch distance by.
pub(crate) fn widest_gathered_row(operands: [(bool, usize); 2]) -> usize {
    operands.iter().filter(|&&(gathered, _)| gathered).map(|&(_, floats)| 4 * floats).max().unwrap_or(0)
}

/// Prefetches the lines of `rows`: floats `first + 16k` of each array, which
/// are all the lines of a row that starts on a line. A row that starts
/// mid-line may leave its last line to the demand miss; computing the exact
/// line count instead (a shift, a subtraction and a variable trip count per
/// row and array) made the 1-head edge softmax, whose rows are 4 bytes, 40 %
/// slower (164-173 -> 232-244 ms, uniform 2^20 / 2^24, 2026-11-26;
/// perf-reports/ablation/2026-11-26_zen5_softmax-table-alignment.tsv). The
/// kernels' own buffers start on lines (`crate::buffer`). Prefetches never fault,
/// whatever the address.
#[inline(always)]
pub(crate) fn prefetch_rows<S: Simd>(s: S, rows: &[*const f32], first: usize, len: usize) {
    for &base in rows {
        let mut off = 0;
        while off < len {
            s.prefetch(base.wrapping_add(first + off));
            off += 16;
        }
    }
}

/// The first `len <= LANES` floats at `ptr` (a masked load below a full
/// vector).
///
/// # Safety
/// `ptr` readable for `len` floats.
#[inline(always)]
pub(crate) unsafe fn load<S: Simd>(s: S, ptr: *const f32, len: usize) -> S::F32 {
    // SAFETY: forwarded from the caller.
    unsafe { if len == S::LANES { s.load(ptr) } else { s.load_partial(ptr, len) } }
}

/// Stores the first `len <= LANES` lanes of `v` at `ptr` (a masked store
/// below a full vector).
///
/// # Safety
/// `ptr` writable for `len` floats.
#[inline(always)]
pub(crate) unsafe fn store<S: Simd>(s: S, ptr: *mut f32, v: S::F32, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { if len == S::LANES { s.store(ptr, v) } else { s.store_partial(ptr, v, len) } }
}

/// [`store`], but a full vector on a vector-aligned address goes out with a
/// non-temporal store when `stream`: the output exceeds the cache, so its
/// line would be read for ownership only to be evicted unread (callers
/// fence before their rows are read: [`Simd::store_fence`]).
///
/// # Safety
/// `ptr` writable for `len` floats.
#[inline(always)]
pub(crate) unsafe fn store_or_stream<S: Simd>(s: S, ptr: *mut f32, v: S::F32, len: usize, stream: bool) {
    // SAFETY: forwarded from the caller; `stream` needs the full vector and
    // the alignment tested here.
    unsafe {
        if stream && len == S::LANES && (ptr as usize).is_multiple_of(4 * S::LANES) {
            s.stream(ptr, v);
        } else {
            store(s, ptr, v, len);
        }
    }
}

/// The kernel tests' random numbers: a xorshift64 generator from `seed`
/// (non-zero) giving values below `n`.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}
