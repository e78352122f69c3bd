//! The machine and the source revision a result was measured on.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The CPU a result was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu: String,
    /// `vendor_id` from /proc/cpuinfo.
    pub vendor: String,
    /// Logical CPUs this process may use.
    pub cores: usize,
    /// `cpu family` and `model` from /proc/cpuinfo (absent in run files
    /// written before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<u32>,
    /// File-name form: lower-case CPU model words (plus family and model
    /// when the name carries no model number) and the core count.
    pub slug: String,
    /// The kernel's transparent-huge-page mode and whether gnnkern (and so
    /// the peers, see `peers.rs`) advised large buffers: `madvise, advised`
    /// (absent in run files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_pages: Option<String>,
}

impl Machine {
    /// Reads /proc/cpuinfo (falls back to `unknown` off Linux).
    pub fn detect() -> Self {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |key: &str| {
            info.lines()
                .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_else(|| "unknown".to_string())
        };
        let cpu = field("model name");
        let vendor = field("vendor_id");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let family = field("cpu family").parse().ok();
        let model = field("model").parse().ok();
        let slug = slug(&cpu, family.zip(model), cores);
        let huge_pages = Some(huge_page_policy());
        Self { cpu, vendor, cores, family, model, slug, huge_pages }
    }
}

/// `MODE, advised|not advised`: MODE is the kernel's THP mode (`unknown`
/// off Linux).
fn huge_page_policy() -> String {
    let mode = gnnkern::huge_pages::system_mode().unwrap_or_else(|| "unknown".into());
    let advised = if gnnkern::huge_pages::enabled() { "advised" } else { "not advised (GNNKERN_HUGE_PAGES=0)" };
    format!("{mode}, {advised}")
}

/// `Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz`, 2 -> `intel-xeon-platinum-8481c-2c`.
///
/// Hypervisors often mask the model name (`AMD EPYC` for Zen 4 and Zen 5
/// alike, whose bandwidths differ by 1.6x): a name without any digit gets
/// `fFAMILY-mMODEL` appended, so two such machines do not share a slug
/// (and a cached triad).
pub fn slug(cpu: &str, family_model: Option<(u32, u32)>, cores: usize) -> String {
    let cleaned = cpu.replace("(R)", "").replace("(TM)", "").replace("(tm)", "");
    let cleaned = cleaned.split('@').next().unwrap_or("");
    let words: Vec<String> = cleaned
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("cpu") && !w.eq_ignore_ascii_case("processor"))
        .map(str::to_ascii_lowercase)
        .collect();
    let mut base = if words.is_empty() { "unknown".to_string() } else { words.join("-") };
    if let Some((family, model)) = family_model.filter(|_| !cpu.chars().any(|c| c.is_ascii_digit())) {
        base = format!("{base}-f{family}-m{model}");
    }
    format!("{base}-{cores}c")
}

/// The repository root: `GNNKERN_REPO`, else the git top level of the
/// working directory, else the workspace this binary was built from.
pub fn repo_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("GNNKERN_REPO").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(top) = git(&["rev-parse", "--show-toplevel"], None) {
        let top = PathBuf::from(top);
        if top.join("bench-suite").is_dir() {
            return top;
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn git(args: &[&str], dir: Option<&Path>) -> Option<String> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git rev-parse --short HEAD` of `repo`, with `-dirty` when tracked files
/// differ from HEAD; `unknown` outside a git checkout.
pub fn git_rev(repo: &Path) -> String {
    let Some(rev) = git(&["rev-parse", "--short", "HEAD"], Some(repo)) else {
        return "unknown".to_string();
    };
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"], Some(repo)).is_some_and(|s| !s.is_empty());
    if dirty { format!("{rev}-dirty") } else { rev }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `YYYY-MM-DD` and `YYYY-MM-DDTHH:MM:SSZ` (UTC) of a Unix time.
pub fn utc_date_time(secs: u64) -> (String, String) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let date = format!("{y:04}-{m:02}-{d:02}");
    let time = format!("{date}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60);
    (date, time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_dates() {
        assert_eq!(
            slug("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", Some((6, 143)), 2),
            "intel-xeon-platinum-8481c-2c"
        );
        assert_eq!(slug("AMD EPYC 7763 64-Core Processor", Some((25, 1)), 128), "amd-epyc-7763-64-core-128c");
        assert_eq!(slug("AMD EPYC", Some((25, 17)), 2), "amd-epyc-f25-m17-2c");
        assert_eq!(slug("AMD EPYC", None, 2), "amd-epyc-2c");
        assert_eq!(slug("", None, 4), "unknown-4c");
        assert_eq!(utc_date_time(0).1, "1970-01-01T00:00:00Z");
        assert_eq!(utc_date_time(1_795_000_000).0, "2026-11-18");
        assert_eq!(utc_date_time(951_782_400).0, "2000-02-29");
    }
}
