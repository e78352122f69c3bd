//! Chunking: how arrays larger than one storage binding are processed.
//!
//! A storage binding may cover at most `max_storage_buffer_binding_size`
//! bytes (128 MiB on lavapipe, 2 GiB+ on discrete GPUs) and must start at a
//! multiple of `min_storage_buffer_offset_alignment`. Buffers may be larger;
//! the launchers bind *windows* of them. With `cap = max_binding − align`
//! bytes usable per window (the aligned-down start costs at most `align`):
//!
//! - arrays indexed by the work item — destination rows for g-SpMM (output,
//!   arg pairs, `v`-operands, row offsets), its segments (segment table,
//!   partial results) and in-CSR slots; edges for g-SDDMM (output, COO,
//!   `e`-operands) — are cut into **blocks** of consecutive work items
//!   whose spans all fit one window ([`spmm_blocks`], [`item_windows`]);
//! - gathered operands (`u` rows, and `e` rows of a g-SpMM, whose edge ids
//!   are scattered within a row) are cut into fixed **operand windows**
//!   ([`item_windows`]); each block runs once per combination of lhs and rhs
//!   window, and a thread skips edges whose operand rows lie outside the
//!   bound windows. g-SpMM merges the per-window partials with the same
//!   order-independent rule as split rows (sum: add; max/min: the (value,
//!   slot) total order), so results do not depend on the windowing.
//!
//! In the common case everything fits and there is one block and one
//! window per operand: one dispatch per pass.

use crate::error::{GpuError, Result};
use std::ops::Range;

/// Splits `0..items` into windows of whole items of `item_words` 4-byte
/// words each, every window at most `cap_bytes`. One window when the items
/// have no words (an absent operand).
pub fn item_windows(what: &str, items: usize, item_words: usize, cap_bytes: u64) -> Result<Vec<Range<usize>>> {
    if item_words == 0 || items == 0 {
        return Ok(std::iter::once(0..items).collect());
    }
    let per = (cap_bytes / 4 / item_words as u64) as usize;
    if per == 0 {
        return Err(GpuError::Unsupported(format!(
            "one {what} row of {item_words} f32 exceeds the {cap_bytes}-byte usable storage binding window"
        )));
    }
    Ok((0..items).step_by(per).map(|s| s..(s + per).min(items)).collect())
}

/// Words per destination row, per segment and per in-CSR slot of the
/// arrays a g-SpMM binds for one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockCosts {
    pub row_words: usize,
    pub seg_words: usize,
    pub slot_words: usize,
}

/// A g-SpMM block: consecutive destination rows with their segments and slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowBlock {
    pub rows: Range<usize>,
    pub segs: Range<usize>,
    pub slots: Range<usize>,
}

/// Cuts destination rows into blocks whose row, segment and slot arrays
/// each fit in `cap_bytes`. A single row that does not fit (a hub whose
/// in-edge list alone exceeds a binding) is reported as unsupported.
pub fn spmm_blocks(row_ptr: &[u32], row_seg: &[u32], costs: BlockCosts, cap_bytes: u64) -> Result<Vec<RowBlock>> {
    let n = row_ptr.len().saturating_sub(1);
    let cap = (cap_bytes / 4) as usize;
    let block = |r0: usize, r1: usize| RowBlock {
        rows: r0..r1,
        segs: row_seg[r0] as usize..row_seg[r1] as usize,
        slots: row_ptr[r0] as usize..row_ptr[r1] as usize,
    };
    // Row-indexed offset arrays bind r1 - r0 + 1 entries.
    let fits = |b: &RowBlock| {
        (b.rows.len() + 1) * costs.row_words.max(1) <= cap
            && b.segs.len() * costs.seg_words <= cap
            && b.slots.len() * costs.slot_words <= cap
    };
    let mut blocks = Vec::new();
    let mut r0 = 0;
    while r0 < n {
        if !fits(&block(r0, r0 + 1)) {
            return Err(GpuError::Unsupported(format!(
                "destination row {r0} with {} in-edges needs more than one {cap_bytes}-byte storage binding",
                row_ptr[r0 + 1] - row_ptr[r0]
            )));
        }
        // Grow geometrically, then bisect: O(log n) probes per block.
        let (mut good, mut step) = (r0 + 1, 1);
        while good + step <= n && fits(&block(r0, good + step)) {
            good += step;
            step *= 2;
        }
        let mut bad = (good + step).min(n + 1);
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if fits(&block(r0, mid)) { good = mid } else { bad = mid }
        }
        blocks.push(block(r0, good));
        r0 = good;
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_tile_the_items() {
        let w = item_windows("x", 10, 3, 4 * 3 * 4).unwrap();
        assert_eq!(w, vec![0..4, 4..8, 8..10]);
        assert_eq!(item_windows("x", 10, 0, 16).unwrap(), std::iter::once(0..10).collect::<Vec<_>>());
        assert!(item_windows("x", 10, 5, 16).is_err());
    }

    #[test]
    fn blocks_tile_rows_and_respect_the_cap() {
        // Degrees 0, 3, 0, 700, 5, 1 with 256-edge segments.
        let degrees = [0u32, 3, 0, 700, 5, 1];
        let mut row_ptr = vec![0u32];
        let mut row_seg = vec![0u32];
        for d in degrees {
            row_ptr.push(row_ptr.last().unwrap() + d);
            row_seg.push(row_seg.last().unwrap() + d.div_ceil(256));
        }
        let costs = BlockCosts { row_words: 8, seg_words: 16, slot_words: 2 };
        for cap in [6144u64, 8192, 1 << 20] {
            let blocks = spmm_blocks(&row_ptr, &row_seg, costs, cap).unwrap();
            assert_eq!(blocks.first().unwrap().rows.start, 0);
            assert_eq!(blocks.last().unwrap().rows.end, degrees.len());
            for w in blocks.windows(2) {
                assert_eq!(w[0].rows.end, w[1].rows.start);
                assert_eq!(w[0].slots.end, w[1].slots.start);
            }
            for b in &blocks {
                assert!(b.slots.len() * 2 * 4 <= cap as usize && (b.rows.len() + 1) * 8 * 4 <= cap as usize);
            }
        }
        assert_eq!(spmm_blocks(&row_ptr, &row_seg, costs, 1 << 20).unwrap().len(), 1);
        assert!(spmm_blocks(&row_ptr, &row_seg, costs, 1024).is_err(), "the hub's 700 slots need 5600 bytes");
    }
}
