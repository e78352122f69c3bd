//! Rayon worker pools, optionally with every worker pinned to one core.
//!
//! Pinning (off by default) fixes worker `i` to core `cores[i % cores.len()]`,
//! where `cores` are the CPUs this process may run on (its affinity mask, so
//! `taskset` and cgroup cpusets are respected); with more workers than cores
//! the assignment wraps round robin. Each worker pins itself in rayon's
//! `start_handler`; [`build_pool`] then runs one `broadcast` (which returns
//! only after every worker has started, so every handler has run) and turns
//! any refused pin into [`PoolError::PinRefused`] — a pool that was asked to
//! be pinned is never handed out half pinned, and nothing panics.
//!
//! When it helps: a pinned worker keeps its L1/L2 contents between the
//! parallel loops of one op and across ops (the scheduler cannot migrate it)
//! and, on multi-socket or multi-CCX machines, keeps its first-touch pages
//! local. It costs flexibility: a pinned worker whose core is busy with
//! another process waits for that core instead of moving to an idle one, so
//! on a shared or oversubscribed machine (a VM with few vCPUs, a CI runner)
//! pinning can be slower. On a quiet 2-vCPU Zen 5 VM it made no difference
//! beyond noise (copy_u_sum, 2^20 and 2^24 edges; docs/PERFORMANCE.md).
//! Measure before turning it on (`gnnkern-bench op --pin`; docs/C_ABI.md,
//! "Thread pinning").

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Whether the workers of a pool are pinned to cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pinning {
    /// The operating system places and migrates workers (the default).
    #[default]
    Off,
    /// Worker `i` runs only on core `i mod cores` of the process's CPU set.
    PerCore,
}

/// Why a pool could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// Rayon could not start the workers.
    #[error("cannot build a pool of {threads} threads: {source}")]
    Build {
        threads: usize,
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// The operating system did not report the CPUs this process may use.
    #[error("thread pinning is unavailable: the operating system reports no CPU set for this process")]
    NoCores,
    /// The operating system refused to pin some workers.
    #[error("thread pinning failed: {refused} of {threads} workers could not be pinned to their core")]
    PinRefused { refused: usize, threads: usize },
}

/// The CPUs workers are pinned to, in order (worker `i` gets entry
/// `i % len`). `None` when the operating system does not report them.
pub fn pin_cores() -> Option<Vec<usize>> {
    core_affinity::get_core_ids().filter(|ids| !ids.is_empty()).map(|ids| ids.into_iter().map(|c| c.id).collect())
}

/// Builds a rayon pool of `threads` workers (0: one per logical CPU, rayon's
/// default) named `<name>-<i>`, pinned as `pinning` says.
pub fn build_pool(threads: usize, pinning: Pinning, name: &str) -> Result<ThreadPool, PoolError> {
    let prefix = name.to_string();
    let builder = ThreadPoolBuilder::new().num_threads(threads).thread_name(move |i| format!("{prefix}-{i}"));
    let build_error = |source| PoolError::Build { threads, source };
    let Pinning::PerCore = pinning else {
        return builder.build().map_err(build_error);
    };
    let cores = pin_cores().ok_or(PoolError::NoCores)?;
    let refused = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&refused);
    let pool = builder
        .start_handler(move |i| {
            let core = core_affinity::CoreId { id: cores[i % cores.len()] };
            if !core_affinity::set_for_current(core) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        })
        .build()
        .map_err(build_error)?;
    // A broadcast runs on every worker, so each has started (and run its
    // start handler) by the time it returns.
    pool.broadcast(|_| ());
    match refused.load(Ordering::Relaxed) {
        0 => Ok(pool),
        refused => Err(PoolError::PinRefused { refused, threads: pool.current_num_threads() }),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The CPUs the calling thread may run on, from `/proc/thread-self/status`.
    fn allowed_cpus() -> Vec<usize> {
        let status = std::fs::read_to_string("/proc/thread-self/status").expect("procfs");
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("Cpus_allowed_list");
        list.trim()
            .split(',')
            .flat_map(|range| {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
            })
            .collect()
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri emulates the affinity calls; /proc shows the host's")]
    fn pinned_workers_each_run_on_their_round_robin_core() {
        let cores = pin_cores().expect("Linux reports the CPU set");
        // One more worker than cores: the last one wraps to the first core.
        let threads = cores.len() + 1;
        let pool = build_pool(threads, Pinning::PerCore, "pin-test").unwrap();
        assert_eq!(pool.current_num_threads(), threads);
        let seen = pool.broadcast(|ctx| (ctx.index(), allowed_cpus()));
        for (i, allowed) in seen {
            assert_eq!(allowed, vec![cores[i % cores.len()]], "worker {i}");
        }
    }

    #[test]
    fn unpinned_workers_keep_the_process_cpu_set() {
        let process = allowed_cpus();
        let pool = build_pool(2, Pinning::Off, "free-test").unwrap();
        let seen = pool.broadcast(|ctx| (ctx.index(), allowed_cpus(), std::thread::current().name().map(String::from)));
        for (i, allowed, name) in seen {
            assert_eq!(allowed, process, "worker {i}");
            assert_eq!(name.as_deref(), Some(format!("free-test-{i}").as_str()));
        }
    }
}
