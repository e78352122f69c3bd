//! Callers racing through the first calls on one shared graph, from
//! several threads into one rayon pool, must finish and agree with a later
//! call.
//!
//! The shape of the hang fixed in 5ef0e82: a caller's op, running as a job
//! of a shared pool (as every C-ABI call does), builds a graph format or a
//! cache with rayon jobs; while its worker waits for a stolen half it may
//! steal another caller's op, and if that op waits on a lock the build
//! holds below it on the worker's own stack, neither finishes. Nothing may
//! be locked while a build runs (`graph::built_once`, the backend's
//! `cached_entry`). Whether a round hits that interleaving is up to the
//! scheduler, so the test runs many rounds, each on a fresh graph whose
//! formats, trial states, blocked layouts and g-SDDMM and softmax caches
//! are all built by the racing callers, and a watchdog fails the test if
//! they stop.
//!
//! This binary holds one test: it shrinks the cache budget with
//! `GNNKERN_LLC_BYTES` before any kernel reads it, so the model nominates
//! blocked passes. Each caller makes a whole trial's calls, so the blocked
//! layouts are built in the race too, and two callers share one trial (a
//! mean shares its sum's).

mod common;

use common::rng::Rng;
use gnnkern::backend::simd::trials::CALLS_TO_DECIDE;
use gnnkern::backend::simd::{PassKind, last_pass};
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{BackendKind, Exec, Graph, SddmmIo, SddmmSpec, SpmmIo, SpmmSpec, Tensor};
use std::sync::{Barrier, mpsc};
use std::time::Duration;

/// Rounds of racing callers; each builds every cache anew.
const ROUNDS: usize = 16;
/// How long one round may take: under 1.2 s in a debug build on two cores
/// (all 16 in 10.2 s under `.ci/run`, 19 s beside another build), while the
/// code before 5ef0e82 hung in round 0 of each of three runs (this watchdog
/// fired).
const WATCHDOG: Duration = Duration::from_secs(120);

#[test]
fn racing_callers_on_a_fresh_shared_graph_finish_and_agree() {
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
                panic!("round {round} of racing callers did not finish in {WATCHDOG:?}: a build holds a lock")
            }
        }
    }
    if let Err(panic) = rounds.join() {
        std::panic::resume_unwind(panic);
    }
}

/// The ops of one round, by caller: copy_u_sum and copy_u_mean (one trial,
/// one blocked layout of the in-CSR), u_dot_v (the out-CSR, the g-SDDMM
/// walk, its trial's edge ranges or staging) and edge softmax on the
/// reverse graph (edge sources, rows by edge id, softmax ranges).
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
            0 | 1 => {
                let reduce = if caller == 0 { ReduceKind::Sum } else { ReduceKind::Mean };
                let mut out = Tensor::zeros(&[n, d]).unwrap();
                let io = SpmmIo { lhs: Some(x.view()), rhs: None, out: out.view_mut(), arg_u: None, arg_e: None };
                simd.gspmm(&g, SpmmSpec::copy(Target::Src, reduce), io).unwrap();
                out.into_vec()
            }
            2 => {
                let mut out = Tensor::zeros(&[e, 1]).unwrap();
                let io = SddmmIo { lhs: Some(x.view()), rhs: Some(x.view()), out: out.view_mut() };
                simd.gsddmm(&g, SddmmSpec::new(BinaryOpKind::Dot, Target::Src, Target::Dst), io).unwrap();
                out.into_vec()
            }
            _ => {
                let mut out = Tensor::zeros(&[e, 4]).unwrap();
                simd.edge_softmax(&g.reverse(), logits.view(), out.view_mut()).unwrap();
                out.into_vec()
            }
        }
    };
    let start = Barrier::new(CALLERS);
    let (raced, passes): (Vec<Vec<f32>>, Vec<Vec<PassKind>>) = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|caller| {
                let (pool, start, call) = (&pool, &start, &call);
                scope.spawn(move || {
                    start.wait();
                    // A whole trial: every candidate pass runs, so blocked
                    // layouts and nominees' caches are built in the race.
                    let (outs, passes): (Vec<Vec<f32>>, Vec<PassKind>) = (0..CALLS_TO_DECIDE)
                        .map(|_| pool.install(|| (call(caller), last_pass().expect("the SIMD backend ran"))))
                        .unzip();
                    assert!(
                        outs.iter().all(|o| o.iter().zip(&outs[0]).all(|(a, b)| a.to_bits() == b.to_bits())),
                        "round {seed}, caller {caller}: the trial's passes differ ({passes:?})"
                    );
                    (outs.into_iter().next().expect("at least one call"), passes)
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().expect("a racing call panicked")).unzip()
    });
    // The copy callers share one trial, whose blocked calls built the layout.
    assert!(
        passes[..2].iter().flatten().any(|p| matches!(p, PassKind::Blocked { .. })),
        "round {seed}: no racing copy call ran blocked ({:?})",
        &passes[..2]
    );
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
