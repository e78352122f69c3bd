//! The execution context every layer receives: the gnnkern executor, the
//! training flag and dropout seed, the time split between sparse kernels
//! and dense ops, and the pool that recycles tensor buffers across passes
//! and epochs.

use super::pool::BufferPool;
use super::{Buf, Mat};
use gnnkern::Exec;
use std::time::{Duration, Instant};

/// Time spent in sparse kernels (gnnkern ops) and dense ops (GEMM,
/// elementwise, reductions over features); the rest of an epoch is "other".
/// `input` (mini-batch: sampling, block graphs, feature gathering) is part
/// of "other", booked by the training loop.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Profile {
    pub sparse: Duration,
    pub dense: Duration,
    pub input: Duration,
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
    pool: BufferPool,
}

impl Ctx {
    /// A training context with `seed`, on the default executor.
    pub fn new(exec: Exec, seed: u64) -> Self {
        Self { exec, prof: Profile::default(), training: true, seed, step: 0, pool: BufferPool::default() }
    }

    /// A `rows × cols` matrix from the pool; its contents are unspecified,
    /// so the caller overwrites every element.
    pub fn mat(&mut self, rows: usize, cols: usize) -> Mat {
        Mat::from_vec(rows, cols, self.pool.take(rows * cols))
    }

    /// A `len`-element buffer from the pool, contents unspecified.
    pub fn buf(&mut self, len: usize) -> Buf {
        self.pool.take(len)
    }

    /// Hands `m`'s storage back to the pool.
    pub fn recycle(&mut self, m: Mat) {
        self.pool.give(m.data);
    }

    /// Hands a buffer back to the pool.
    pub fn recycle_buf(&mut self, v: Buf) {
        self.pool.give(v);
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
