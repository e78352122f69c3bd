//! The execution context every layer receives: the gnnkern executor, the
//! training flag and dropout seed, and the time split between sparse
//! kernels and dense ops.

use gnnkern::Exec;
use std::time::{Duration, Instant};

/// Time spent in sparse kernels (gnnkern ops) and dense ops (GEMM,
/// elementwise, reductions over features); the rest of an epoch is "other".
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Profile {
    pub sparse: Duration,
    pub dense: Duration,
}

/// Execution context of a forward or backward pass.
#[derive(Debug)]
pub struct Ctx {
    pub exec: Exec,
    pub prof: Profile,
    /// Dropout is active only while training.
    pub training: bool,
    /// Seed of all dropout masks.
    pub seed: u64,
    /// Step counter mixed into dropout masks so each epoch draws new ones.
    pub step: u64,
}

impl Ctx {
    /// A training context with `seed`, on the default executor.
    pub fn new(exec: Exec, seed: u64) -> Self {
        Self { exec, prof: Profile::default(), training: true, seed, step: 0 }
    }

    /// Runs `f` and books its time as sparse.
    pub fn sparse<T>(&mut self, f: impl FnOnce(&Exec) -> T) -> T {
        let t = Instant::now();
        let r = f(&self.exec);
        self.prof.sparse += t.elapsed();
        r
    }

    /// Runs `f` and books its time as dense.
    pub fn dense<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = f();
        self.prof.dense += t.elapsed();
        r
    }

    /// The dropout stream of layer `salt` at the current step.
    pub fn stream(&self, salt: u64) -> u64 {
        crate::models::rng::mix(self.seed ^ crate::models::rng::mix(salt.wrapping_add(self.step << 20)))
    }
}
