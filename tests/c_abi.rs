//! Builds the C and C++ consumers in `tests/c/` with the system `cc`/`c++`
//! against the static library, runs them, and compares the C++ GCN's
//! outputs with the same model computed through the Rust API on the
//! reference backend.
//!
//! The archive and its link flags come from one `cargo rustc --lib --
//! --print native-static-libs` run into `<target>/c-abi/` (a separate target
//! directory, so the extra rustc flag does not invalidate the test's own
//! build; the first run compiles the library once more). With the `mkl`
//! feature the MKL archives are linked from `$MKLROOT/lib`.
//!
//! The segment-reduction calls at the end are made from Rust; they are the
//! part of this file that runs under Miri (`.ci/miri`), the C programs
//! being out of its reach.

mod common;

use common::dl;
use common::rng::Rng;
use gnnkern::{BackendKind, Exec, Graph, SpmmBackwardIo, SpmmIo, SpmmSpec, Tensor};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `<target>/<profile>` of this test binary (`.../deps/c_abi-*` -> two up).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps layout").to_path_buf()
}

struct StaticLib {
    archive: PathBuf,
    native_libs: Vec<String>,
}

/// Builds `libgnnkern.a` and reads the native libraries it needs.
fn static_lib() -> &'static StaticLib {
    static LIB: OnceLock<StaticLib> = OnceLock::new();
    LIB.get_or_init(|| {
        let profile_dir = profile_dir();
        let profile_name = profile_dir.file_name().and_then(|n| n.to_str()).expect("profile dir name").to_string();
        let cargo_profile = if profile_name == "debug" { "dev".to_string() } else { profile_name.clone() };
        let target_dir = profile_dir.parent().expect("target dir").join("c-abi");
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(ROOT)
            .args(["rustc", "--lib", "-p", "gnnkern", "--crate-type", "staticlib", "--profile", &cargo_profile])
            .arg("--target-dir")
            .arg(&target_dir);
        if cfg!(feature = "mkl") {
            cmd.args(["--features", "mkl"]);
        }
        cmd.args(["--", "--print", "native-static-libs"]);
        let output = cmd.output().expect("run cargo rustc");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "cargo rustc failed:\n{stderr}");
        let line = stderr
            .lines()
            .find_map(|l| l.split_once("native-static-libs: ").map(|(_, libs)| libs.to_string()))
            .unwrap_or_else(|| panic!("no native-static-libs note in cargo's output:\n{stderr}"));
        let archive = target_dir.join(&profile_name).join("libgnnkern.a");
        assert!(archive.is_file(), "{} was not built", archive.display());
        StaticLib { archive, native_libs: line.split_whitespace().map(str::to_string).collect() }
    })
}

/// Compiles `source` with `compiler` and the library into `<profile>/c-abi-bin/<name>`.
fn build(compiler: &str, std: &str, source: &str, name: &str) -> PathBuf {
    let lib = static_lib();
    let out_dir = profile_dir().join("c-abi-bin");
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join(name);
    let mut cmd = Command::new(compiler);
    cmd.arg(std)
        .args(["-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(Path::new(ROOT).join("include"))
        .arg(Path::new(ROOT).join("tests/c").join(source))
        .arg(&lib.archive);
    if cfg!(feature = "mkl") {
        let root = std::env::var("MKLROOT").expect("the mkl feature's C link needs MKLROOT (see docs/C_ABI.md)");
        cmd.arg(format!("-L{root}/lib"));
    }
    cmd.args(&lib.native_libs).arg("-lm").arg("-o").arg(&exe);
    let output = cmd.output().unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        output.status.success(),
        "{compiler} {source} failed:\n{:?}\n{}",
        cmd,
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

fn run(exe: &Path, args: &[&Path]) -> String {
    let output = Command::new(exe).args(args).output().expect("run consumer");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        exe.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
#[cfg_attr(miri, ignore = "Miri runs no C compiler and no C code")]
fn c_smoke_program_passes() {
    let exe = build("cc", "-std=c11", "smoke.c", "smoke");
    let stdout = run(&exe, &[]);
    assert!(stdout.contains("checks passed"), "{stdout}");
}

/// The first fenced C block after `heading` in `doc` (fence lines excluded).
fn c_block<'d>(doc: &'d str, heading: &str) -> &'d str {
    let section = &doc[doc.find(heading).unwrap_or_else(|| panic!("no {heading:?} in the doc"))..];
    let start = section.find("```c\n").expect("a ```c block after the heading") + "```c\n".len();
    let len = section[start..].find("```\n").expect("the block's closing fence");
    &section[start..start + len]
}

/// The example of docs/C_ABI.md is tests/c/example.c, verbatim, and it
/// builds against the archive and prints what its comment promises.
#[test]
#[cfg_attr(miri, ignore = "Miri runs no C compiler and no C code")]
fn c_abi_doc_example_is_the_tested_file_and_runs() {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/C_ABI.md")).unwrap();
    let file = std::fs::read_to_string(Path::new(ROOT).join("tests/c/example.c")).unwrap();
    assert_eq!(c_block(&doc, "\n## Example\n"), file, "docs/C_ABI.md's example differs from tests/c/example.c");
    let exe = build("cc", "-std=c11", "example.c", "example");
    let stdout = run(&exe, &[]);
    assert_eq!(stdout, "out[1] = (6, 8)\n");
}

/// Row-major `[rows, cols]` dense helpers, looping in the C++ program's order.
fn matmul(a: &[f32], b: &[f32], n: usize, k: usize, m: usize) -> Vec<f32> {
    let mut c = vec![0.0; n * m];
    for i in 0..n {
        for p in 0..k {
            for j in 0..m {
                c[i * m + j] += a[i * k + p] * b[p * m + j];
            }
        }
    }
    c
}

fn matmul_tn(a: &[f32], b: &[f32], n: usize, k: usize, m: usize) -> Vec<f32> {
    // a: [n, k], b: [n, m] -> aᵀ b: [k, m]
    let mut c = vec![0.0; k * m];
    for p in 0..n {
        for i in 0..k {
            for j in 0..m {
                c[i * m + j] += a[p * k + i] * b[p * m + j];
            }
        }
    }
    c
}

fn matmul_nt(a: &[f32], b: &[f32], n: usize, k: usize, m: usize) -> Vec<f32> {
    // a: [n, k], b: [m, k] -> a bᵀ: [n, m]
    let mut c = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            for p in 0..k {
                c[i * m + j] += a[i * k + p] * b[j * k + p];
            }
        }
    }
    c
}

/// The C++ program's model through the Rust API (reference backend).
struct Gcn {
    graph: Graph<i64>,
    w: Tensor,
    exec: Exec,
}

impl Gcn {
    fn aggregate(&self, h: &Tensor) -> Tensor {
        let mut out = Tensor::zeros(&[self.graph.num_dst(), h.shape()[1]]).unwrap();
        let spec = SpmmSpec::from_name("u_mul_e_sum").unwrap();
        self.exec.gspmm(&self.graph, spec, SpmmIo::new(Some(h.view()), Some(self.w.view()), out.view_mut())).unwrap();
        out
    }

    fn aggregate_backward(&self, h: &Tensor, grad: &Tensor) -> (Tensor, Tensor) {
        let mut gh = Tensor::zeros(h.shape()).unwrap();
        let mut gw = Tensor::zeros(self.w.shape()).unwrap();
        let spec = SpmmSpec::from_name("u_mul_e_sum").unwrap();
        let io = SpmmBackwardIo {
            lhs: Some(h.view()),
            rhs: Some(self.w.view()),
            grad_out: grad.view(),
            arg_e: None,
            grad_lhs: Some(gh.view_mut()),
            grad_rhs: Some(gw.view_mut()),
        };
        self.exec.gspmm_backward(&self.graph, spec, io).unwrap();
        (gh, gw)
    }
}

fn assert_close(name: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name}: length");
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1.0);
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= 1e-4 * scale, "{name}[{i}]: C++ {a} vs Rust {b} (scale {scale})");
    }
}

#[test]
#[cfg_attr(miri, ignore = "Miri runs no C compiler and no C code")]
fn cpp_gcn_framework_matches_rust_reference() {
    let mut rng = Rng::new(2024);
    let (n, e, din, dhid, dout) = (40usize, 300usize, 9usize, 17usize, 5usize);
    // Random edges plus one in-edge per node so no degree is zero.
    let (mut src, mut dst): (Vec<i64>, Vec<i64>) =
        (0..e - n).map(|_| (rng.below(n) as i64, rng.below(n) as i64)).unzip();
    for v in 0..n {
        src.push(((v + 1) % n) as i64);
        dst.push(v as i64);
    }
    let x = rng.vec(n * din, -1.0, 1.0);
    let w1 = rng.vec(din * dhid, -1.0, 1.0);
    let w2 = rng.vec(dhid * dout, -1.0, 1.0);
    let t = rng.vec(n * dout, -1.0, 1.0);

    let dir = profile_dir().join("c-abi-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("gcn_input.txt");
    let mut text = format!("{n} {e} {din} {dhid} {dout}\n");
    for part in [src.iter().map(i64::to_string).collect::<Vec<_>>(), dst.iter().map(i64::to_string).collect()] {
        text += &part.join(" ");
        text.push('\n');
    }
    for part in [&x, &w1, &w2, &t] {
        text += &part.iter().map(|v| format!("{v:.9e}")).collect::<Vec<_>>().join(" ");
        text.push('\n');
    }
    std::fs::write(&input, text).unwrap();

    let exe = build("c++", "-std=c++17", "framework.cpp", "framework");
    let output = dir.join("gcn_output.txt");
    let stdout = run(&exe, &[&input, &output]);
    assert!(stdout.contains("GCN forward/backward"), "{stdout}");
    let written = std::fs::read_to_string(&output).unwrap();
    let mut tokens = written.split_whitespace();
    let mut section = |name: &str| -> Vec<f32> {
        assert_eq!(tokens.next(), Some(name), "section order");
        let len: usize = tokens.next().unwrap().parse().unwrap();
        (0..len).map(|_| tokens.next().unwrap().parse().unwrap()).collect()
    };
    let (z2_c, dx_c, dw1_c, dw2_c, dwe_c) =
        (section("z2"), section("dx"), section("dw1"), section("dw2"), section("dw_edge"));

    // The same model in Rust.
    let graph = Graph::<i64>::from_coo(n, n, src.clone(), dst.clone()).unwrap();
    let (outdeg, indeg) = (graph.out_degrees(), graph.in_degrees());
    let w: Vec<f32> = (0..e)
        .map(|k| (1.0 / ((outdeg[src[k] as usize] as f64) * (indeg[dst[k] as usize] as f64)).sqrt()) as f32)
        .collect();
    let gcn = Gcn { graph, w: Tensor::from_vec(w, vec![e, 1]).unwrap(), exec: Exec::forced(BackendKind::Reference) };
    let x_t = Tensor::from_vec(x.clone(), vec![n, din]).unwrap();
    let a1 = gcn.aggregate(&x_t);
    let z1 = matmul(a1.data(), &w1, n, din, dhid);
    let h1 = Tensor::from_vec(z1.iter().map(|v| v.max(0.0)).collect(), vec![n, dhid]).unwrap();
    let a2 = gcn.aggregate(&h1);
    let z2 = matmul(a2.data(), &w2, n, dhid, dout);
    let dw2 = matmul_tn(a2.data(), &t, n, dhid, dout);
    let da2 = Tensor::from_vec(matmul_nt(&t, &w2, n, dout, dhid), vec![n, dhid]).unwrap();
    let (dh1, dwe2) = gcn.aggregate_backward(&h1, &da2);
    let dz1: Vec<f32> = dh1.data().iter().zip(&z1).map(|(g, z)| if *z > 0.0 { *g } else { 0.0 }).collect();
    let dw1 = matmul_tn(a1.data(), &dz1, n, din, dhid);
    let da1 = Tensor::from_vec(matmul_nt(&dz1, &w1, n, dhid, din), vec![n, din]).unwrap();
    let (dx, dwe1) = gcn.aggregate_backward(&x_t, &da1);
    let dwe: Vec<f32> = dwe1.data().iter().zip(dwe2.data()).map(|(a, b)| a + b).collect();

    assert_close("z2", &z2_c, &z2);
    assert_close("dx", &dx_c, dx.data());
    assert_close("dw1", &dw1_c, &dw1);
    assert_close("dw2", &dw2_c, &dw2);
    assert_close("dw_edge", &dwe_c, &dwe);
}

mod segment_abi {
    use super::common::rng::Rng;
    use super::dl::tensor;
    use gnnkern::capi::enums::{RawReduce, RawSegments, gk_reduce, gk_segments};
    use gnnkern::capi::segment::{gk_segment_reduce, gk_segment_reduce_backward};
    use gnnkern::capi::status::{gk_last_error_message, gk_status};
    use gnnkern::op::ReduceKind;
    use gnnkern::{Index, Tensor, segment};

    const REDUCERS: [(gk_reduce, ReduceKind); 4] = [
        (gk_reduce::GK_REDUCE_SUM, ReduceKind::Sum),
        (gk_reduce::GK_REDUCE_MAX, ReduceKind::Max),
        (gk_reduce::GK_REDUCE_MIN, ReduceKind::Min),
        (gk_reduce::GK_REDUCE_MEAN, ReduceKind::Mean),
    ];

    fn message() -> String {
        // SAFETY: a valid C string owned by this thread.
        unsafe { std::ffi::CStr::from_ptr(gk_last_error_message()) }.to_string_lossy().into_owned()
    }

    /// Lengths with empty segments, a long one, and one of a single row.
    fn lengths<I: Index>() -> Vec<I> {
        [3usize, 0, 1, 7, 0, 2].iter().map(|&l| I::from_usize(l)).collect()
    }

    fn check_forward_and_backward<I: Index + super::dl::Dtype>() {
        let mut rng = Rng::new(7);
        let lens = lengths::<I>();
        let offsets = segment::offsets_from_lengths(&lens).unwrap();
        let (rows, segs, feat) = (offsets.last().unwrap().to_usize(), lens.len(), 5usize);
        // Small integers: ties between rows exercise the first-wins rule.
        let x: Vec<f32> = (0..rows * feat).map(|_| rng.below(4) as f32 - 1.5).collect();
        let grad: Vec<f32> = rng.vec(segs * feat, -1.0, 1.0);
        for (raw, kind) in REDUCERS {
            let xt = Tensor::from_vec(x.clone(), vec![rows, feat]).unwrap();
            let (want, want_arg) = segment::segment_reduce_alloc(kind, &offsets, xt.view()).unwrap();
            let gt = Tensor::from_vec(grad.clone(), vec![segs, feat]).unwrap();
            let want_grad =
                segment::segment_reduce_backward_alloc(kind, &offsets, gt.view(), want_arg.as_deref()).unwrap();
            for (seg_kind, mut seg) in
                [(gk_segments::GK_SEGMENTS_OFFSETS, offsets.clone()), (gk_segments::GK_SEGMENTS_LENGTHS, lens.clone())]
            {
                let (mut x, mut out, mut arg) =
                    (x.clone(), vec![f32::NAN; segs * feat], vec![I::from_usize(99); segs * feat]);
                let (mut seg_shape, mut x_shape, mut out_shape) =
                    ([seg.len() as i64], [rows as i64, feat as i64], [segs as i64, feat as i64]);
                let (ts, tx, mut to) =
                    (tensor(&mut seg, &mut seg_shape), tensor(&mut x, &mut x_shape), tensor(&mut out, &mut out_shape));
                let mut arg_shape = out_shape;
                let mut ta = tensor(&mut arg, &mut arg_shape);
                let ta_ptr = if kind.has_arg() { &mut ta as *mut _ } else { std::ptr::null_mut() };
                let (rr, rs) = (RawReduce(raw as i32), RawSegments(seg_kind as i32));
                // SAFETY: every tensor describes live memory of its shape.
                let s = unsafe { gk_segment_reduce(rr, rs, &ts, &tx, &mut to, ta_ptr) };
                assert_eq!(s, gk_status::GK_OK, "{kind:?} {seg_kind:?}: {}", message());
                assert_eq!(out, want.data(), "{kind:?} {seg_kind:?} ({})", I::NAME);
                if let Some(want_arg) = &want_arg {
                    assert_eq!(&arg, want_arg, "{kind:?} {seg_kind:?} arg");
                }
                let (mut g, mut gx) = (grad.clone(), vec![f32::NAN; rows * feat]);
                let (mut g_shape, mut gx_shape) = (out_shape, x_shape);
                let (tg, mut tgx) = (tensor(&mut g, &mut g_shape), tensor(&mut gx, &mut gx_shape));
                let mut arg_shape = out_shape;
                let ta = tensor(&mut arg, &mut arg_shape);
                let ta_ptr = if kind.has_arg() { &ta as *const _ } else { std::ptr::null() };
                // SAFETY: as above.
                let s = unsafe { gk_segment_reduce_backward(rr, rs, &ts, &tg, ta_ptr, &mut tgx) };
                assert_eq!(s, gk_status::GK_OK, "{kind:?} {seg_kind:?} backward: {}", message());
                assert_eq!(gx, want_grad.data(), "{kind:?} {seg_kind:?} backward ({})", I::NAME);
            }
        }
    }

    #[test]
    fn segment_reduce_matches_the_rust_api_int32() {
        check_forward_and_backward::<i32>();
    }

    #[test]
    fn segment_reduce_matches_the_rust_api_int64() {
        check_forward_and_backward::<i64>();
    }

    /// A forward call on rows 0..6 (2 features) with `out`/`arg` of 2 segments.
    struct Call {
        reduce: gk_reduce,
        kind: i32,
        segments: Vec<i64>,
        segments_2d: bool,
        with_arg: bool,
        out_aliases_x: bool,
    }

    const OFFSETS: i32 = gk_segments::GK_SEGMENTS_OFFSETS as i32;
    const LENGTHS: i32 = gk_segments::GK_SEGMENTS_LENGTHS as i32;

    impl Call {
        fn max(kind: i32, segments: &[i64]) -> Call {
            Call {
                reduce: gk_reduce::GK_REDUCE_MAX,
                kind,
                segments: segments.to_vec(),
                segments_2d: false,
                with_arg: true,
                out_aliases_x: false,
            }
        }

        /// The status and whether `out`, `arg` and `x` kept their contents.
        fn run(mut self) -> (gk_status, bool) {
            let mut x: Vec<f32> = (0..12).map(|v| v as f32).collect();
            let (mut out, mut arg) = (vec![-7.0f32; 4], vec![-9i64; 4]);
            let len = self.segments.len() as i64;
            let mut seg_shape: Vec<i64> = if self.segments_2d { vec![1, len] } else { vec![len] };
            let (mut x_shape, mut out_shape, mut arg_shape) = ([6i64, 2], [2i64, 2], [2i64, 2]);
            let ts = tensor(&mut self.segments, &mut seg_shape);
            let tx = tensor(&mut x, &mut x_shape);
            let mut to = tensor(&mut out, &mut out_shape);
            if self.out_aliases_x {
                to.data = tx.data;
            }
            let mut ta = tensor(&mut arg, &mut arg_shape);
            let ta_ptr = if self.with_arg { &mut ta as *mut _ } else { std::ptr::null_mut() };
            let (reduce, kind) = (RawReduce(self.reduce as i32), RawSegments(self.kind));
            // SAFETY: every tensor describes live memory of its shape.
            let s = unsafe { gk_segment_reduce(reduce, kind, &ts, &tx, &mut to, ta_ptr) };
            let untouched = out.iter().all(|&v| v == -7.0) && arg.iter().all(|&v| v == -9) && x[1] == 1.0;
            (s, untouched)
        }
    }

    #[test]
    fn segment_reduce_rejects_bad_calls_without_writing() {
        use gk_status::*;
        let valid = [0, 2, 6];
        let cases = [
            ("valid call", Call::max(OFFSETS, &valid), GK_OK, ""),
            (
                "offsets not ending at the row count",
                Call::max(OFFSETS, &[0, 2, 5]),
                GK_ERROR_INVALID_GRAPH,
                "last segment offset",
            ),
            ("decreasing offsets", Call::max(OFFSETS, &[0, 3, 2]), GK_ERROR_INVALID_GRAPH, "non-decreasing"),
            ("lengths not summing to the rows", Call::max(LENGTHS, &[2, 3]), GK_ERROR_SHAPE, "sum to 5"),
            ("a negative length", Call::max(LENGTHS, &[8, -2]), GK_ERROR_INDEX_OUT_OF_RANGE, "segment lengths"),
            (
                "two-dimensional segments",
                Call { segments_2d: true, ..Call::max(OFFSETS, &valid) },
                GK_ERROR_SHAPE,
                "one-dimensional",
            ),
            (
                "arg for sum",
                Call { reduce: gk_reduce::GK_REDUCE_SUM, ..Call::max(OFFSETS, &valid) },
                GK_ERROR_OPERAND,
                "pass NULL",
            ),
            ("invalid segments enum", Call::max(2, &valid), GK_ERROR_INVALID_ENUM, "gk_segments"),
            (
                "out aliasing x",
                Call { out_aliases_x: true, ..Call::max(OFFSETS, &valid) },
                GK_ERROR_ALIASING,
                "overlaps x",
            ),
        ];
        for (what, call, want, needle) in cases {
            let (status, untouched) = call.run();
            assert_eq!(status, want, "{what}: {}", message());
            if want != GK_OK {
                assert!(untouched, "{what}: a failed call wrote its output");
                assert!(message().contains(needle), "{what}: message {:?} lacks {needle:?}", message());
            }
        }
        let (status, _) = Call { with_arg: false, ..Call::max(OFFSETS, &valid) }.run();
        assert_eq!(status, GK_OK, "max without arg: {}", message());
    }

    #[test]
    fn segment_backward_rejects_bad_args_without_writing() {
        use gk_status::*;
        let mut seg = vec![0i32, 2, 2, 5];
        let mut g = vec![1.0f32; 3 * 2];
        let mut gx = vec![-7.0f32; 5 * 2];
        let (mut seg_shape, mut g_shape, mut gx_shape) = ([4i64], [3i64, 2], [5i64, 2]);
        let ts = tensor(&mut seg, &mut seg_shape);
        let tg = tensor(&mut g, &mut g_shape);
        let mut tgx = tensor(&mut gx, &mut gx_shape);
        let max = RawReduce(gk_reduce::GK_REDUCE_MAX as i32);
        let offs = RawSegments(gk_segments::GK_SEGMENTS_OFFSETS as i32);
        // Segment 1 is empty (needs -1); row 2 is not in segment 0 (rows 0..2).
        let cases: [(&str, Vec<i32>, gk_status, &str); 3] = [
            ("a row outside its segment", vec![0, 2, -1, -1, 2, 4], GK_ERROR_INDEX_OUT_OF_RANGE, "segment 0"),
            ("a row for an empty segment", vec![0, 1, 0, -1, 2, 4], GK_ERROR_INDEX_OUT_OF_RANGE, "segment 1"),
            ("valid arg", vec![0, 1, -1, -1, 2, 4], GK_OK, ""),
        ];
        for (what, mut arg, want, needle) in cases {
            let mut arg_shape = g_shape;
            let ta = tensor(&mut arg, &mut arg_shape);
            // SAFETY: every tensor describes live memory of its shape.
            let s = unsafe { gk_segment_reduce_backward(max, offs, &ts, &tg, &ta, &mut tgx) };
            assert_eq!(s, want, "{what}: {}", message());
            if want != GK_OK {
                assert!(gx.iter().all(|&v| v == -7.0), "{what}: a failed call wrote grad_x");
                assert!(message().contains(needle), "{what}: message {:?} lacks {needle:?}", message());
            }
        }
        assert_eq!(gx, [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        // max without arg; int64 arg with int32 segments.
        // SAFETY: as above (NULL arg is allowed by the ABI).
        let s = unsafe { gk_segment_reduce_backward(max, offs, &ts, &tg, std::ptr::null(), &mut tgx) };
        assert_eq!((s, message().contains("needs the forward")), (GK_ERROR_OPERAND, true), "{}", message());
        let mut wide = vec![0i64; 6];
        let mut arg_shape = g_shape;
        let ta = tensor(&mut wide, &mut arg_shape);
        // SAFETY: as above.
        let s = unsafe { gk_segment_reduce_backward(max, offs, &ts, &tg, &ta, &mut tgx) };
        assert_eq!(s, GK_ERROR_DTYPE, "{}", message());
    }
}
