//! The GPU backend (`--features gpu`) against the reference, on the device
//! the environment selects (lavapipe in CI):
//!
//! - every g-SpMM spec (op × lhs/rhs target × reducer, broadcasting and
//!   multi-head families) and every g-SDDMM spec, on every graph case;
//! - the split-row path (a 3000-edge hub is 12 segments, merged by the
//!   finalize pass) with ties everywhere (small-integer values), so
//!   first-in-row-order args are checked across segment boundaries;
//! - chunking: the same ops through a context whose storage-binding limit
//!   is forced down to a few KiB, so every operand, output and graph array
//!   is processed through several binding windows;
//! - edge softmax and its backward; the normal `Exec::forced(Gpu)` path;
//!   typed errors instead of panics.
//!
//! Without an adapter every test prints a loud SKIPPED line and returns —
//! unless `CI=true` or `GNNKERN_REQUIRE_GPU=1`, where that is a failure.
//! Comparisons: exact for copy, max/min of elementwise messages, args and
//! elementwise g-SDDMM; `c · ε · Σ|terms| · n` for sums, means, dots and
//! softmax (see `common::compare`).
#![cfg(feature = "gpu")]

mod common;

use common::cases::{
    GraphCase, GraphKind, Operands, Scale, Values, all_sddmm_specs, all_spmm_specs, graph_case, shape_families, shapes,
};
use common::compare::{abs, args_equal, close, exact};
use common::rng::Rng;
use gnnkern::backend::gpu::{self, Gpu};
use gnnkern::backend::{Backend, SddmmCall, SpmmCall};
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{BackendKind, Error, Exec, Graph, Index, SddmmSpec, SpmmSpec, Tensor};
use gnnkern_gpu::GpuContext;
use gnnkern_simd::layout::{BroadcastPlan, OperandShape};
use gnnkern_simd::op::{BinaryOp, Reducer};
use gnnkern_simd::{dispatch_binary_op, dispatch_reducer};
use std::sync::{Arc, OnceLock};

const C: f32 = 4.0;

/// Storage-binding cap of the chunking context: a few rows per window.
const SMALL_BINDING: u64 = 4096;

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true") || std::env::var("GNNKERN_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The process context, or `None` (loudly) when no adapter exists here.
fn base() -> Option<Arc<GpuContext>> {
    static CTX: OnceLock<Result<Arc<GpuContext>, String>> = OnceLock::new();
    match CTX.get_or_init(|| gpu::context().map_err(|e| e.to_string())) {
        Ok(ctx) => Some(Arc::clone(ctx)),
        Err(e) if required() => panic!("CI=true / GNNKERN_REQUIRE_GPU=1 but the GPU backend is unavailable: {e}"),
        Err(e) => {
            eprintln!("\n*** SKIPPED: no GPU adapter, GPU backend tests did not run: {e} ***\n");
            None
        }
    }
}

/// A separate context whose planner may bind at most [`SMALL_BINDING`] bytes.
fn small() -> Option<Arc<GpuContext>> {
    base()?;
    static CTX: OnceLock<Arc<GpuContext>> = OnceLock::new();
    Some(Arc::clone(CTX.get_or_init(|| {
        Arc::new(GpuContext::from_env().expect("a second context").with_max_binding_bytes(SMALL_BINDING))
    })))
}

struct SpmmGot<I> {
    out: Vec<f32>,
    arg_u: Vec<I>,
    arg_e: Vec<I>,
}

/// Runs one g-SpMM through the `Backend` trait on `gpu`.
fn spmm_on<I: Index>(gpu: &Gpu, g: &Graph<I>, spec: SpmmSpec, ops: &Operands) -> gnnkern::Result<SpmmGot<I>> {
    dispatch_binary_op!(spec.op, O => dispatch_reducer!(spec.reduce, R => spmm_typed::<O, R, I>(gpu, g, spec, ops)))
}

fn feat(t: &Option<(Vec<f32>, Vec<usize>)>) -> (&[f32], &[usize]) {
    t.as_ref().map_or((&[][..], &[][..]), |(d, s)| (&d[..], &s[1..]))
}

fn spmm_typed<O: BinaryOp, R: Reducer, I: Index>(
    gpu: &Gpu,
    g: &Graph<I>,
    spec: SpmmSpec,
    ops: &Operands,
) -> gnnkern::Result<SpmmGot<I>> {
    let ((l, ls), (r, rs)) = (feat(&ops.lhs), feat(&ops.rhs));
    let plan = BroadcastPlan::new(OperandShape::of::<O>(), ls, rs).expect("valid shapes");
    let n = g.num_dst() * plan.out_len;
    let mut got = SpmmGot { out: vec![f32::NAN; n], arg_u: vec![I::NONE; n], arg_e: vec![I::NONE; n] };
    let call = SpmmCall {
        graph: g,
        lhs_target: spec.lhs,
        rhs_target: spec.rhs,
        plan: &plan,
        lhs: l,
        rhs: r,
        out: &mut got.out,
        arg_u: R::HAS_ARG.then_some(&mut got.arg_u[..]),
        arg_e: R::HAS_ARG.then_some(&mut got.arg_e[..]),
    };
    gpu.gspmm::<O, R, I>(call)?;
    Ok(got)
}

/// Runs one g-SDDMM through the `Backend` trait on `gpu`.
fn sddmm_on<I: Index>(gpu: &Gpu, g: &Graph<I>, spec: SddmmSpec, ops: &Operands) -> gnnkern::Result<Vec<f32>> {
    dispatch_binary_op!(spec.op, O => {
        let ((l, ls), (r, rs)) = (feat(&ops.lhs), feat(&ops.rhs));
        let plan = BroadcastPlan::new(OperandShape::of::<O>(), ls, rs).expect("valid shapes");
        let mut out = vec![f32::NAN; g.num_edges() * plan.out_len];
        let call = SddmmCall { graph: g, lhs_target: spec.lhs, rhs_target: spec.rhs, plan: &plan, lhs: l, rhs: r, out: &mut out };
        gpu.gsddmm::<O, I>(call).map(|()| out)
    })
}

fn magnitude_op(op: BinaryOpKind) -> BinaryOpKind {
    if op == BinaryOpKind::Sub { BinaryOpKind::Add } else { op }
}

fn abs_operands(o: &Operands) -> Operands {
    let f = |t: &Option<(Vec<f32>, Vec<usize>)>| t.as_ref().map(|(d, s)| (abs(d), s.clone()));
    Operands { lhs: f(&o.lhs), rhs: f(&o.rhs) }
}

fn widen<I: Index>(v: &[I]) -> Vec<i64> {
    v.iter().map(|x| x.to_i64()).collect()
}

/// One g-SpMM case on `gpu` against the reference.
fn check_spmm<I: Index>(
    gpu: &Gpu,
    g: &GraphCase<I>,
    spec: SpmmSpec,
    family: usize,
    d: usize,
    values: Values,
    seed: u64,
) -> Result<(), String> {
    let sh = shapes(spec.op, family % shape_families(spec.op), d);
    let dot = spec.op == BinaryOpKind::Dot;
    // Dot under max/min: integer inputs make every dot exact, so args must agree.
    let values = if dot && spec.reduce.has_arg() { Values::Integers } else { values };
    let mut rng = Rng::new(seed);
    let ops = Operands::draw(g, spec.op, (spec.lhs, spec.rhs), &sh, values, &mut rng);
    let what = format!("{} on {:?}/{} shapes {:?} {:?} {values:?}", spec.name(), g.kind, I::NAME, sh.lhs, sh.rhs);
    let fail = |e: Error| format!("{what}: {e}");
    let reference = Exec::forced(BackendKind::Reference);
    let want = reference.gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).map_err(fail)?;
    let got = spmm_on(gpu, &g.graph, spec, &ops).map_err(fail)?;
    if spec.reduce.has_arg() {
        exact(&what, &got.out, want.out.data())?;
        args_equal(&format!("{what} arg_u"), &widen(&got.arg_u), &widen(want.arg_u.as_deref().unwrap()))?;
        args_equal(&format!("{what} arg_e"), &widen(&got.arg_e), &widen(want.arg_e.as_deref().unwrap()))?;
    } else {
        let k = sh.lhs.last().copied().filter(|_| dot).unwrap_or(1);
        let abs_ops = abs_operands(&ops);
        let mag_spec = SpmmSpec { op: magnitude_op(spec.op), ..spec };
        let mag = reference.gspmm_alloc(&g.graph, mag_spec, abs_ops.lhs(), abs_ops.rhs()).map_err(fail)?;
        close(&what, &got.out, want.out.data(), mag.out.data(), g.max_degree() * k, C)?;
    }
    Ok(())
}

/// One g-SDDMM case on `gpu` against the reference.
fn check_sddmm<I: Index>(
    gpu: &Gpu,
    g: &GraphCase<I>,
    spec: SddmmSpec,
    family: usize,
    d: usize,
    values: Values,
    seed: u64,
) -> Result<(), String> {
    let sh = shapes(spec.op, family % shape_families(spec.op), d);
    let mut rng = Rng::new(seed);
    let ops = Operands::draw(g, spec.op, (spec.lhs, spec.rhs), &sh, values, &mut rng);
    let what = format!("{} on {:?}/{} shapes {:?} {:?} {values:?}", spec.name(), g.kind, I::NAME, sh.lhs, sh.rhs);
    let fail = |e: Error| format!("{what}: {e}");
    let reference = Exec::forced(BackendKind::Reference);
    let want = reference.gsddmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).map_err(fail)?;
    let got = sddmm_on(gpu, &g.graph, spec, &ops).map_err(fail)?;
    if spec.op == BinaryOpKind::Dot {
        let abs_ops = abs_operands(&ops);
        let mag = reference.gsddmm_alloc(&g.graph, spec, abs_ops.lhs(), abs_ops.rhs()).map_err(fail)?;
        close(&what, &got, want.data(), mag.data(), *sh.lhs.last().unwrap(), C)
    } else {
        exact(&what, &got, want.data())
    }
}

/// Feature sizes around the workgroup size (64) and the accumulate tile (256).
const GPU_SIZES: [usize; 8] = [1, 7, 33, 63, 64, 65, 257, 16];

#[test]
fn spmm_every_spec_on_every_graph() {
    let Some(ctx) = base() else { return };
    let gpu = Gpu::with_context(ctx);
    let graphs: Vec<GraphCase<i32>> = GraphKind::ALL.iter().map(|&k| graph_case(k, Scale::Small, 11)).collect();
    for (i, spec) in all_spmm_specs().into_iter().enumerate() {
        let g = &graphs[i % graphs.len()];
        let d = GPU_SIZES[(i / graphs.len()) % GPU_SIZES.len()];
        let values = if i % 5 == 0 { Values::Specials } else { Values::Finite };
        check_spmm(&gpu, g, spec, i, d, values, i as u64).unwrap();
    }
}

#[test]
fn sddmm_every_spec_on_every_graph() {
    let Some(ctx) = base() else { return };
    let gpu = Gpu::with_context(ctx);
    let graphs: Vec<GraphCase<i64>> = GraphKind::ALL.iter().map(|&k| graph_case(k, Scale::Small, 12)).collect();
    for (i, spec) in all_sddmm_specs().into_iter().enumerate() {
        for (j, g) in graphs.iter().enumerate() {
            let d = GPU_SIZES[(i + j) % GPU_SIZES.len()];
            let values = if (i + j) % 4 == 0 { Values::Specials } else { Values::Finite };
            check_sddmm(&gpu, g, spec, i + j, d, values, (i * 7 + j) as u64).unwrap();
        }
    }
}

/// A graph with one destination of `hub` in-edges drawn from few sources
/// (many duplicate (source, edge) ties), plus sparse rows and empty rows.
fn hub_graph<I: Index>(hub: usize, seed: u64) -> GraphCase<I> {
    let n = 40;
    let mut rng = Rng::new(seed);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for _ in 0..hub {
        src.push(rng.below(n));
        dst.push(3);
    }
    for _ in 0..n {
        src.push(rng.below(n));
        dst.push(10 + rng.below(n - 10));
    }
    let ids = |v: &[usize]| v.iter().map(|&x| I::try_from_usize(x).unwrap()).collect::<Vec<I>>();
    let graph = Graph::from_coo(n, n, ids(&src), ids(&dst)).unwrap();
    GraphCase { kind: GraphKind::Hub, graph, num_src: n, num_dst: n, src, dst }
}

#[test]
fn hub_rows_split_into_segments_keep_row_order_ties() {
    let Some(ctx) = base() else { return };
    let gpu = Gpu::with_context(ctx);
    let g = graph_case::<i32>(GraphKind::Hub, Scale::Full, 5);
    let dg = gpu.device_graph(&g.graph).unwrap();
    let degrees = g.graph.in_degrees();
    let segments: usize = degrees.iter().map(|d| d.div_ceil(gnnkern_gpu::SEGMENT_EDGES)).sum();
    let busy_rows = degrees.iter().filter(|&&d| d > 0).count();
    assert_eq!(dg.num_segments(), segments);
    assert!(segments >= busy_rows + 11, "the 3000-edge hub must be split ({segments} segments, {busy_rows} rows)");
    // Small integers: ties in nearly every row, across segment boundaries.
    for (i, reduce) in ReduceKind::ALL.into_iter().enumerate() {
        for (j, (op, l, r)) in [
            (BinaryOpKind::CopyLhs, Target::Src, Target::Edge),
            (BinaryOpKind::Mul, Target::Src, Target::Edge),
            (BinaryOpKind::Add, Target::Edge, Target::Dst),
            (BinaryOpKind::Dot, Target::Src, Target::Dst),
        ]
        .into_iter()
        .enumerate()
        {
            let spec = SpmmSpec::new(op, l, r, reduce);
            for d in [1, 65] {
                check_spmm(&gpu, &g, spec, i + j, d, Values::Integers, (i * 4 + j) as u64).unwrap();
            }
        }
    }
}

#[test]
fn chunked_bindings_match_the_reference() {
    let Some(ctx) = small() else { return };
    assert!(ctx.max_binding_bytes() <= SMALL_BINDING);
    let gpu = Gpu::with_context(ctx);
    // Operands of 24–48 rows × 33–65 features span several 4 KiB windows;
    // the 400-edge hub is two segments in one block; the rows are blocked.
    let graphs: Vec<GraphCase<i32>> =
        [GraphKind::EmptyRows, GraphKind::Bipartite, GraphKind::Duplicates, GraphKind::Random]
            .iter()
            .map(|&k| graph_case(k, Scale::Full, 21))
            .chain([hub_graph(400, 3)])
            .collect();
    let spmm = all_spmm_specs();
    for (i, spec) in spmm.iter().enumerate().step_by(3) {
        let g = &graphs[i % graphs.len()];
        let d = [33, 65, 7][i % 3];
        check_spmm(&gpu, g, *spec, i, d, Values::Finite, i as u64).unwrap();
    }
    for (i, spec) in all_sddmm_specs().into_iter().enumerate() {
        let g = &graphs[i % graphs.len()];
        check_sddmm(&gpu, g, spec, i, [33, 65][i % 2], Values::Finite, i as u64).unwrap();
    }
}

#[test]
fn a_row_larger_than_a_binding_is_a_typed_error_and_writes_nothing() {
    let Some(ctx) = small() else { return };
    let gpu = Gpu::with_context(ctx);
    // 3000 in-edges = 24000 bytes of (source, edge id) pairs > one 4 KiB binding.
    let g = hub_graph::<i32>(3000, 9);
    let spec = SpmmSpec::new(BinaryOpKind::CopyLhs, Target::Src, Target::Edge, ReduceKind::Sum);
    let ops =
        Operands::draw(&g, spec.op, (spec.lhs, spec.rhs), &shapes(spec.op, 0, 4), Values::Finite, &mut Rng::new(1));
    match spmm_on(&gpu, &g.graph, spec, &ops) {
        Err(Error::Unsupported { backend: "gpu", what }) => assert!(what.contains("row 3"), "{what}"),
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("a 24 KB edge list cannot fit a 4 KiB binding"),
    }
    let mut out = vec![7.0f32; g.num_dst * 4];
    let plan = BroadcastPlan::new(OperandShape::of::<gnnkern::op::CopyLhs>(), &[4], &[]).unwrap();
    let call = SpmmCall {
        graph: &g.graph,
        lhs_target: Target::Src,
        rhs_target: Target::Edge,
        plan: &plan,
        lhs: &ops.lhs.as_ref().unwrap().0,
        rhs: &[],
        out: &mut out,
        arg_u: None,
        arg_e: None,
    };
    assert!(gpu.gspmm::<gnnkern::op::CopyLhs, gnnkern::op::Sum, i32>(call).is_err());
    assert!(out.iter().all(|&x| x == 7.0), "a failed call must leave the output untouched");
}

/// Softmax outputs and gradients: `c · ε · |want| · (degree + 16)` (f32 exp
/// is within a few ulp, then one sum over the row and one division).
fn check_softmax<I: Index>(exec: Exec, g: &GraphCase<I>, feat: &[usize], seed: u64) -> Result<(), String> {
    let reference = Exec::forced(BackendKind::Reference);
    let mut rng = Rng::new(seed);
    let mut shape = vec![g.num_edges()];
    shape.extend_from_slice(feat);
    let n: usize = shape.iter().product();
    let logits = Tensor::from_vec(rng.signed_vec(n, 0.25, 4.0), shape.clone()).unwrap();
    let what = format!("edge_softmax on {:?} feat {feat:?}", g.kind);
    let run = |ex: Exec| {
        let mut y = Tensor::zeros(&shape).unwrap();
        ex.edge_softmax(&g.graph, logits.view(), y.view_mut()).map(|k| (k, y))
    };
    let (kind, got) = run(exec).map_err(|e| format!("{what}: {e}"))?;
    let (_, want) = run(reference).map_err(|e| format!("{what}: {e}"))?;
    if kind != BackendKind::Gpu {
        return Err(format!("{what}: ran on {kind:?}"));
    }
    let terms = g.max_degree() + 16;
    close(&what, got.data(), want.data(), &abs(want.data()), terms, C)?;
    let grad = Tensor::from_vec(rng.signed_vec(n, 0.25, 2.0), shape.clone()).unwrap();
    let back = |ex: Exec| {
        let mut dx = Tensor::zeros(&shape).unwrap();
        ex.edge_softmax_backward(&g.graph, want.view(), grad.view(), dx.view_mut()).map(|_| dx)
    };
    let got = back(exec).map_err(|e| format!("{what} backward: {e}"))?;
    let want_dx = back(reference).map_err(|e| format!("{what} backward: {e}"))?;
    // |y|·(|g| + Σ|g·y|) bounds every term of the gradient.
    let mag: Vec<f32> = want.data().iter().zip(grad.data()).map(|(y, g)| y.abs() * (g.abs() + 2.0)).collect();
    close(&format!("{what} backward"), got.data(), want_dx.data(), &mag, terms, C)
}

#[test]
fn edge_softmax_and_backward_through_exec() {
    let Some(_) = base() else { return };
    let exec = Exec::forced(BackendKind::Gpu);
    for (i, &kind) in GraphKind::ALL.iter().enumerate() {
        let g = graph_case::<i32>(kind, Scale::Full, 30 + i as u64);
        for feat in [&[1][..], &[3, 1], &[4, 17], &[65]] {
            check_softmax(exec, &g, feat, i as u64).unwrap();
        }
    }
    let g = hub_graph::<i64>(600, 4);
    check_softmax(exec, &g, &[2, 8], 99).unwrap();
}

#[test]
fn exec_forced_gpu_runs_on_the_gpu_and_matches() {
    let Some(_) = base() else { return };
    assert_eq!(BackendKind::Gpu.availability(), Ok(()));
    let g = graph_case::<i64>(GraphKind::Hub, Scale::Full, 2);
    let spec = SpmmSpec::from_name("u_mul_e_max").unwrap();
    let sh = shapes(spec.op, 3, 16);
    let ops = Operands::draw(&g, spec.op, (spec.lhs, spec.rhs), &sh, Values::Specials, &mut Rng::new(8));
    let got = Exec::forced(BackendKind::Gpu).gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).unwrap();
    assert_eq!(got.backend, BackendKind::Gpu);
    assert_eq!(gnnkern::backend::last_used(), Some(BackendKind::Gpu));
    let want = Exec::forced(BackendKind::Reference).gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).unwrap();
    exact("u_mul_e_max", got.out.data(), want.out.data()).unwrap();
    assert_eq!(got.arg_u, want.arg_u);
    assert_eq!(got.arg_e, want.arg_e);
    let sd = SddmmSpec::from_name("u_dot_v").unwrap();
    let sh = shapes(sd.op, 1, 9);
    let ops = Operands::draw(&g, sd.op, (sd.lhs, sd.rhs), &sh, Values::Integers, &mut Rng::new(9));
    let got = Exec::forced(BackendKind::Gpu).gsddmm_alloc(&g.graph, sd, ops.lhs(), ops.rhs()).unwrap();
    let want = Exec::forced(BackendKind::Reference).gsddmm_alloc(&g.graph, sd, ops.lhs(), ops.rhs()).unwrap();
    exact("u_dot_v on integers", got.data(), want.data()).unwrap();
    // The device graph is uploaded once per orientation and context.
    let gpu = Gpu::get().unwrap();
    let a = gpu.device_graph(&g.graph).unwrap();
    let b = gpu.device_graph(&g.graph).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert!(!Arc::ptr_eq(&a, &gpu.device_graph(&g.graph.reverse()).unwrap()));
}

#[test]
fn device_api_rejects_mismatched_inputs_with_typed_errors() {
    let (Some(ctx), Some(other)) = (base(), small()) else { return };
    let x = ctx.upload(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(ctx.download(&x).unwrap(), vec![1.0, 2.0, 3.0]);
    let mut wrong = vec![0.0; 2];
    assert!(matches!(ctx.download_into(&x, &mut wrong), Err(gnnkern_gpu::GpuError::InvalidArgument(_))));
    assert!(matches!(other.download(&x), Err(gnnkern_gpu::GpuError::InvalidArgument(_))));
    // Larger than the device's max_buffer_size: a typed error, no allocation attempted.
    assert!(matches!(ctx.zeros(usize::MAX / 8), Err(gnnkern_gpu::GpuError::Unsupported(_))));
    // A graph from another context is refused by the device API.
    let g = graph_case::<i32>(GraphKind::Random, Scale::Small, 1);
    let dg = Gpu::with_context(Arc::clone(&other)).device_graph(&g.graph).unwrap();
    let y = ctx.zeros(g.num_edges()).unwrap();
    assert!(matches!(ctx.edge_softmax(&dg, &y, 1, &y), Err(gnnkern_gpu::GpuError::InvalidArgument(_))));
}
