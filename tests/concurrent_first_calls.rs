//! First calls racing on one shared graph, from several threads into one
//! rayon pool, must finish and agree with a later call.
//!
//! The shape of the hang fixed in 5ef0e82: a caller's op, running as a job
//! of a shared pool (as every C-ABI call does), builds a graph format or a
//! cache with rayon jobs; while its worker waits for a stolen half it may
//! steal another caller's op, and if that op waits on a lock the build
//! holds below it on the worker's own stack, neither finishes. Nothing may
//! be locked while a build runs (`graph::built_once`, the backend's
//! `cached_entry`). Whether a round hits that interleaving is up to the
//! scheduler, so the test runs many rounds, each on a fresh graph whose
//! formats, blocked layouts, trial states and softmax caches are all built
//! by the racing first calls, and a watchdog fails the test if they stop.
//!
//! This binary holds one test: it shrinks the cache budget with
//! `GNNKERN_LLC_BYTES` before any kernel reads it, so the model nominates
//! blocked passes and their layouts are built in the race too.

mod common;

use common::rng::Rng;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{BackendKind, Exec, Graph, SddmmIo, SddmmSpec, SpmmIo, SpmmSpec, Tensor};
use std::sync::{Barrier, mpsc};
use std::time::Duration;

/// Rounds of racing first calls; each builds every cache anew.
const ROUNDS: usize = 24;
/// How long one round may take: they take about 0.3 s in a debug build on
/// two cores (all 24 in 6.4 s), and the code before 5ef0e82 hung in its
/// first runs of this test (twice of two, each stopped after 300 s).
const WATCHDOG: Duration = Duration::from_secs(120);

#[test]
fn racing_first_calls_on_a_shared_graph_finish_and_agree() {
    // SAFETY: the only test of this binary sets the variable before any
    // thread of the library reads the environment.
    unsafe { std::env::set_var("GNNKERN_LLC_BYTES", (64 << 10).to_string()) };
    let (done, finished) = mpsc::channel();
    let rounds = std::thread::spawn(move || {
        for round in 0..ROUNDS {
            race(round as u64);
            done.send(round).expect("the watchdog waits");
        }
    });
    for round in 0..ROUNDS {
        match finished.recv_timeout(WATCHDOG) {
            Ok(r) => assert_eq!(r, round),
            // A failed assertion in a round ends the thread: report its message.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("round {round} of racing first calls did not finish in {WATCHDOG:?}: a build holds a lock")
            }
        }
    }
    if let Err(panic) = rounds.join() {
        std::panic::resume_unwind(panic);
    }
}

/// The ops of one round, by caller: each needs different formats and caches
/// (in-CSR and a blocked layout; out-CSR and the g-SDDMM walk; edge
/// destinations, rows by edge id and softmax ranges; the reverse graph).
const CALLERS: usize = 4;

fn race(seed: u64) {
    let mut rng = Rng::new(seed);
    let (n, e, d) = (4_000, 64_000, 32);
    let src: Vec<i32> = (0..e).map(|_| rng.below(n) as i32).collect();
    let dst: Vec<i32> = (0..e).map(|_| rng.below(n) as i32).collect();
    let g = Graph::<i32>::from_coo(n, n, src, dst).unwrap();
    let x = Tensor::from_vec(rng.signed_vec(n * d, 0.1, 1.0), vec![n, d]).unwrap();
    let logits = Tensor::from_vec(rng.signed_vec(e * 4, 0.1, 8.0), vec![e, 4]).unwrap();
    let simd = Exec::forced(BackendKind::Simd);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let call = |caller: usize| -> Vec<f32> {
        match caller {
            0 => {
                let mut out = Tensor::zeros(&[n, d]).unwrap();
                let io = SpmmIo { lhs: Some(x.view()), rhs: None, out: out.view_mut(), arg_u: None, arg_e: None };
                simd.gspmm(&g, SpmmSpec::copy(Target::Src, ReduceKind::Sum), io).unwrap();
                out.into_vec()
            }
            1 => {
                let mut out = Tensor::zeros(&[e, 1]).unwrap();
                let io = SddmmIo { lhs: Some(x.view()), rhs: Some(x.view()), out: out.view_mut() };
                simd.gsddmm(&g, SddmmSpec::new(BinaryOpKind::Dot, Target::Src, Target::Dst), io).unwrap();
                out.into_vec()
            }
            2 => {
                let mut out = Tensor::zeros(&[e, 4]).unwrap();
                simd.edge_softmax(&g, logits.view(), out.view_mut()).unwrap();
                out.into_vec()
            }
            _ => {
                let mut out = Tensor::zeros(&[n, d]).unwrap();
                let io = SpmmIo { lhs: Some(x.view()), rhs: None, out: out.view_mut(), arg_u: None, arg_e: None };
                simd.gspmm(&g.reverse(), SpmmSpec::copy(Target::Src, ReduceKind::Mean), io).unwrap();
                out.into_vec()
            }
        }
    };
    let start = Barrier::new(CALLERS);
    let raced: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|caller| {
                let (pool, start, call) = (&pool, &start, &call);
                scope.spawn(move || {
                    start.wait();
                    pool.install(|| call(caller))
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().expect("a racing call panicked")).collect()
    });
    // Every pass of a trial gives the same bits (tests/blocking_trials.rs),
    // so a later call, on built caches, must match the racing one.
    for (caller, out) in raced.iter().enumerate() {
        let again = pool.install(|| call(caller));
        assert!(
            out.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits()),
            "round {seed}, caller {caller}: the racing call's output differs from a later call's"
        );
    }
}
