//! Peak resident set size from /proc/self/status.

/// `VmHWM` (peak RSS) in MiB; `None` off Linux.
pub fn peak_rss_mb() -> Option<f64> {
    status_mb("VmHWM:")
}

/// `VmRSS` (current RSS) in MiB; `None` off Linux.
#[cfg(test)]
fn rss_mb() -> Option<f64> {
    status_mb("VmRSS:")
}

fn status_mb(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Resets the peak-RSS mark to the current RSS (`echo 5 > /proc/self/clear_refs`),
/// so a suite running many cases in one process reports each case's peak.
/// Returns whether the kernel accepted it.
///
/// The allocator's free pages are returned to the kernel first
/// (`release_free_heap`): otherwise memory that earlier cases freed but
/// glibc kept counts in this case's peak: up to 69 MiB per case of the
/// 2^20-edge graphs (`perf-reports/ablation/2026-11-27_xeon_peak-rss-trim.tsv`).
pub fn reset_peak() -> bool {
    release_free_heap();
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns the free pages of every malloc arena to the kernel (glibc's
/// `malloc_trim(0)`). glibc keeps freed blocks below its mmap threshold, which
/// it raises to the size of each large block freed (up to 32 MiB), so a
/// process that has freed big buffers keeps much of that memory resident.
/// A no-op with other allocators.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and may be called at any time;
    // it only releases pages of free chunks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    /// The tests below read the process's RSS: run them one at a time.
    static RSS_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn peak_rss_is_read_on_linux() {
        let _serial = RSS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        if cfg!(target_os = "linux") {
            let reset = super::reset_peak();
            let before = super::peak_rss_mb().unwrap();
            assert!(before > 0.0);
            let big = vec![1u8; 256 << 20];
            std::hint::black_box(&big);
            let after = super::peak_rss_mb().unwrap();
            // After a reset the mark starts from the current RSS, so it must grow by most of the 256 MiB touched (other tests of this binary allocate far less).
            let expected = if reset { before + 200.0 } else { before };
            assert!(after >= expected, "peak {after} MiB, expected at least {expected} MiB");
        }
    }

    #[test]
    fn freed_heap_is_returned_before_a_reset() {
        let _serial = RSS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            // 2,048 touched blocks of 64 KiB (below glibc's mmap threshold: heap
            // memory), then a small block kept alive after them, so that freeing
            // them cannot shrink the heap from its top.
            let blocks: Vec<Vec<u8>> = (0..2048).map(|_| std::hint::black_box(vec![1u8; 64 << 10])).collect();
            let pin = std::hint::black_box(vec![1u8; 64]);
            let held = super::rss_mb().unwrap();
            drop(blocks);
            super::reset_peak();
            let released = super::rss_mb().unwrap();
            assert!(
                released <= held - 64.0,
                "RSS {held:.0} MiB with 128 MiB of blocks held, {released:.0} MiB after freeing them and a reset"
            );
            // The reset took the mark down with the RSS.
            assert!(super::peak_rss_mb().unwrap() <= held - 64.0);
            drop(pin);
        }
    }
}
