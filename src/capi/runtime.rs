//! The library's thread pool, backend and ISA selection, and the per-thread
//! report of which backend and ISA the last op used.
//!
//! Every op runs inside `pool.install` on a rayon pool that gnnkern owns
//! (never the global pool, so a host framework's own rayon use is not
//! disturbed). The report is captured inside the pool and stored on the
//! calling thread, so `gk_last_backend()` answers for the caller's own call.

use super::enums::{RawBackend, RawIsa, gk_backend, gk_isa};
use super::status::{CResult, Failure, boundary, gk_status};
use crate::threads::Pinning;
use crate::{BackendChoice, BackendKind, Exec};
use gnnkern_simd::isa::{IsaLevel, active_level, with_level};
use std::cell::Cell;
use std::ffi::c_char;
use std::sync::{Arc, Mutex, PoisonError};

struct Settings {
    /// `None`: not built yet (built from `threads` and `pinning` on first use).
    pool: Option<Arc<rayon::ThreadPool>>,
    /// The requested pool size (0: one thread per CPU).
    threads: usize,
    /// Whether the pool's workers are pinned to cores (`gk_set_thread_pinning`).
    pinning: Pinning,
    /// `None`: `GNNKERN_BACKEND`, else auto.
    backend: Option<BackendChoice>,
    /// `None`: `GNNKERN_ISA`, else the best level of this CPU.
    isa: Option<IsaLevel>,
}

static SETTINGS: Mutex<Settings> =
    Mutex::new(Settings { pool: None, threads: 0, pinning: Pinning::Off, backend: None, isa: None });

fn settings() -> std::sync::MutexGuard<'static, Settings> {
    SETTINGS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn build_pool(threads: usize, pinning: Pinning) -> CResult<Arc<rayon::ThreadPool>> {
    crate::threads::build_pool(threads, pinning, "gnnkern")
        .map(Arc::new)
        .map_err(|e| Failure::new(gk_status::GK_ERROR_INVALID_ARGUMENT, e.to_string()))
}

/// The library's pool, built with the default size on first use.
fn pool(s: &mut Settings) -> CResult<Arc<rayon::ThreadPool>> {
    if s.pool.is_none() {
        s.pool = Some(build_pool(s.threads, s.pinning)?);
    }
    Ok(Arc::clone(s.pool.as_ref().expect("built above")))
}

/// Runs a backend-independent computation (segment reductions) on the
/// library's pool. It uses no backend and no ISA-specific kernel, so it
/// leaves the `gk_last_backend` / `gk_last_isa` report unchanged.
pub(crate) fn run_dense(f: impl FnOnce() -> crate::Result<()> + Send) -> CResult {
    let pool = pool(&mut settings())?;
    pool.install(f).map_err(Failure::from)
}

/// A query entry point: checks `out`, computes the value, writes it.
///
/// # Safety
/// `out` must be NULL or valid for writing one `int32_t`.
unsafe fn query(out: *mut i32, value: impl FnOnce() -> CResult<i32>) -> gk_status {
    boundary(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let v = value()?;
        // SAFETY: non-NULL and writable (caller contract).
        unsafe { out.write(v) };
        Ok(())
    })
}

thread_local! {
    static LAST: Cell<(Option<BackendKind>, Option<IsaLevel>)> = const { Cell::new((None, None)) };
}

/// Runs an op on the library's pool with the selected backend and ISA, and
/// records what ran for `gk_last_backend` / `gk_last_isa`. `op` returns the
/// backend that ran it, or `None` for composite ops (backward passes), whose
/// last primitive's backend is read from [`crate::backend::last_used`] on
/// the pool thread that ran them.
pub(crate) fn run(op: impl FnOnce(Exec) -> crate::Result<Option<BackendKind>> + Send) -> CResult {
    let (pool, backend, isa) = {
        let mut s = settings();
        (pool(&mut s)?, s.backend, s.isa)
    };
    let exec = match backend {
        Some(choice) => Exec::new(choice),
        None => Exec::from_env()?,
    };
    let (kind, level) = pool.install(|| -> CResult<(Option<BackendKind>, IsaLevel)> {
        let run_op = || op(exec).map(|k| k.or_else(crate::backend::last_used));
        match isa {
            Some(level) => with_level(level, || run_op().map(|k| (k, level)))
                .map_err(|e| Failure::new(gk_status::GK_ERROR_INVALID_ARGUMENT, e.to_string()))?
                .map_err(Failure::from),
            None => Ok((run_op()?, active_level())),
        }
    })?;
    LAST.with(|l| l.set((kind, Some(level))));
    Ok(())
}

/// Sets the number of threads gnnkern's own pool uses for every later call
/// (0: one per CPU, the default). Calls already running finish on the old
/// pool. Errors: INVALID_ARGUMENT (negative, or the pool cannot be built).
/// Thread safety: may be called from any thread at any time.
#[unsafe(no_mangle)]
pub extern "C" fn gk_set_num_threads(num_threads: i32) -> gk_status {
    boundary(|| {
        let n = usize::try_from(num_threads).map_err(|_| {
            Failure::new(gk_status::GK_ERROR_INVALID_ARGUMENT, format!("num_threads = {num_threads} is negative"))
        })?;
        let mut s = settings();
        s.pool = Some(build_pool(n, s.pinning)?);
        s.threads = n;
        Ok(())
    })
}

/// Pins each worker of gnnkern's pool to one core (`enabled = 1`) or lets
/// the operating system place them (`0`, the default), for every later
/// call. The pool is rebuilt with its current size: worker i runs on the
/// i-th CPU of the process's CPU set (its affinity mask), round robin when
/// there are more workers than CPUs. Calls already running finish on the
/// old pool. Pinning helps only on a machine the process has to itself; see
/// docs/C_ABI.md, "Thread pinning".
/// Errors: INVALID_ARGUMENT (`enabled` not 0 or 1; the operating system
/// reports no CPU set or refuses to pin a worker — the setting and the
/// pool are then unchanged).
/// Thread safety: may be called from any thread at any time.
#[unsafe(no_mangle)]
pub extern "C" fn gk_set_thread_pinning(enabled: i32) -> gk_status {
    boundary(|| {
        let pinning = match enabled {
            0 => Pinning::Off,
            1 => Pinning::PerCore,
            v => {
                return Err(Failure::new(
                    gk_status::GK_ERROR_INVALID_ARGUMENT,
                    format!("enabled = {v} is not 0 (off) or 1 (pin each worker to one core)"),
                ));
            }
        };
        let mut s = settings();
        s.pool = Some(build_pool(s.threads, pinning)?);
        s.pinning = pinning;
        Ok(())
    })
}

/// Whether gnnkern's pool is pinned: writes 1 or 0 to `*out`.
///
/// # Safety
/// `out` must be NULL or valid for writing one `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_get_thread_pinning(out: *mut i32) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { query(out, || Ok(i32::from(settings().pinning == Pinning::PerCore))) }
}

/// The number of threads of gnnkern's pool (builds it if needed).
///
/// # Safety
/// `out` must be NULL or valid for writing one `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_get_num_threads(out: *mut i32) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { query(out, || Ok(i32::try_from(pool(&mut settings())?.current_num_threads()).unwrap_or(i32::MAX))) }
}

/// Selects the backend of every later call, process-wide:
/// `GK_BACKEND_AUTO` (the default unless `GNNKERN_BACKEND` says otherwise)
/// or one backend, forced: a forced backend that cannot run a call makes
/// it fail with UNSUPPORTED instead of falling back (use it to compare
/// backends). Errors: INVALID_ENUM, BACKEND_UNAVAILABLE (not built in or
/// cannot run here; the selection is unchanged).
#[unsafe(no_mangle)]
pub extern "C" fn gk_set_backend(backend: RawBackend) -> gk_status {
    boundary(|| {
        let choice = match backend.kind()? {
            None => BackendChoice::Auto,
            Some(kind) => {
                kind.availability()?;
                BackendChoice::Forced(kind)
            }
        };
        settings().backend = Some(choice);
        Ok(())
    })
}

/// Selects the CPU instruction-set level of the kernels for every later
/// call, process-wide; `GK_ISA_DEFAULT` returns to `GNNKERN_ISA` / the best
/// the CPU supports. Errors: INVALID_ENUM, INVALID_ARGUMENT (this CPU lacks
/// the level: a run that asks for a path must not silently test another).
#[unsafe(no_mangle)]
pub extern "C" fn gk_set_isa(isa: RawIsa) -> gk_status {
    boundary(|| {
        let level = isa.level()?;
        if let Some(l) = level.filter(|l| !l.is_supported()) {
            return Err(Failure::new(
                gk_status::GK_ERROR_INVALID_ARGUMENT,
                format!("ISA level {} is not supported by this CPU (best: {})", l.name(), IsaLevel::detected().name()),
            ));
        }
        settings().isa = level;
        Ok(())
    })
}

/// The backend that ran the last successful op on the calling thread;
/// `GK_BACKEND_NONE` if none has.
#[unsafe(no_mangle)]
pub extern "C" fn gk_last_backend() -> gk_backend {
    gk_backend::from_kind(LAST.with(Cell::get).0)
}

/// The ISA level in force for the last successful op on the calling thread
/// (what the SIMD kernels used; other backends ignore it);
/// `GK_ISA_DEFAULT` if no op has succeeded on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn gk_last_isa() -> gk_isa {
    gk_isa::from_level(LAST.with(Cell::get).1)
}

/// The best ISA level this CPU supports.
#[unsafe(no_mangle)]
pub extern "C" fn gk_detected_isa() -> gk_isa {
    gk_isa::from_level(Some(IsaLevel::detected()))
}

/// gnnkern's version, a static NUL-terminated string (`"0.1.0"`).
#[unsafe(no_mangle)]
pub extern "C" fn gk_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}
