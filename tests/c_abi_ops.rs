//! The C ABI's graph and op entry points called from Rust the way a C caller
//! calls them, against the Rust API on the same graph.
//!
//! Every tensor lives in an allocation of exactly the size it describes
//! (`common::dl::Owned`), in each layout DLPack allows for compact memory
//! (byte offset, explicit strides, arbitrary strides on extent-1
//! dimensions). Natively this checks the results and that nothing outside
//! an output changed; under Miri (`.ci/miri`) it also checks the C ABI's
//! own unsafe code: every slice it makes from a caller's pointer lies inside
//! the caller's allocation, and no output reference overlaps another tensor.
//! `tests/c/smoke.c` makes the same kinds of calls from C, where Miri cannot
//! follow, and covers the bad calls.
//!
//! Both sides run the same backend (`GNNKERN_BACKEND`, else auto) on a graph
//! built from the same arrays, so results must agree bit for bit: the
//! kernels do not depend on the thread count (tests/simd_kernels.rs).

mod common;

use common::compare::{args_equal, exact};
use common::dl::{self, Dtype, Layout, Owned};
use common::rng::Rng;
use dlpark::ffi::DLTensor;
use gnnkern::capi::enums::{RawOp, RawReduce, RawTarget, gk_index_type};
use gnnkern::capi::graph::{self as cg, gk_graph, gk_graph_info};
use gnnkern::capi::ops;
use gnnkern::capi::status::{gk_last_error_message, gk_status};
use gnnkern::op::{BinaryOpKind as K, ReduceKind, Target};
use gnnkern::{Exec, Gradients, Graph, Index, SddmmSpec, SpmmGradInputs, SpmmSpec, Tensor, Wanted};

/// Source, destination and edge counts; source 5 has no out-edges and
/// destination 4 no in-edges.
const NS: usize = 6;
const ND: usize = 5;
/// Feature size: one partial vector at every ISA level.
const D: usize = 3;

fn message() -> String {
    // SAFETY: a valid C string owned by this thread.
    unsafe { std::ffi::CStr::from_ptr(gk_last_error_message()) }.to_string_lossy().into_owned()
}

fn ok(what: &str, status: gk_status) {
    assert_eq!(status, gk_status::GK_OK, "{what}: {}", message());
}

/// Edges (u, v) with a duplicate, a self-loop and a hub destination 1.
fn edges() -> (Vec<usize>, Vec<usize>) {
    let pairs = [(0, 1), (1, 1), (2, 1), (3, 1), (4, 0), (0, 2), (3, 2), (3, 2), (2, 3), (1, 0), (2, 2), (4, 3)];
    pairs.iter().copied().unzip()
}

/// How the C side builds its graph; the Rust side builds from the same arrays.
#[derive(Clone, Copy, Debug)]
enum Build {
    Coo,
    /// Out-CSR with entries in edge-id order within a row.
    Csr,
    /// In-CSR with each row's entries reversed (edge ids not ascending).
    Csc,
}

/// A compressed form of `(rows, cols)` grouped by `rows`: (indptr, indices, eids).
fn compress(rows: &[usize], cols: &[usize], n: usize, reverse_rows: bool) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let mut indptr = vec![0usize; n + 1];
    for &r in rows {
        indptr[r + 1] += 1;
    }
    for r in 0..n {
        indptr[r + 1] += indptr[r];
    }
    let mut eids: Vec<usize> = (0..rows.len()).collect();
    eids.sort_by_key(|&e| rows[e]);
    if reverse_rows {
        for r in 0..n {
            eids[indptr[r]..indptr[r + 1]].reverse();
        }
    }
    (indptr, eids.iter().map(|&e| cols[e]).collect(), eids)
}

/// An index type of the C ABI: its constructors and dtype.
trait CIndex: Index + Dtype {
    const INFO: gk_index_type;
    /// # Safety
    /// As for the C constructors: arrays valid for their counts.
    unsafe fn coo(ns: i64, nd: i64, ne: i64, src: *const Self, dst: *const Self, out: *mut gk_graph) -> gk_status;
    /// # Safety
    /// As above.
    #[allow(clippy::too_many_arguments)]
    unsafe fn compressed(
        csc: bool,
        ns: i64,
        nd: i64,
        ne: i64,
        indptr: *const Self,
        indices: *const Self,
        eids: *const Self,
        out: *mut gk_graph,
    ) -> gk_status;
}

macro_rules! c_index {
    ($t:ty, $info:ident, $coo:ident, $csr:ident, $csc:ident) => {
        impl CIndex for $t {
            const INFO: gk_index_type = gk_index_type::$info;
            unsafe fn coo(ns: i64, nd: i64, ne: i64, s: *const $t, d: *const $t, out: *mut gk_graph) -> gk_status {
                // SAFETY: forwarded caller contract.
                unsafe { cg::$coo(ns, nd, ne, s, d, out) }
            }
            unsafe fn compressed(
                csc: bool,
                ns: i64,
                nd: i64,
                ne: i64,
                p: *const $t,
                i: *const $t,
                e: *const $t,
                out: *mut gk_graph,
            ) -> gk_status {
                // SAFETY: forwarded caller contract.
                unsafe { if csc { cg::$csc(ns, nd, ne, p, i, e, out) } else { cg::$csr(ns, nd, ne, p, i, e, out) } }
            }
        }
    };
}
c_index!(i32, GK_INDEX_INT32, gk_graph_from_coo_i32, gk_graph_from_csr_i32, gk_graph_from_csc_i32);
c_index!(i64, GK_INDEX_INT64, gk_graph_from_coo_i64, gk_graph_from_csr_i64, gk_graph_from_csc_i64);

fn ids<I: Index>(v: &[usize]) -> Vec<I> {
    v.iter().map(|&x| I::from_usize(x)).collect()
}

/// The graph as a C handle and as a Rust graph, built the same way. The C
/// arrays are exactly sized and dropped right after creation (the handle
/// owns copies).
fn graphs<I: CIndex>(build: Build) -> (gk_graph, Graph<I>) {
    let (src, dst) = edges();
    let ne = src.len() as i64;
    let mut h = gk_graph { id: 0 };
    let rust = match build {
        Build::Coo => {
            let (s, d) = (ids::<I>(&src), ids::<I>(&dst));
            // SAFETY: both arrays hold `ne` ids; `h` is writable.
            ok("from_coo", unsafe { I::coo(NS as i64, ND as i64, ne, s.as_ptr(), d.as_ptr(), &mut h) });
            Graph::from_coo(NS, ND, s, d)
        }
        Build::Csr | Build::Csc => {
            let csc = matches!(build, Build::Csc);
            let (rows, cols, n) = if csc { (&dst, &src, ND) } else { (&src, &dst, NS) };
            let (p, i, e) = compress(rows, cols, n, csc);
            let (p, i, e) = (ids::<I>(&p), ids::<I>(&i), ids::<I>(&e));
            // SAFETY: `p` holds n + 1 offsets, `i` and `e` `ne` ids.
            let s = unsafe { I::compressed(csc, NS as i64, ND as i64, ne, p.as_ptr(), i.as_ptr(), e.as_ptr(), &mut h) };
            ok("from_csr/csc", s);
            if csc { Graph::from_csc(NS, ND, p, i, Some(e)) } else { Graph::from_csr(NS, ND, p, i, Some(e)) }
        }
    };
    (h, rust.expect("valid graph"))
}

fn raw_op(k: K) -> RawOp {
    RawOp(match k {
        K::Add => 0,
        K::Sub => 1,
        K::Mul => 2,
        K::Div => 3,
        K::CopyLhs => 4,
        K::CopyRhs => 5,
        K::Dot => 6,
    })
}

fn raw_target(t: Target) -> RawTarget {
    RawTarget(match t {
        Target::Src => 0,
        Target::Edge => 1,
        Target::Dst => 2,
    })
}

fn raw_reduce(r: ReduceKind) -> RawReduce {
    RawReduce(match r {
        ReduceKind::Sum => 0,
        ReduceKind::Max => 1,
        ReduceKind::Min => 2,
        ReduceKind::Mean => 3,
    })
}

fn rows(t: Target) -> usize {
    match t {
        Target::Src => NS,
        Target::Dst => ND,
        Target::Edge => edges().0.len(),
    }
}

/// An operand: a Rust tensor and the same values in a caller's allocation.
struct Operand {
    rust: Tensor,
    c: Owned<f32>,
}

impl Operand {
    /// Values in ±[0.5, 2) (safe divisors), with ties for max/min.
    fn new(rng: &mut Rng, target: Target, feat: &[usize], layout: Layout) -> Operand {
        let mut shape = vec![rows(target)];
        shape.extend_from_slice(feat);
        let n = shape.iter().product();
        let values: Vec<f32> = (0..n)
            .map(|_| if rng.below(5) == 0 { 1.0 } else { rng.uniform(0.5, 2.0) * [1.0, -1.0][rng.below(2)] })
            .collect();
        Operand {
            rust: Tensor::from_vec(values.clone(), shape.clone()).unwrap(),
            c: Owned::new(&values, &shape, layout, -9.0),
        }
    }
}

/// An output buffer prefilled with NaN, shaped like a Rust result.
fn output(like: &Tensor, layout: Layout) -> Owned<f32> {
    Owned::filled(f32::NAN, like.shape(), layout)
}

/// The C pointer of an optional operand.
fn ptr(dl: &mut Option<DLTensor>) -> *mut DLTensor {
    dl.as_mut().map_or(std::ptr::null_mut(), |t| t as *mut DLTensor)
}

fn check_output(what: &str, got: &Owned<f32>, want: &Tensor) {
    exact(what, got.values(), want.data()).unwrap();
    assert!(got.guard_intact(), "{what}: wrote before its data");
}

/// Caller buffers (NaN) for the gradients a Rust backward pass returned.
struct GradBuffers {
    lhs: Option<Owned<f32>>,
    rhs: Option<Owned<f32>>,
}

impl GradBuffers {
    fn like(want: &Gradients, layout: Layout) -> GradBuffers {
        GradBuffers {
            lhs: want.lhs.as_ref().map(|t| output(t, layout)),
            rhs: want.rhs.as_ref().map(|t| output(t, layout)),
        }
    }

    /// The DLPack views of the lhs and rhs gradients (absent: NULL).
    fn dl(&mut self) -> (Option<DLTensor>, Option<DLTensor>) {
        (self.lhs.as_mut().map(Owned::dl), self.rhs.as_mut().map(Owned::dl))
    }

    fn check(&self, what: &str, want: &Gradients) {
        for (got, want) in [(&self.lhs, &want.lhs), (&self.rhs, &want.rhs)] {
            if let (Some(got), Some(want)) = (got, want) {
                check_output(&format!("{what} backward"), got, want);
            }
        }
    }
}

/// (op, lhs target, rhs target, lhs feature shape, rhs feature shape).
type Message = (K, Target, Target, &'static [usize], &'static [usize]);

const SPMM: [(Message, ReduceKind); 6] = [
    ((K::CopyLhs, Target::Src, Target::Edge, &[D], &[]), ReduceKind::Sum),
    ((K::CopyLhs, Target::Src, Target::Edge, &[D], &[]), ReduceKind::Max),
    ((K::Mul, Target::Src, Target::Edge, &[2, D], &[2, 1]), ReduceKind::Sum),
    ((K::Div, Target::Edge, Target::Dst, &[D], &[D]), ReduceKind::Min),
    ((K::Dot, Target::Src, Target::Dst, &[2, D], &[2, D]), ReduceKind::Mean),
    ((K::CopyRhs, Target::Src, Target::Edge, &[], &[1, D]), ReduceKind::Mean),
];

const SDDMM: [Message; 4] = [
    (K::Dot, Target::Src, Target::Dst, &[2, D], &[2, D]),
    (K::Add, Target::Src, Target::Edge, &[D], &[1]),
    (K::Sub, Target::Dst, Target::Src, &[2, 1], &[1, D]),
    (K::CopyLhs, Target::Edge, Target::Src, &[D], &[]),
];

/// The two operands of a message (absent where the operator ignores one).
fn operands(rng: &mut Rng, (op, lt, rt, ls, rs): Message, layout: Layout) -> (Option<Operand>, Option<Operand>) {
    let lhs = op.uses_lhs().then(|| Operand::new(rng, lt, ls, layout));
    let rhs = op.uses_rhs().then(|| Operand::new(rng, rt, rs, layout));
    (lhs, rhs)
}

fn spmm_forward_and_backward<I: CIndex>(h: gk_graph, g: &Graph<I>, layout: Layout, rng: &mut Rng) {
    let exec = Exec::from_env().unwrap();
    for (message, reduce) in SPMM {
        let (op, lt, rt, _, _) = message;
        let spec = SpmmSpec::new(op, lt, rt, reduce);
        let what = format!("{} [{}] {layout:?}", spec.name(), I::NAME);
        let (mut lhs, mut rhs) = operands(rng, message, layout);
        let want = exec.gspmm_alloc(g, spec, lhs.as_ref().map(|o| o.rust.view()), rhs.as_ref().map(|o| o.rust.view()));
        let want = want.unwrap();
        let mut out = output(&want.out, layout);
        let arg = |_: &Vec<I>| Owned::<I>::filled(I::from_usize(99), want.out.shape(), layout);
        let (mut arg_u, mut arg_e) = (want.arg_u.as_ref().map(arg), want.arg_e.as_ref().map(arg));
        let (mut tl, mut tr) = (lhs.as_mut().map(|o| o.c.dl()), rhs.as_mut().map(|o| o.c.dl()));
        let (mut tau, mut tae) = (arg_u.as_mut().map(Owned::dl), arg_e.as_mut().map(Owned::dl));
        let mut to = out.dl();
        // SAFETY: every tensor describes live memory of its shape, and the
        // outputs are distinct allocations.
        let s = unsafe {
            ops::gk_gspmm(
                h,
                raw_op(op),
                raw_target(lt),
                raw_target(rt),
                raw_reduce(reduce),
                ptr(&mut tl),
                ptr(&mut tr),
                &mut to,
                ptr(&mut tau),
                ptr(&mut tae),
            )
        };
        ok(&what, s);
        check_output(&what, &out, &want.out);
        for (got, want) in [(&arg_u, &want.arg_u), (&arg_e, &want.arg_e)] {
            if let (Some(got), Some(want)) = (got, want) {
                args_equal(&what, got.values(), want).unwrap();
                assert!(got.guard_intact(), "{what}: an arg output wrote before its data");
            }
        }

        // The gradient w.r.t. both operands, from an output gradient.
        let mut grad = Operand::new(rng, Target::Dst, &want.out.shape()[1..], layout);
        let inputs = SpmmGradInputs {
            lhs: lhs.as_ref().map(|o| o.rust.view()),
            rhs: rhs.as_ref().map(|o| o.rust.view()),
            grad_out: grad.rust.view(),
            arg_e: want.arg_e.as_deref(),
        };
        let want_grads = exec.gspmm_backward_alloc(g, spec, inputs, Wanted::BOTH).unwrap();
        let mut grads = GradBuffers::like(&want_grads, layout);
        let (mut tgl, mut tgr) = grads.dl();
        let tg = grad.c.dl();
        // SAFETY: as above; `arg_e` is the forward pass's output.
        let s = unsafe {
            ops::gk_gspmm_backward(
                h,
                raw_op(op),
                raw_target(lt),
                raw_target(rt),
                raw_reduce(reduce),
                ptr(&mut tl),
                ptr(&mut tr),
                &tg,
                ptr(&mut tae),
                ptr(&mut tgl),
                ptr(&mut tgr),
            )
        };
        ok(&format!("{what} backward"), s);
        grads.check(&what, &want_grads);
    }
}

fn sddmm_forward_and_backward<I: CIndex>(h: gk_graph, g: &Graph<I>, layout: Layout, rng: &mut Rng) {
    let exec = Exec::from_env().unwrap();
    for message in SDDMM {
        let (op, lt, rt, _, _) = message;
        let spec = SddmmSpec::new(op, lt, rt);
        let what = format!("{} [{}] {layout:?}", spec.name(), I::NAME);
        let (mut lhs, mut rhs) = operands(rng, message, layout);
        let (mut tl, mut tr) = (lhs.as_mut().map(|o| o.c.dl()), rhs.as_mut().map(|o| o.c.dl()));
        let (lv, rv) = (lhs.as_ref().map(|o| o.rust.view()), rhs.as_ref().map(|o| o.rust.view()));
        let want = exec.gsddmm_alloc(g, spec, lv, rv).unwrap();
        let mut out = output(&want, layout);
        let mut to = out.dl();
        // SAFETY: as in the g-SpMM check.
        let s = unsafe {
            ops::gk_gsddmm(h, raw_op(op), raw_target(lt), raw_target(rt), ptr(&mut tl), ptr(&mut tr), &mut to)
        };
        ok(&what, s);
        check_output(&what, &out, &want);

        let mut grad = Operand::new(rng, Target::Edge, &want.shape()[1..], layout);
        let want_grads = exec.gsddmm_backward_alloc(g, spec, lv, rv, grad.rust.view(), Wanted::BOTH).unwrap();
        let mut grads = GradBuffers::like(&want_grads, layout);
        let (mut tgl, mut tgr) = grads.dl();
        let tg = grad.c.dl();
        // SAFETY: as above.
        let s = unsafe {
            ops::gk_gsddmm_backward(
                h,
                raw_op(op),
                raw_target(lt),
                raw_target(rt),
                ptr(&mut tl),
                ptr(&mut tr),
                &tg,
                ptr(&mut tgl),
                ptr(&mut tgr),
            )
        };
        ok(&format!("{what} backward"), s);
        grads.check(&what, &want_grads);
    }
}

fn softmax_forward_and_backward<I: CIndex>(h: gk_graph, g: &Graph<I>, layout: Layout, rng: &mut Rng) {
    let exec = Exec::from_env().unwrap();
    let what = format!("edge_softmax [{}] {layout:?}", I::NAME);
    let mut logits = Operand::new(rng, Target::Edge, &[2, 1], layout);
    let want = exec.edge_softmax_alloc(g, logits.rust.view()).unwrap();
    let mut out = output(&want, layout);
    let (tl, mut to) = (logits.c.dl(), out.dl());
    // SAFETY: as in the g-SpMM check.
    ok(&what, unsafe { ops::gk_edge_softmax(h, &tl, &mut to) });
    check_output(&what, &out, &want);

    let mut grad = Operand::new(rng, Target::Edge, &[2, 1], layout);
    let want_grad = exec.edge_softmax_backward_alloc(g, want.view(), grad.rust.view()).unwrap();
    let mut soft = Owned::new(want.data(), want.shape(), layout, -9.0);
    let mut gl = output(&want_grad, layout);
    let (ts, tg, mut tgl) = (soft.dl(), grad.c.dl(), gl.dl());
    // SAFETY: as above.
    ok(&format!("{what} backward"), unsafe { ops::gk_edge_softmax_backward(h, &ts, &tg, &mut tgl) });
    check_output(&format!("{what} backward"), &gl, &want_grad);
}

fn every_entry_point_matches_the_rust_api<I: CIndex>(seed: u64) {
    let mut rng = Rng::new(seed);
    for build in [Build::Coo, Build::Csr, Build::Csc] {
        let (h, g) = graphs::<I>(build);
        let mut info =
            gk_graph_info { num_src: 0, num_dst: 0, num_edges: 0, index_type: gk_index_type::GK_INDEX_INT32 };
        // SAFETY: `info` is writable.
        ok("get_info", unsafe { cg::gk_graph_get_info(h, &mut info) });
        let expected = (NS as i64, ND as i64, edges().0.len() as i64, I::INFO);
        assert_eq!((info.num_src, info.num_dst, info.num_edges, info.index_type), expected, "{build:?}");
        for layout in Layout::ALL {
            spmm_forward_and_backward(h, &g, layout, &mut rng);
            sddmm_forward_and_backward(h, &g, layout, &mut rng);
            softmax_forward_and_backward(h, &g, layout, &mut rng);
        }
        ok("destroy", cg::gk_graph_destroy(h));
    }
}

#[test]
fn every_entry_point_matches_the_rust_api_int32() {
    every_entry_point_matches_the_rust_api::<i32>(11);
}

#[test]
fn every_entry_point_matches_the_rust_api_int64() {
    every_entry_point_matches_the_rust_api::<i64>(12);
}

/// Graphs without edges take empty edge tensors with NULL data, and their
/// g-SpMM rows are 0 with arg -1.
#[test]
fn edgeless_graphs_accept_empty_tensors_with_null_data() {
    let mut h = gk_graph { id: 0 };
    // SAFETY: no ids are read for zero edges; NULL arrays are allowed then.
    ok("from_coo", unsafe { cg::gk_graph_from_coo_i64(3, 2, 0, std::ptr::null(), std::ptr::null(), &mut h) });
    let (mut e_shape, mut e_out_shape) = ([0i64, D as i64], [0i64, D as i64]);
    let (te, mut te_out) =
        (dl::raw::<f32>(std::ptr::null_mut(), &mut e_shape), dl::raw::<f32>(std::ptr::null_mut(), &mut e_out_shape));
    // SAFETY: the tensors hold no elements; the shapes outlive the calls.
    ok("edge_softmax", unsafe { ops::gk_edge_softmax(h, &te, &mut te_out) });
    let mut x = Owned::new(&[1.5f32; 3 * D], &[3, D], Layout::Plain, 0.0);
    let tx = x.dl();
    let mut to_edges = dl::raw::<f32>(std::ptr::null_mut(), &mut e_shape);
    // SAFETY: as above.
    let s = unsafe {
        ops::gk_gsddmm(h, raw_op(K::Add), raw_target(Target::Src), raw_target(Target::Src), &tx, &tx, &mut to_edges)
    };
    ok("u_add_u on no edges", s);
    let mut out = Owned::filled(f32::NAN, &[2, D], Layout::Offset);
    let mut arg = Owned::filled(7i64, &[2, D], Layout::Offset);
    let (mut to, mut ta) = (out.dl(), arg.dl());
    // SAFETY: as above.
    let s = unsafe {
        ops::gk_gspmm(
            h,
            raw_op(K::CopyLhs),
            raw_target(Target::Src),
            raw_target(Target::Edge),
            raw_reduce(ReduceKind::Max),
            &tx,
            std::ptr::null(),
            &mut to,
            std::ptr::null_mut(),
            &mut ta,
        )
    };
    ok("copy_u_max on no edges", s);
    assert_eq!(out.values(), &[0.0; 2 * D]);
    assert_eq!(arg.values(), &[-1i64; 2 * D]);
    assert!(out.guard_intact() && arg.guard_intact());
    ok("destroy", cg::gk_graph_destroy(h));
}

/// A handle is usable from several threads at once, and a reverse handle
/// outlives the handle it came from.
#[test]
fn handles_are_shared_across_threads_and_reverse_handles_outlive_their_source() {
    let (h, g) = graphs::<i32>(Build::Coo);
    let mut r = gk_graph { id: 0 };
    // SAFETY: `r` is writable.
    ok("reverse", unsafe { cg::gk_graph_reverse(h, &mut r) });
    ok("destroy source", cg::gk_graph_destroy(h));
    let rev = g.reverse();
    let want = Exec::from_env()
        .unwrap()
        .gspmm_alloc(
            &rev,
            SpmmSpec::new(K::CopyLhs, Target::Src, Target::Edge, ReduceKind::Sum),
            Some(Tensor::from_vec((0..ND * D).map(|i| i as f32 * 0.5).collect(), vec![ND, D]).unwrap().view()),
            None,
        )
        .unwrap()
        .out;
    std::thread::scope(|scope| {
        for t in 0..3 {
            let want = &want;
            scope.spawn(move || {
                let values: Vec<f32> = (0..ND * D).map(|i| i as f32 * 0.5).collect();
                let mut x = Owned::new(&values, &[ND, D], Layout::Plain, 0.0);
                let mut out = output(want, Layout::Offset);
                let (tx, mut to) = (x.dl(), out.dl());
                // SAFETY: each thread owns its tensors; the handle is shared.
                let s = unsafe {
                    ops::gk_gspmm(
                        r,
                        raw_op(K::CopyLhs),
                        raw_target(Target::Src),
                        raw_target(Target::Edge),
                        raw_reduce(ReduceKind::Sum),
                        &tx,
                        std::ptr::null(),
                        &mut to,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                };
                ok(&format!("copy_u_sum on the reverse graph, thread {t}"), s);
                check_output("copy_u_sum on the reverse graph", &out, want);
            });
        }
    });
    ok("destroy reverse", cg::gk_graph_destroy(r));
    assert_eq!(cg::gk_graph_destroy(r), gk_status::GK_ERROR_INVALID_HANDLE, "a second destroy");
    assert!(message().contains("not live"), "message after a second destroy: {}", message());
}
