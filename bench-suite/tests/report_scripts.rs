//! The report scripts in `perf-reports/` (`targets.py`, `drift.py`,
//! `agreement.py`) compute the figures `docs/PERFORMANCE.md` quotes from the
//! run files; their unit tests are Python's (`perf-reports/tests/`). This
//! runs them under `cargo test`, so the README's test command covers them.
//! Without a `python3` on the path the test is skipped, unless `CI=true`.

use std::path::Path;
use std::process::Command;

#[test]
fn report_scripts_pass_their_unit_tests() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("bench-suite sits in the workspace");
    let run = Command::new("python3")
        .args(["-W", "error::ResourceWarning", "-m", "unittest", "discover", "-s", "perf-reports/tests"])
        .current_dir(repo)
        .output();
    let out = match run {
        Ok(out) => out,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("python3 is required in CI: {e}"),
        Err(e) => {
            eprintln!("skipped: python3 did not start ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "perf-reports/tests failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
