//! Fuzzes the C ABI graph constructors with hostile counts and ids.
//!
//! Arrays always hold at least the number of entries the counts promise
//! (the C contract); everything else — counts (negative, huge, mismatched),
//! ids, offsets, edge-id permutations — is the fuzzer's. Invariants: no
//! panic status, the handle slot is written exactly on success, a created
//! graph answers queries consistently and is destroyed exactly once.
#![no_main]

use arbitrary::Arbitrary;
use gnnkern::capi::graph::*;
use gnnkern::capi::status::gk_status;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Format {
    Coo,
    Csr,
    Csc,
}

#[derive(Arbitrary, Debug)]
struct Input {
    wide: bool,
    format: Format,
    num_src: i64,
    num_dst: i64,
    /// Small counts most of the time; the raw value otherwise.
    small_counts: bool,
    num_edges: i64,
    a: Vec<i64>,
    b: Vec<i64>,
    c: Vec<i64>,
    eids: bool,
    /// Pass a NULL handle slot (must fail, never write or crash).
    null_out: bool,
}

fn clamp_count(raw: i64, small: bool) -> i64 {
    if small { raw.rem_euclid(40) - 2 } else { raw }
}

/// A buffer of at least `len` entries when `len` is plausible (else empty:
/// the constructor must reject the count before reading).
fn buffer(values: &[i64], len: i64, extra: usize) -> Vec<i64> {
    // Up to 2^16 + 1: an offsets array for the largest plausible row count.
    let want = if (0..=(1 << 16) + 1).contains(&len) { len as usize + extra } else { 0 };
    (0..want).map(|i| values.get(i).copied().unwrap_or(i as i64)).collect()
}

fuzz_target!(|input: Input| {
    let num_src = clamp_count(input.num_src, input.small_counts);
    let num_dst = clamp_count(input.num_dst, input.small_counts);
    let num_edges = clamp_count(input.num_edges, input.small_counts);
    let rows = match input.format {
        Format::Csr => num_src,
        _ => num_dst,
    };
    // Only in-contract calls: arrays as long as the counts promise, else the
    // counts must be rejected before any read (checked by leaving them short).
    let plausible = |n: i64| (0..=1 << 16).contains(&n);
    if !(plausible(num_edges) && (matches!(input.format, Format::Coo) || plausible(rows))) {
        // Hostile counts: pass NULL arrays; the constructor must fail cleanly.
        let mut h = gk_graph { id: 77 };
        // SAFETY: NULL arrays are allowed; `h` is writable.
        let s = unsafe {
            match input.format {
                Format::Coo => {
                    gk_graph_from_coo_i64(num_src, num_dst, num_edges, std::ptr::null(), std::ptr::null(), &mut h)
                }
                Format::Csr => gk_graph_from_csr_i64(
                    num_src,
                    num_dst,
                    num_edges,
                    std::ptr::null(),
                    std::ptr::null(),
                    std::ptr::null(),
                    &mut h,
                ),
                Format::Csc => gk_graph_from_csc_i64(
                    num_src,
                    num_dst,
                    num_edges,
                    std::ptr::null(),
                    std::ptr::null(),
                    std::ptr::null(),
                    &mut h,
                ),
            }
        };
        assert_ne!(s, gk_status::GK_OK, "hostile counts accepted");
        assert_ne!(s, gk_status::GK_ERROR_PANIC);
        assert_eq!(h.id, 77, "failed constructor wrote the handle");
        return;
    }
    // COO's first array holds `num_edges` ids; CSR/CSC's holds `rows + 1` offsets
    // (and is read up to `num_edges` only through the offsets).
    let a_len = if matches!(input.format, Format::Coo) { num_edges } else { num_edges.max(rows + 1) };
    let a = buffer(&input.a, a_len, 0);
    let b = buffer(&input.b, num_edges, 0);
    let c = buffer(&input.c, num_edges, 0);
    let mut slot = gk_graph { id: 77 };
    let live_before = gk_graph_live_count();
    let h: *mut gk_graph = if input.null_out { std::ptr::null_mut() } else { &mut slot };
    let status = if input.wide {
        let eids = if input.eids { c.as_ptr() } else { std::ptr::null() };
        // SAFETY: every array holds at least the entries the counts promise.
        unsafe {
            match input.format {
                Format::Coo => gk_graph_from_coo_i64(num_src, num_dst, num_edges, a.as_ptr(), b.as_ptr(), h),
                Format::Csr => gk_graph_from_csr_i64(num_src, num_dst, num_edges, a.as_ptr(), b.as_ptr(), eids, h),
                Format::Csc => gk_graph_from_csc_i64(num_src, num_dst, num_edges, a.as_ptr(), b.as_ptr(), eids, h),
            }
        }
    } else {
        let narrow = |v: &[i64]| v.iter().map(|&x| x as i32).collect::<Vec<i32>>();
        let (a, b, c) = (narrow(&a), narrow(&b), narrow(&c));
        let eids = if input.eids { c.as_ptr() } else { std::ptr::null() };
        // SAFETY: as above.
        unsafe {
            match input.format {
                Format::Coo => gk_graph_from_coo_i32(num_src, num_dst, num_edges, a.as_ptr(), b.as_ptr(), h),
                Format::Csr => gk_graph_from_csr_i32(num_src, num_dst, num_edges, a.as_ptr(), b.as_ptr(), eids, h),
                Format::Csc => gk_graph_from_csc_i32(num_src, num_dst, num_edges, a.as_ptr(), b.as_ptr(), eids, h),
            }
        }
    };
    assert_ne!(status, gk_status::GK_ERROR_PANIC);
    if input.null_out {
        assert_eq!(status, gk_status::GK_ERROR_NULL_POINTER, "a NULL handle slot was accepted");
    }
    if status != gk_status::GK_OK {
        assert_eq!(slot.id, 77, "failed constructor wrote the handle");
        assert_eq!(gk_graph_live_count(), live_before, "failed constructor registered a graph");
        return;
    }
    let h = slot;
    let mut info = std::mem::MaybeUninit::<gk_graph_info>::uninit();
    // SAFETY: `info` is writable.
    assert_eq!(unsafe { gk_graph_get_info(h, info.as_mut_ptr()) }, gk_status::GK_OK);
    // SAFETY: written on success.
    let info = unsafe { info.assume_init() };
    assert_eq!((info.num_src, info.num_dst, info.num_edges), (num_src, num_dst, num_edges));
    // SAFETY: NULL output slots are allowed (and must be rejected).
    unsafe {
        assert_eq!(gk_graph_get_info(h, std::ptr::null_mut()), gk_status::GK_ERROR_NULL_POINTER);
        assert_eq!(gk_graph_reverse(h, std::ptr::null_mut()), gk_status::GK_ERROR_NULL_POINTER);
    }
    let mut r = gk_graph { id: 0 };
    // SAFETY: `r` is writable.
    assert_eq!(unsafe { gk_graph_reverse(h, &mut r) }, gk_status::GK_OK);
    assert_eq!(gk_graph_destroy(h), gk_status::GK_OK);
    assert_eq!(gk_graph_destroy(h), gk_status::GK_ERROR_INVALID_HANDLE);
    let mut info = std::mem::MaybeUninit::<gk_graph_info>::uninit();
    // SAFETY: `info` is writable; the reverse handle outlives its source.
    let s = unsafe { gk_graph_get_info(r, info.as_mut_ptr()) };
    assert_eq!(s, gk_status::GK_OK);
    // SAFETY: written on success.
    let rinfo = unsafe { info.assume_init() };
    assert_eq!((rinfo.num_src, rinfo.num_dst, rinfo.num_edges), (num_dst, num_src, num_edges));
    assert_eq!(gk_graph_destroy(r), gk_status::GK_OK);
    assert_eq!(gk_graph_live_count(), live_before, "handles leaked");
});
