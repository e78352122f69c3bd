//! Every backend (and every ISA level of the SIMD backend) a test should run.
//!
//! [`candidates`] iterates `BackendKind::ALL`, so a backend added to the enum
//! is covered without touching the tests. An unavailable backend is skipped
//! with a printed note, unless it is listed in `GNNKERN_REQUIRE_BACKENDS`
//! (comma-separated names): then the test fails. For the backend named
//! `simd`, each case runs once per `IsaLevel::ALL` under `with_level`; a level
//! the CPU lacks is skipped with a note unless listed in `GNNKERN_REQUIRE_ISA`.

use gnnkern::{BackendKind, Error, Exec};
use gnnkern_simd::isa::{IsaLevel, with_level};
use std::sync::OnceLock;

/// One way to run the ops: a forced backend, and for `simd` an ISA level.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub kind: BackendKind,
    pub isa: Option<IsaLevel>,
}

impl Candidate {
    pub fn exec(&self) -> Exec {
        Exec::forced(self.kind)
    }

    pub fn label(&self) -> String {
        match self.isa {
            Some(level) => format!("{}/{}", self.kind.name(), level.name()),
            None => self.kind.name().to_string(),
        }
    }

    /// Runs `f` with this candidate's ISA level in force on this thread.
    pub fn run<R>(&self, f: impl FnOnce(Exec) -> R) -> R {
        let exec = self.exec();
        match self.isa {
            Some(level) => with_level(level, || f(exec)).unwrap_or_else(|e| panic!("{}: {e}", self.label())),
            None => f(exec),
        }
    }
}

fn env_list(name: &str) -> Vec<String> {
    std::env::var(name)
        .map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default()
}

/// The oracle every candidate is compared with.
pub fn reference() -> Exec {
    Exec::forced(BackendKind::Reference)
}

/// Every runnable backend other than the reference (the oracle the others
/// are compared with). Panics if a required backend or ISA level is
/// unavailable, or if a required name is not a backend this build knows.
pub fn candidates() -> &'static [Candidate] {
    static CANDIDATES: OnceLock<Vec<Candidate>> = OnceLock::new();
    CANDIDATES.get_or_init(|| {
        let required = env_list("GNNKERN_REQUIRE_BACKENDS");
        let required_isa = env_list("GNNKERN_REQUIRE_ISA");
        for name in &required {
            assert!(
                BackendKind::ALL.iter().any(|k| k.name() == name),
                "GNNKERN_REQUIRE_BACKENDS names {name:?}, which is not a backend of this build"
            );
        }
        for name in &required_isa {
            assert!(
                IsaLevel::from_name(name).is_some(),
                "GNNKERN_REQUIRE_ISA names {name:?}, which is not an ISA level"
            );
        }
        let mut out = Vec::new();
        for &kind in BackendKind::ALL.iter().filter(|&&k| k != BackendKind::Reference) {
            match kind.availability() {
                Err(e) => {
                    assert!(
                        !required.iter().any(|r| r == kind.name()),
                        "required backend {} is unavailable: {e}",
                        kind.name()
                    );
                    eprintln!("note: skipping backend {}: {e}", kind.name());
                }
                Ok(()) if kind.name() == "simd" => {
                    for level in IsaLevel::ALL {
                        if level.is_supported() {
                            out.push(Candidate { kind, isa: Some(level) });
                        } else {
                            assert!(
                                !required_isa.iter().any(|r| r == level.name()),
                                "required ISA level {} is not supported by this CPU (detected {})",
                                level.name(),
                                IsaLevel::detected().name()
                            );
                            eprintln!(
                                "note: skipping simd/{}: this CPU supports at most {}",
                                level.name(),
                                IsaLevel::detected().name()
                            );
                        }
                    }
                }
                Ok(()) => out.push(Candidate { kind, isa: None }),
            }
        }
        if out.is_empty() {
            eprintln!(
                "note: no backend besides the reference is available: backend comparisons check the reference only"
            );
        }
        out
    })
}

/// Whether a candidate's result is an "unsupported call" it may decline
/// (the dispatch contract lets a backend refuse ops it has no form for).
/// The reference must run everything.
pub fn declined<T>(c: &Candidate, r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::Unsupported { .. }) if c.kind != BackendKind::Reference)
}
