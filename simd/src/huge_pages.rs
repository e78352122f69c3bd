//! Transparent huge pages for large buffers.
//!
//! The pull kernels gather feature rows at random. With 4 KiB pages a
//! 512 MiB feature matrix (2^20 nodes × 128 f32) spans 131,072 pages, far
//! beyond the 3,072 entries of Zen 4's L2 TLB (12 MiB of reach), so nearly
//! every gathered row also walks the page table; with 2 MiB pages the same
//! matrix needs 256 entries. Linux's default THP mode is `madvise`: only
//! ranges advised with `MADV_HUGEPAGE` get huge pages. So the large buffers
//! this project allocates ([`crate::buffer`]: gnnkern's `Tensor` storage,
//! the edge softmax's node table) are advised before their first touch,
//! while the page faults can still hand out huge pages.
//!
//! Measured on the Zen 4 VM in docs/PERFORMANCE.md ("Huge pages"). Buffers
//! that callers allocate themselves (DLPack tensors over the C ABI) keep
//! whatever pages their allocator chose; callers may pass them to
//! [`advise`] themselves. `GNNKERN_HUGE_PAGES=0` turns the advice off (read
//! once per process; for A/B measurements). The advice is a hint: where THP
//! is disabled or unsupported it has no effect and reports no error.

use std::sync::OnceLock;

/// Smallest buffer advised: two huge pages, so that at least one aligned
/// 2 MiB page lies inside it.
pub const MIN_BYTES: usize = 4 << 20;

/// The kernel's THP mode, the bracketed word of
/// `/sys/kernel/mm/transparent_hugepage/enabled` (`always`, `madvise` or
/// `never`); `None` where that file is missing (off Linux, THP compiled out).
pub fn system_mode() -> Option<String> {
    let modes = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let (_, rest) = modes.split_once('[')?;
    Some(rest.split_once(']')?.0.to_string())
}

/// Whether large buffers are advised (`GNNKERN_HUGE_PAGES` is not `0`).
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("GNNKERN_HUGE_PAGES").map_or(true, |v| v.trim() != "0"))
}

/// Asks for huge pages on the whole 4 KiB pages of `[ptr, ptr + bytes)`
/// when `bytes >= MIN_BYTES` and [`enabled`]. Pages already touched keep
/// their size; call it between allocation and first write. The range should
/// lie inside one allocation of the caller's; the advice never changes
/// contents or validity, so any range is memory-safe (and under Miri, which
/// has no `madvise`, it is skipped).
pub fn advise(ptr: *const u8, bytes: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        const PAGE: usize = 4096;
        if bytes < MIN_BYTES || !enabled() {
            return;
        }
        let start = (ptr as usize).next_multiple_of(PAGE);
        let end = (ptr as usize).saturating_add(bytes) & !(PAGE - 1);
        if end > start {
            // SAFETY: madvise with MADV_HUGEPAGE reads and writes no memory
            // of ours and only changes how future faults in the page-aligned
            // range are served. The result is ignored on purpose (EINVAL
            // where THP is compiled out, ENOMEM for unmapped pages).
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(any(not(target_os = "linux"), miri))]
    let _ = (ptr, bytes);
}

/// Whether the mapping holding `addr` is advised for huge pages (its
/// `VmFlags` in `/proc/self/smaps` include `hg`); `None` where that file is
/// unreadable or no mapping holds `addr`. A diagnostic, for tests and users.
pub fn is_advised(addr: *const u8) -> Option<bool> {
    let addr = addr as usize;
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
        let bounds =
            range.and_then(|(a, b)| Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?)));
        if let Some((lo, hi)) = bounds {
            inside = lo <= addr && addr < hi;
        } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
            return Some(flags.split_whitespace().any(|f| f == "hg"));
        }
    }
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn system_mode_is_the_bracketed_word() {
        if let Some(mode) = system_mode() {
            assert!(["always", "madvise", "never"].contains(&mode.as_str()), "{mode}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no madvise")]
    fn large_untouched_buffers_are_advised_and_small_ones_are_not() {
        let mode = system_mode();
        if !matches!(mode.as_deref(), Some("madvise" | "always")) || !enabled() {
            eprintln!("SKIPPED: THP mode {mode:?} ignores the advice, or GNNKERN_HUGE_PAGES=0");
            return;
        }
        let big = crate::buffer::aligned_filled((16 << 20) / 4, 1.0f32);
        assert_eq!(is_advised(big.as_ptr().wrapping_add(big.len() / 2).cast()), Some(true));
        let small = vec![0f32; (MIN_BYTES / 4) - 1024];
        advise(small.as_ptr().cast(), small.len() * 4);
        assert_eq!(is_advised(small.as_ptr().wrapping_add(small.len() / 2).cast()), Some(false));
    }
}
