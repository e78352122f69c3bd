//! Times one op: seeded (or given) inputs, a rayon pool of the requested
//! size, warm-up runs, then `reps` timed runs of the op writing into one
//! preallocated output; reports the median/min/max and the derived rates.

use crate::error::{BenchError, Result};
use crate::graphs::{BenchGraph, KernelGraph};
use crate::machine::Machine;
use crate::model::{self, Cost};
use crate::opspec::{BenchOp, LHS_SEED, OpFamily, OpShapes, Operand, RHS_SEED, shapes};
use crate::runfile::{MachineBrief, OpResult};
use crate::triad::MachineFile;
use crate::{rng, rss};
use gnnkern::{BackendChoice, BackendKind, Exec, Graph, Index, SddmmIo, SpmmIo, TensorMut, TensorRef};
use rayon::prelude::*;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct OpRequest {
    pub op: BenchOp,
    pub dim: usize,
    pub heads: Option<usize>,
    pub threads: usize,
    /// `auto` or a backend name.
    pub backend: String,
    pub warmup: usize,
    pub reps: usize,
    /// Explicit lhs input (raw f32), else seeded.
    pub lhs: Option<Vec<f32>>,
    /// Explicit rhs input (raw f32), else seeded.
    pub rhs: Option<Vec<f32>>,
    /// Return the output values.
    pub keep_output: bool,
}

/// A timed op and, if asked for, its output.
pub struct OpOutcome {
    pub result: OpResult,
    pub output: Option<Vec<f32>>,
}

/// Runs `req` on `graph`. `triad` supplies the bandwidth for `pct_of_triad`.
pub fn run_op(
    graph: &BenchGraph,
    req: &OpRequest,
    machine: &Machine,
    triad: Option<&MachineFile>,
) -> Result<OpOutcome> {
    if req.reps == 0 {
        return Err(BenchError::input("--reps", "must be at least 1"));
    }
    let dims = graph.dims();
    let shapes = shapes(&req.op, dims, req.dim, req.heads)?;
    let cost = model::cost(&req.op, dims, &shapes, graph.kernel.index_bytes());
    let choice = BackendChoice::from_name(&req.backend)
        .map_err(|e| BenchError::Op { context: "--backend".to_string(), source: e })?;
    let pool = crate::triad::pool(req.threads)?;
    let lhs = operand_input("--lhs", shapes.lhs.as_ref(), req.lhs.as_deref(), LHS_SEED)?;
    let rhs = operand_input("--rhs", shapes.rhs.as_ref(), req.rhs.as_deref(), RHS_SEED)?;
    let mut out = vec![0.0f32; shapes.out.iter().product()];
    rss::reset_peak();
    let exec = Exec::new(choice);
    let inputs = Inputs { shapes: &shapes, lhs: &lhs, rhs: &rhs };
    let (times, backend) = pool.install(|| -> Result<(Vec<f64>, BackendKind)> {
        let mut backend = None;
        let mut times = Vec::with_capacity(req.reps);
        for i in 0..req.warmup + req.reps {
            let t = Instant::now();
            let ran = match &graph.kernel {
                KernelGraph::I32(g) => run_once(&exec, g, &req.op, &inputs, &mut out),
                KernelGraph::I64(g) => run_once(&exec, g, &req.op, &inputs, &mut out),
            }
            .map_err(|e| BenchError::Op { context: format!("{} on {}", req.op.name, graph.name), source: e })?;
            let elapsed = t.elapsed().as_secs_f64() * 1e3;
            if i >= req.warmup {
                times.push(elapsed);
            }
            backend = Some(ran);
        }
        Ok((times, backend.expect("at least one rep ran")))
    })?;
    let peak_rss_mb = rss::peak_rss_mb();
    let (checksum, checksum_abs) = checksums(&out);
    let result = summarize(Summary {
        graph,
        req,
        machine,
        triad,
        cost,
        shapes: &shapes,
        times,
        backend: backend.name().to_string(),
        peak_rss_mb,
        checksum,
        checksum_abs,
    });
    Ok(OpOutcome { result, output: req.keep_output.then_some(out) })
}

struct Inputs<'a> {
    shapes: &'a OpShapes,
    lhs: &'a [f32],
    rhs: &'a [f32],
}

fn operand_input(flag: &str, operand: Option<&Operand>, given: Option<&[f32]>, seed: u64) -> Result<Vec<f32>> {
    match (operand, given) {
        (None, None) => Ok(Vec::new()),
        (None, Some(_)) => Err(BenchError::input(flag, "this op does not read this operand")),
        (Some(o), Some(v)) if v.len() != o.len() => Err(BenchError::input(
            flag,
            format!("expected {} f32 values (shape {:?}), the file holds {}", o.len(), o.shape, v.len()),
        )),
        (Some(_), Some(v)) => Ok(v.to_vec()),
        (Some(o), None) => Ok(rng::uniform(seed, o.len(), o.range.0, o.range.1)),
    }
}

fn tensor<'a>(data: &'a [f32], operand: Option<&'a Operand>) -> gnnkern::Result<Option<TensorRef<'a>>> {
    operand.map(|o| TensorRef::new(data, &o.shape)).transpose()
}

fn run_once<I: Index>(
    exec: &Exec,
    g: &Graph<I>,
    op: &BenchOp,
    inputs: &Inputs<'_>,
    out: &mut [f32],
) -> gnnkern::Result<BackendKind> {
    let lhs = tensor(inputs.lhs, inputs.shapes.lhs.as_ref())?;
    let rhs = tensor(inputs.rhs, inputs.shapes.rhs.as_ref())?;
    let out = TensorMut::new(out, &inputs.shapes.out)?;
    match op.family {
        OpFamily::Spmm(spec) => exec.gspmm(g, spec, SpmmIo::new(lhs, rhs, out)),
        OpFamily::Sddmm(spec) => exec.gsddmm(g, spec, SddmmIo { lhs, rhs, out }),
        OpFamily::EdgeSoftmax => exec.edge_softmax(g, lhs.expect("edge_softmax has logits"), out),
        OpFamily::EdgeSoftmaxBackward => exec.edge_softmax_backward(
            g,
            lhs.expect("edge_softmax_backward has a softmax output"),
            rhs.expect("edge_softmax_backward has an output gradient"),
            out,
        ),
    }
}

/// (Σ x, Σ |x|) in f64.
pub fn checksums(out: &[f32]) -> (f64, f64) {
    out.par_chunks(1 << 16)
        .map(|c| c.iter().fold((0.0f64, 0.0f64), |(s, a), &x| (s + f64::from(x), a + f64::from(x).abs())))
        .reduce(|| (0.0, 0.0), |x, y| (x.0 + y.0, x.1 + y.1))
}

struct Summary<'a> {
    graph: &'a BenchGraph,
    req: &'a OpRequest,
    machine: &'a Machine,
    triad: Option<&'a MachineFile>,
    cost: Cost,
    shapes: &'a OpShapes,
    times: Vec<f64>,
    backend: String,
    peak_rss_mb: Option<f64>,
    checksum: f64,
    checksum_abs: f64,
}

/// Median of a non-empty sample (mean of the middle two for even sizes).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}

fn summarize(s: Summary<'_>) -> OpResult {
    let dims = s.graph.dims();
    let median_ms = median(&s.times);
    let min_ms = s.times.iter().copied().fold(f64::INFINITY, f64::min);
    let max_ms = s.times.iter().copied().fold(0.0, f64::max);
    let secs = median_ms / 1e3;
    let gbps = s.cost.bytes as f64 / secs / 1e9;
    OpResult {
        tool: "gnnkern".to_string(),
        op: s.req.op.name.clone(),
        graph: s.graph.name.clone(),
        nodes: dims.num_src,
        dst_nodes: dims.num_dst,
        edges: dims.num_edges,
        dim: s.req.dim,
        heads: s.req.heads,
        threads: s.req.threads,
        backend: s.backend,
        isa: gnnkern_simd::isa::active_level().name().to_string(),
        reps: s.times.len(),
        median_ms,
        min_ms,
        max_ms,
        flops: s.cost.flops,
        gflops: s.cost.flops as f64 / secs / 1e9,
        model_bytes: s.cost.bytes,
        gbps,
        pct_of_triad: s.triad.and_then(|t| t.gbps(s.req.threads)).map(|t| 100.0 * gbps / t),
        peak_rss_mb: s.peak_rss_mb,
        out_shape: s.shapes.out.clone(),
        checksum: s.checksum,
        checksum_abs: s.checksum_abs,
        machine: MachineBrief::from(s.machine),
    }
}

/// Reads a raw little-endian f32 file.
pub fn read_f32_file(path: &std::path::Path) -> Result<Vec<f32>> {
    let bytes = std::fs::read(path).map_err(|e| BenchError::io(path, e))?;
    if bytes.len() % 4 != 0 {
        return Err(BenchError::format(path, format!("{} bytes is not a whole number of f32 values", bytes.len())));
    }
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Writes raw little-endian f32 values.
pub fn write_f32_file(path: &std::path::Path, values: &[f32]) -> Result<()> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    crate::runfile::write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
