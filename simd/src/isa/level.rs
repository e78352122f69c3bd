//! Which instruction-set level the kernels use: detected once, overridable.
//!
//! Levels group ISA extensions as the x86-64 micro-architecture levels do:
//! `avx512` = x86-64-v4 (AVX-512 F/BW/DQ/VL), `avx2` = x86-64-v3 (AVX2 +
//! FMA), `portable` = anything. The level in force on a thread is, in order:
//! a scoped override ([`with_level`]), else the process default — the
//! `GNNKERN_ISA` environment variable clamped to what the CPU supports, else
//! the best detected level. Kernels read it once per call on the calling
//! thread, above the row loop, and hand the proven token to their workers.

use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;

/// An instruction-set level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IsaLevel {
    /// No x86 extensions assumed.
    Portable,
    /// x86-64-v3: AVX2 and FMA.
    Avx2,
    /// x86-64-v4: AVX-512 F, BW, DQ and VL.
    Avx512,
}

/// A level the CPU does not support was requested explicitly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsaUnsupported {
    pub requested: IsaLevel,
    pub detected: IsaLevel,
}

impl fmt::Display for IsaUnsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ISA level {} was requested but this CPU supports at most {}",
            self.requested.name(),
            self.detected.name()
        )
    }
}

impl std::error::Error for IsaUnsupported {}

impl IsaLevel {
    /// Every level, lowest first.
    pub const ALL: [IsaLevel; 3] = [IsaLevel::Portable, IsaLevel::Avx2, IsaLevel::Avx512];

    /// Lower-case name (`portable`, `avx2`, `avx512`).
    pub const fn name(self) -> &'static str {
        match self {
            IsaLevel::Portable => "portable",
            IsaLevel::Avx2 => "avx2",
            IsaLevel::Avx512 => "avx512",
        }
    }

    /// Parses a level name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The best level this CPU supports (detected once).
    pub fn detected() -> IsaLevel {
        static DETECTED: OnceLock<IsaLevel> = OnceLock::new();
        *DETECTED.get_or_init(detect)
    }

    /// Whether this CPU can run the level.
    pub fn is_supported(self) -> bool {
        self <= Self::detected()
    }

    /// The levels this CPU runs, lowest first.
    pub fn supported() -> impl Iterator<Item = IsaLevel> {
        Self::ALL.into_iter().filter(|l| l.is_supported())
    }

    /// The levels a unit test runs its kernels on: [`IsaLevel::supported`],
    /// with a note on stderr (once per process) for the levels this CPU lacks (an AVX2-only
    /// Zen 3 runs no AVX-512 code), and a panic if that level is named in
    /// `GNNKERN_REQUIRE_ISA` (comma-separated), as in the integration
    /// tests' `tests/common/backends.rs`: a run that must cover a path does
    /// not pass by skipping it.
    #[cfg(test)]
    pub(crate) fn tested() -> Vec<IsaLevel> {
        let required = std::env::var("GNNKERN_REQUIRE_ISA").unwrap_or_default();
        static NOTED: std::sync::Once = std::sync::Once::new();
        for level in Self::ALL.into_iter().filter(|l| !l.is_supported()) {
            assert!(
                !required.split(',').any(|r| r.trim() == level.name()),
                "GNNKERN_REQUIRE_ISA names {}, which this CPU lacks (it supports at most {})",
                level.name(),
                Self::detected().name()
            );
            NOTED.call_once(|| {
                eprintln!(
                    "note: skipping ISA level {}: this CPU supports at most {}",
                    level.name(),
                    Self::detected().name()
                );
            });
        }
        Self::supported().collect()
    }

    /// The process default: `GNNKERN_ISA` clamped to the CPU, else detected.
    pub fn process_default() -> IsaLevel {
        static DEFAULT: OnceLock<IsaLevel> = OnceLock::new();
        *DEFAULT.get_or_init(|| {
            let detected = Self::detected();
            let level = match std::env::var("GNNKERN_ISA") {
                Ok(name) if !name.is_empty() => match Self::from_name(&name) {
                    Some(requested) if requested > detected => {
                        log::warn!("GNNKERN_ISA={name} is above what this CPU supports; using {}", detected.name());
                        detected
                    }
                    Some(requested) => requested,
                    None => {
                        log::warn!(
                            "GNNKERN_ISA={name} is not a level (portable, avx2, avx512); using {}",
                            detected.name()
                        );
                        detected
                    }
                },
                _ => detected,
            };
            log::debug!("ISA level: {} (detected {})", level.name(), detected.name());
            level
        })
    }
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn detect() -> IsaLevel {
    if is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl")
    {
        IsaLevel::Avx512
    } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        IsaLevel::Avx2
    } else {
        IsaLevel::Portable
    }
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn detect() -> IsaLevel {
    IsaLevel::Portable
}

thread_local! {
    static OVERRIDE: Cell<Option<IsaLevel>> = const { Cell::new(None) };
}

/// The level kernels called from this thread use now.
pub fn active_level() -> IsaLevel {
    OVERRIDE.with(Cell::get).unwrap_or_else(IsaLevel::process_default)
}

/// Runs `f` with kernels called from this thread using `level`.
///
/// Fails (without running `f`) if the CPU lacks `level`: a run that asks for
/// a path must not silently test another one.
pub fn with_level<R>(level: IsaLevel, f: impl FnOnce() -> R) -> Result<R, IsaUnsupported> {
    if !level.is_supported() {
        return Err(IsaUnsupported { requested: level, detected: IsaLevel::detected() });
    }
    struct Restore(Option<IsaLevel>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(level))));
    Ok(f())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_override_applies_and_restores() {
        let before = active_level();
        let inside = with_level(IsaLevel::Portable, active_level).unwrap();
        assert_eq!(inside, IsaLevel::Portable);
        assert_eq!(active_level(), before);
    }

    #[test]
    fn unsupported_levels_are_refused() {
        for level in IsaLevel::ALL {
            assert_eq!(with_level(level, || ()).is_ok(), level.is_supported());
        }
        assert_eq!(IsaLevel::from_name("avx2"), Some(IsaLevel::Avx2));
    }
}
