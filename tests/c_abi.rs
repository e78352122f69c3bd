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

mod common;

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
fn c_smoke_program_passes() {
    let exe = build("cc", "-std=c11", "smoke.c", "smoke");
    let stdout = run(&exe, &[]);
    assert!(stdout.contains("checks passed"), "{stdout}");
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
