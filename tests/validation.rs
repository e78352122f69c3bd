//! Every typed error path of the op entry points, and that a failed call
//! leaves every output exactly as it was (all checks run before any write).

mod common;

use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{
    BackendKind, Error, Exec, Graph, SddmmBackwardIo, SddmmIo, SddmmSpec, SpmmBackwardIo, SpmmGradInputs, SpmmIo,
    SpmmSpec, Tensor, TensorMut, TensorRef, Wanted, segment,
};

const SENTINEL: f32 = 7.25;

/// 3 sources, 4 destinations, 5 edges; destination 3 has no in-edges.
fn graph() -> Graph<i32> {
    Graph::from_coo(3, 4, vec![0, 1, 2, 0, 2], vec![0, 0, 1, 2, 2]).unwrap()
}

fn exec() -> Exec {
    common::backends::reference()
}

fn filled(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(vec![SENTINEL; n], shape.to_vec()).unwrap()
}

fn untouched(t: &Tensor) -> bool {
    t.data().iter().all(|&x| x == SENTINEL)
}

fn ones(shape: &[usize]) -> Tensor {
    Tensor::from_vec(vec![1.0; shape.iter().product()], shape.to_vec()).unwrap()
}

/// Runs a g-SpMM that must fail with an error matching `check`, and checks
/// that the output and both arg outputs were not written.
fn spmm_fails(
    spec: &str,
    lhs: Option<&Tensor>,
    rhs: Option<&Tensor>,
    out_shape: &[usize],
    args: Option<usize>,
    check: impl Fn(&Error) -> bool,
) {
    let g = graph();
    let mut out = filled(out_shape);
    let (mut au, mut ae) = (vec![99i32; args.unwrap_or(0)], vec![99i32; args.unwrap_or(0)]);
    let io = SpmmIo {
        lhs: lhs.map(Tensor::view),
        rhs: rhs.map(Tensor::view),
        out: out.view_mut(),
        arg_u: args.map(|_| &mut au[..]),
        arg_e: args.map(|_| &mut ae[..]),
    };
    let err = exec().gspmm(&g, SpmmSpec::from_name(spec).unwrap(), io).unwrap_err();
    assert!(check(&err), "{spec}: unexpected error {err:?}");
    assert!(untouched(&out), "{spec}: a failed call wrote its output");
    assert!(au.iter().chain(&ae).all(|&a| a == 99), "{spec}: a failed call wrote an arg output");
}

#[test]
fn gspmm_errors_are_typed_and_write_nothing() {
    let x = ones(&[3, 4]);
    let w = ones(&[5, 4]);
    // Missing operand.
    spmm_fails(
        "u_mul_e_sum",
        Some(&x),
        None,
        &[4, 4],
        None,
        |e| matches!(e, Error::MissingOperand(m) if m.contains("rhs")),
    );
    spmm_fails("copy_e_sum", None, None, &[4, 4], None, |e| matches!(e, Error::MissingOperand(_)));
    // Wrong leading size: x on edges needs 5 rows.
    spmm_fails(
        "e_mul_u_sum",
        Some(&x),
        Some(&x),
        &[4, 4],
        None,
        |e| matches!(e, Error::BadShape { expected, actual, .. } if expected == &[5, 4] && actual == &[3, 4]),
    );
    // Incompatible broadcast names both shapes.
    let bad = ones(&[5, 3]);
    spmm_fails("u_add_e_max", Some(&x), Some(&bad), &[4, 4], Some(16), |e| {
        matches!(e, Error::ShapeMismatch { lhs, rhs, .. } if lhs == &[4] && rhs == &[3])
            && e.to_string().contains("[4]")
            && e.to_string().contains("[3]")
    });
    let dot_bad = ones(&[5, 2, 4]);
    spmm_fails("u_dot_e_sum", Some(&ones(&[3, 2, 3])), Some(&dot_bad), &[4, 2, 1], None, |e| {
        matches!(e, Error::ShapeMismatch { .. })
    });
    // Wrong output shape (rows and features).
    spmm_fails(
        "u_mul_e_sum",
        Some(&x),
        Some(&w),
        &[3, 4],
        None,
        |e| matches!(e, Error::BadShape { expected, actual, .. } if expected == &[4, 4] && actual == &[3, 4]),
    );
    spmm_fails(
        "u_dot_e_sum",
        Some(&x),
        Some(&w),
        &[4, 4],
        None,
        |e| matches!(e, Error::BadShape { expected, .. } if expected == &[4, 1]),
    );
    // Arg outputs on a reducer without them, and of the wrong length.
    spmm_fails(
        "copy_u_sum",
        Some(&x),
        None,
        &[4, 4],
        Some(16),
        |e| matches!(e, Error::MissingOperand(m) if m.contains("arg_u")),
    );
    spmm_fails("copy_u_max", Some(&x), None, &[4, 4], Some(15), |e| {
        matches!(e, Error::LengthMismatch { what: "arg_u", expected: 16, actual: 15 })
    });
}

#[test]
fn gsddmm_and_edge_softmax_errors_are_typed_and_write_nothing() {
    let g = graph();
    let x = ones(&[3, 4]);
    let y = ones(&[4, 4]);
    let y2 = ones(&[4, 2]);
    // (op, lhs, rhs, output shape)
    let cases = [
        ("u_dot_v", Some(&x), None::<&Tensor>, vec![5, 1]),
        ("u_dot_v", Some(&x), Some(&x), vec![5, 1]),
        ("u_add_v", Some(&x), Some(&y2), vec![5, 4]),
        ("u_add_v", Some(&x), Some(&y), vec![4, 4]),
        ("u_dot_v", Some(&x), Some(&y), vec![5, 4]),
    ];
    for (name, l, r, shape) in cases {
        let mut out = filled(&shape);
        let io = SddmmIo { lhs: l.map(Tensor::view), rhs: r.map(Tensor::view), out: out.view_mut() };
        let err = exec().gsddmm(&g, SddmmSpec::from_name(name).unwrap(), io).unwrap_err();
        assert!(
            matches!(err, Error::MissingOperand(_) | Error::BadShape { .. } | Error::ShapeMismatch { .. }),
            "{name}: {err:?}"
        );
        assert!(untouched(&out), "{name} {shape:?}: a failed call wrote its output");
    }
    // Edge softmax: logits need one row per edge; output and gradients must match.
    let mut out = filled(&[4, 2]);
    let err = exec().edge_softmax(&g, ones(&[4, 2]).view(), out.view_mut()).unwrap_err();
    assert!(matches!(err, Error::BadShape { ref expected, .. } if expected == &[5, 2]), "{err:?}");
    assert!(untouched(&out));
    let mut out = filled(&[5, 3]);
    assert!(matches!(exec().edge_softmax(&g, ones(&[5, 2]).view(), out.view_mut()), Err(Error::BadShape { .. })));
    assert!(untouched(&out));
    let mut grad = filled(&[5, 2]);
    let err =
        exec().edge_softmax_backward(&g, ones(&[5, 2]).view(), ones(&[5, 1]).view(), grad.view_mut()).unwrap_err();
    assert!(matches!(err, Error::BadShape { .. }), "{err:?}");
    assert!(untouched(&grad));
}

struct Backward {
    lhs: Tensor,
    rhs: Tensor,
    grad_out: Tensor,
    arg_e: Vec<i32>,
}

/// `u_mul_e_max` on [`graph`] with `[3, 2]` sources and `[5, 2]` edge weights.
fn backward_inputs(reduce: ReduceKind) -> Backward {
    let g = graph();
    let lhs = Tensor::from_vec((0..6).map(|i| i as f32 * 0.5 - 1.0).collect(), vec![3, 2]).unwrap();
    let rhs = Tensor::from_vec((0..10).map(|i| 1.0 + i as f32 * 0.25).collect(), vec![5, 2]).unwrap();
    let spec = SpmmSpec::new(BinaryOpKind::Mul, Target::Src, Target::Edge, reduce);
    let fwd = exec().gspmm_alloc(&g, spec, Some(lhs.view()), Some(rhs.view())).unwrap();
    Backward { lhs, rhs, grad_out: ones(&[4, 2]), arg_e: fwd.arg_e.unwrap_or_default() }
}

/// Runs a g-SpMM backward pass that must fail; neither gradient may be written.
fn spmm_backward_fails(
    reduce: ReduceKind,
    edit: impl FnOnce(&mut Backward),
    grad_shapes: (&[usize], &[usize]),
    with_arg: bool,
    check: impl Fn(&Error) -> bool,
) {
    let g = graph();
    let mut b = backward_inputs(reduce);
    edit(&mut b);
    let (mut gl, mut gr) = (filled(grad_shapes.0), filled(grad_shapes.1));
    let io = SpmmBackwardIo {
        lhs: Some(b.lhs.view()),
        rhs: Some(b.rhs.view()),
        grad_out: b.grad_out.view(),
        arg_e: with_arg.then_some(&b.arg_e[..]),
        grad_lhs: Some(gl.view_mut()),
        grad_rhs: Some(gr.view_mut()),
    };
    let spec = SpmmSpec::new(BinaryOpKind::Mul, Target::Src, Target::Edge, reduce);
    let err = exec().gspmm_backward(&g, spec, io).unwrap_err();
    assert!(check(&err), "{reduce:?}: unexpected error {err:?}");
    assert!(untouched(&gl) && untouched(&gr), "{reduce:?} {err}: a failed backward pass wrote a gradient");
}

#[test]
fn gspmm_backward_errors_are_typed_and_write_nothing() {
    let ok = (&[3usize, 2][..], &[5usize, 2][..]);
    // grad_out of the wrong shape.
    spmm_backward_fails(
        ReduceKind::Sum,
        |b| b.grad_out = ones(&[4, 3]),
        ok,
        false,
        |e| matches!(e, Error::BadShape { expected, .. } if expected == &[4, 2]),
    );
    // A gradient of the wrong shape: the *rhs* one, so the lhs check passed first.
    spmm_backward_fails(
        ReduceKind::Sum,
        |_| {},
        (&[3, 2], &[5, 1]),
        false,
        |e| matches!(e, Error::BadShape { what, .. } if what.contains("grad_rhs")),
    );
    // Max without arg_e; sum with arg_e.
    spmm_backward_fails(
        ReduceKind::Max,
        |_| {},
        ok,
        false,
        |e| matches!(e, Error::MissingOperand(m) if m.contains("arg_e")),
    );
    spmm_backward_fails(
        ReduceKind::Sum,
        |b| b.arg_e = vec![0; 8],
        ok,
        true,
        |e| matches!(e, Error::MissingOperand(m) if m.contains("arg_e")),
    );
    // arg_e of the wrong length.
    spmm_backward_fails(
        ReduceKind::Min,
        |b| b.arg_e.pop().map(|_| ()).unwrap(),
        ok,
        true,
        |e| matches!(e, Error::LengthMismatch { what: "arg_e", expected: 8, actual: 7 }),
    );
    // arg_e values the forward pass cannot produce.
    spmm_backward_fails(
        ReduceKind::Max,
        |b| b.arg_e[0] = 5,
        ok,
        true,
        |e| matches!(e, Error::BadArg { what: "arg_e", position: 0, value: 5, .. }),
    );
    spmm_backward_fails(
        ReduceKind::Max,
        |b| b.arg_e[0] = 2,
        ok,
        true,
        |e| matches!(e, Error::BadArg { position: 0, value: 2, problem, .. } if problem.contains("in-edge")),
    );
    spmm_backward_fails(
        ReduceKind::Max,
        |b| b.arg_e[1] = -1,
        ok,
        true,
        |e| matches!(e, Error::BadArg { position: 1, value: -1, .. }),
    );
    spmm_backward_fails(
        ReduceKind::Max,
        |b| b.arg_e[7] = 4,
        ok,
        true,
        |e| matches!(e, Error::BadArg { position: 7, .. }),
    );
    // A missing operand.
    let g = graph();
    let b = backward_inputs(ReduceKind::Sum);
    let mut gl = filled(&[3, 2]);
    let io = SpmmBackwardIo {
        lhs: Some(b.lhs.view()),
        rhs: None,
        grad_out: b.grad_out.view(),
        arg_e: None,
        grad_lhs: Some(gl.view_mut()),
        grad_rhs: None,
    };
    let err = exec().gspmm_backward(&g, SpmmSpec::from_name("u_mul_e_sum").unwrap(), io).unwrap_err();
    assert!(matches!(err, Error::MissingOperand(_)), "{err:?}");
    assert!(untouched(&gl));
    // A gradient for an operand the operator does not read.
    let mut gr = filled(&[5, 2]);
    let io = SpmmBackwardIo {
        lhs: Some(b.lhs.view()),
        rhs: Some(b.rhs.view()),
        grad_out: b.grad_out.view(),
        arg_e: None,
        grad_lhs: None,
        grad_rhs: Some(gr.view_mut()),
    };
    let err = exec().gspmm_backward(&g, SpmmSpec::from_name("copy_u_sum").unwrap(), io).unwrap_err();
    assert!(matches!(err, Error::MissingOperand(ref m) if m.contains("grad_rhs")), "{err:?}");
    assert!(untouched(&gr));
}

#[test]
fn gsddmm_backward_errors_are_typed_and_write_nothing() {
    let g = graph();
    let (x, y) = (ones(&[3, 4]), ones(&[4, 4]));
    let spec = SddmmSpec::from_name("u_dot_v").unwrap();
    for (grad_out_shape, gl_shape) in [(vec![5, 4], vec![3, 4]), (vec![5, 1], vec![3, 1]), (vec![4, 1], vec![3, 4])] {
        let go = ones(&grad_out_shape);
        let (mut gl, mut gr) = (filled(&gl_shape), filled(&[4, 4]));
        let io = SddmmBackwardIo {
            lhs: Some(x.view()),
            rhs: Some(y.view()),
            grad_out: go.view(),
            grad_lhs: Some(gl.view_mut()),
            grad_rhs: Some(gr.view_mut()),
        };
        let err = exec().gsddmm_backward(&g, spec, io).unwrap_err();
        assert!(matches!(err, Error::BadShape { .. }), "{err:?}");
        assert!(untouched(&gl) && untouched(&gr));
    }
}

#[test]
fn an_unavailable_forced_backend_is_an_error_and_writes_nothing() {
    let g = graph();
    let Some(&kind) = BackendKind::ALL.iter().find(|k| k.availability().is_err()) else {
        eprintln!("note: every backend of this build is available; nothing to check");
        return;
    };
    let x = ones(&[3, 4]);
    let mut out = filled(&[4, 4]);
    let err = Exec::forced(kind)
        .gspmm(&g, SpmmSpec::from_name("copy_u_sum").unwrap(), SpmmIo::new(Some(x.view()), None, out.view_mut()))
        .unwrap_err();
    assert!(matches!(err, Error::BackendUnavailable { .. }), "{err:?}");
    assert!(untouched(&out));
    let mut gl = filled(&[3, 4]);
    let go = ones(&[4, 4]);
    let io = SpmmBackwardIo {
        lhs: Some(x.view()),
        rhs: None,
        grad_out: go.view(),
        arg_e: None,
        grad_lhs: Some(gl.view_mut()),
        grad_rhs: None,
    };
    let err = Exec::forced(kind).gspmm_backward(&g, SpmmSpec::from_name("copy_u_sum").unwrap(), io).unwrap_err();
    assert!(matches!(err, Error::BackendUnavailable { .. }), "{err:?}");
    assert!(untouched(&gl));
}

#[test]
fn one_gradient_alone_equals_the_allocating_pair() {
    let g = graph();
    for reduce in ReduceKind::ALL {
        let b = backward_inputs(reduce);
        let spec = SpmmSpec::new(BinaryOpKind::Mul, Target::Src, Target::Edge, reduce);
        let arg = reduce.has_arg().then_some(&b.arg_e[..]);
        let inputs = SpmmGradInputs {
            lhs: Some(b.lhs.view()),
            rhs: Some(b.rhs.view()),
            grad_out: b.grad_out.view(),
            arg_e: arg,
        };
        let both = exec().gspmm_backward_alloc(&g, spec, inputs, Wanted::BOTH).unwrap();
        let only_rhs = exec().gspmm_backward_alloc(&g, spec, inputs, Wanted { lhs: false, rhs: true }).unwrap();
        assert!(only_rhs.lhs.is_none());
        assert_eq!(only_rhs.rhs, both.rhs);
        let mut gl = filled(&[3, 2]);
        let io = SpmmBackwardIo {
            lhs: Some(b.lhs.view()),
            rhs: Some(b.rhs.view()),
            grad_out: b.grad_out.view(),
            arg_e: arg,
            grad_lhs: Some(gl.view_mut()),
            grad_rhs: None,
        };
        exec().gspmm_backward(&g, spec, io).unwrap();
        assert_eq!(Some(&gl), both.lhs.as_ref(), "{reduce:?}: overwrite mode, same values");
    }
    // Requesting a gradient of an absent operand from the allocating form.
    let go = ones(&[4, 2]);
    let inputs = SpmmGradInputs::<i32> { lhs: None, rhs: None, grad_out: go.view(), arg_e: None };
    let err = exec().gspmm_backward_alloc(&g, SpmmSpec::from_name("copy_u_sum").unwrap(), inputs, Wanted::BOTH);
    assert!(matches!(err, Err(Error::MissingOperand(_))), "{err:?}");
}

#[test]
fn segment_errors_are_typed_and_write_nothing() {
    let x = ones(&[5, 2]);
    let bad_offsets: [(&[i64], usize); 4] = [(&[], 0), (&[1, 5], 0), (&[0, 3, 2, 5], 2), (&[0, 2, 4], 2)];
    for (offsets, position) in bad_offsets {
        let mut out = filled(&[offsets.len().saturating_sub(1).max(1), 2]);
        let err = segment::segment_reduce(ReduceKind::Sum, offsets, x.view(), out.view_mut(), None).unwrap_err();
        assert!(matches!(err, Error::BadIndptr { position: p, .. } if p == position), "{offsets:?}: {err:?}");
        assert!(untouched(&out));
    }
    let offsets: [i64; 3] = [0, 2, 5];
    let mut out = filled(&[3, 2]);
    let err = segment::segment_reduce(ReduceKind::Max, &offsets, x.view(), out.view_mut(), None).unwrap_err();
    assert!(matches!(err, Error::BadShape { ref expected, .. } if expected == &[2, 2]), "{err:?}");
    let mut out = filled(&[2, 2]);
    let mut arg = vec![9i64; 4];
    let err =
        segment::segment_reduce(ReduceKind::Mean, &offsets, x.view(), out.view_mut(), Some(&mut arg)).unwrap_err();
    assert!(matches!(err, Error::MissingOperand(_)), "{err:?}");
    let mut arg = vec![9i64; 3];
    let err = segment::segment_reduce(ReduceKind::Min, &offsets, x.view(), out.view_mut(), Some(&mut arg)).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 4, actual: 3, .. }), "{err:?}");
    assert!(untouched(&out) && arg.iter().all(|&a| a == 9));
    // Backward: max needs arg, and each arg row must lie in its segment.
    let go = ones(&[2, 2]);
    let mut grad = filled(&[5, 2]);
    let err =
        segment::segment_reduce_backward(ReduceKind::Max, &offsets, go.view(), None, grad.view_mut()).unwrap_err();
    assert!(matches!(err, Error::MissingOperand(_)), "{err:?}");
    let err =
        segment::segment_reduce_backward(ReduceKind::Max, &offsets, go.view(), Some(&[0, 1, 1, 4]), grad.view_mut())
            .unwrap_err();
    assert!(matches!(err, Error::BadArg { position: 2, value: 1, .. }), "{err:?}");
    let err =
        segment::segment_reduce_backward(ReduceKind::Max, &offsets, go.view(), Some(&[0, 1, -1, 4]), grad.view_mut())
            .unwrap_err();
    assert!(matches!(err, Error::BadArg { position: 2, value: -1, .. }), "{err:?}");
    let err = segment::segment_reduce_backward(ReduceKind::Sum, &offsets, ones(&[3, 2]).view(), None, grad.view_mut())
        .unwrap_err();
    assert!(matches!(err, Error::BadShape { .. }), "{err:?}");
    assert!(untouched(&grad));
    // Lengths.
    assert_eq!(segment::offsets_from_lengths(&[2i32, 0, 3]).unwrap(), vec![0, 2, 2, 5]);
    assert!(matches!(segment::offsets_from_lengths(&[2i32, -1]), Err(Error::IndexOutOfRange { position: 1, .. })));
    assert!(matches!(
        segment::offsets_from_lengths(&[i32::MAX, 1]),
        Err(Error::CountOverflow { index_type: "int32", .. })
    ));
}

#[test]
fn tensor_views_are_checked() {
    let data = [0.0f32; 6];
    assert!(matches!(TensorRef::new(&data, &[4, 2]), Err(Error::TensorSize { expected: 8, actual: 6, .. })));
    let mut data = [0.0f32; 6];
    assert!(TensorMut::new(&mut data, &[2, 3]).is_ok());
}
