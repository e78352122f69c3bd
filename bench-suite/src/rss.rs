//! Peak resident set size from /proc/self/status.

/// `VmHWM` (peak RSS) in MiB; `None` off Linux.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Resets the peak-RSS mark to the current RSS (`echo 5 > /proc/self/clear_refs`),
/// so a suite running many cases in one process reports each case's peak.
/// Returns whether the kernel accepted it.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn peak_rss_is_read_on_linux() {
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
}
