//! Links Intel MKL (LP64 interface, sequential layer, static archives) when
//! the `mkl` feature is on; does nothing otherwise.
//!
//! MKL is found through `MKLROOT` (a oneAPI install, or a Python venv with
//! the `mkl-static` wheel: both have `lib/libmkl_core.a`), else through
//! pkg-config (`mkl-static-lp64-seq`). The archives are linked with the
//! `-bundle` modifier: rustc does not copy them into `libgnnkern.a` (or the
//! rlib) but lists them for the final link (`--print native-static-libs`),
//! so a C consumer links MKL itself (see docs/C_ABI.md).

use std::path::{Path, PathBuf};

const ARCHIVES: [&str; 3] = ["mkl_intel_lp64", "mkl_sequential", "mkl_core"];

fn has_archives(dir: &Path) -> bool {
    ARCHIVES.iter().all(|a| dir.join(format!("lib{a}.a")).is_file())
}

fn from_mklroot() -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var_os("MKLROOT")?);
    [root.join("lib"), root.join("lib").join("intel64")].into_iter().find(|d| has_archives(d))
}

fn from_pkg_config() -> Option<PathBuf> {
    let out =
        std::process::Command::new("pkg-config").args(["--variable=libdir", "mkl-static-lp64-seq"]).output().ok()?;
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && has_archives(&dir)).then_some(dir)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MKLROOT");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if std::env::var_os("CARGO_FEATURE_MKL").is_none() {
        return;
    }
    let Some(dir) = from_mklroot().or_else(from_pkg_config) else {
        panic!(
            "the `mkl` feature needs Intel MKL's static archives (lib{{mkl_intel_lp64,mkl_sequential,mkl_core}}.a), \
             found neither through MKLROOT (={:?}) nor pkg-config (mkl-static-lp64-seq). Install them offline with \
             `python3 -m venv /work/venvs/mkl && /work/venvs/mkl/bin/pip install mkl-static mkl-include` and build \
             with MKLROOT=/work/venvs/mkl",
            std::env::var_os("MKLROOT")
        );
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    // The three archives reference each other (core <-> sequential). The
    // linker scans archives once, left to right, so each is named a second
    // time by its file name (`+verbatim`: rustc refuses the same name twice)
    // to close the cycle without --start-group, which rustc cannot pass on
    // to a C consumer's link line.
    for a in ARCHIVES {
        println!("cargo:rustc-link-lib=static:-bundle={a}");
    }
    for a in ARCHIVES {
        println!("cargo:rustc-link-lib=static:-bundle,+verbatim=lib{a}.a");
    }
    for lib in ["pthread", "m", "dl"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}
