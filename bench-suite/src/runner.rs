//! Times one op: seeded (or given) inputs, a rayon pool of the requested
//! size (optionally pinned), warm-up runs, then `reps` timed runs of the op
//! writing into one preallocated output; reports the median/min/max and the
//! derived rates.

use crate::error::{BenchError, Result};
use crate::graphs::{BenchGraph, KernelGraph};
use crate::machine::Machine;
use crate::model::{self, Cost};
use crate::opspec::{BenchOp, GRAD_SEED, LHS_SEED, OpFamily, OpShapes, Operand, RHS_SEED, shapes};
use crate::runfile::{MachineBrief, OpResult};
use crate::triad::MachineFile;
use crate::{rng, rss, traversal};
use gnnkern::backend::simd::PassKind;
use gnnkern::threads::Pinning;
use gnnkern::{
    AlignedVec, BackendChoice, BackendKind, Exec, Graph, Index, SddmmBackwardIo, SddmmIo, SpmmBackwardIo, SpmmIo,
    TensorMut, TensorRef, aligned_copy, aligned_filled,
};
use rayon::prelude::*;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct OpRequest {
    pub op: BenchOp,
    pub dim: usize,
    pub heads: Option<usize>,
    pub threads: usize,
    /// Pin each worker of the pool to one core (`gnnkern::threads`).
    pub pin: bool,
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

/// Runs `req` on `graph`: prepares it, times `reps` calls in one slice and
/// summarizes them. `triad` supplies the bandwidth for `pct_of_triad`.
pub fn run_op(
    graph: &BenchGraph,
    req: &OpRequest,
    machine: &Machine,
    triad: Option<&MachineFile>,
) -> Result<OpOutcome> {
    let mut op = PreparedOp::new(graph, req)?;
    op.time_slice(Warm::default(), req.reps)?;
    op.finish(machine, triad)
}

/// An op made ready to time: its pool, inputs and output allocated, its
/// warm-up calls (and the SIMD backend's trial calls) done. Each
/// [`time_slice`](Self::time_slice) times a slice of calls; [`finish`](Self::finish)
/// summarizes every call timed. `run_op` times one slice; `suite --peers`
/// alternates slices of gnnkern and of each peer (`suite::run`), so that the
/// tools' calls share a shared machine's fast and slow stretches.
pub struct PreparedOp<'g> {
    graph: &'g BenchGraph,
    req: OpRequest,
    shapes: OpShapes,
    cost: Cost,
    pool: rayon::ThreadPool,
    exec: Exec,
    lhs: AlignedVec<f32>,
    rhs: AlignedVec<f32>,
    grad_out: AlignedVec<f32>,
    out: AlignedVec<f32>,
    args: ArgBuffers,
    /// Every timed call (ms), slice after slice.
    times: Vec<f64>,
    /// Each slice's median (ms).
    slice_medians: Vec<f64>,
    backend: Option<BackendKind>,
    pass: Option<String>,
}

/// The arg buffers of a max/min op, in the graph's index type.
enum ArgBuffers {
    I32(Args<i32>),
    I64(Args<i64>),
}

/// A max/min gradient's forward arg outputs (`arg_e`) and a max/min
/// g-SpMM's arg output (`arg_out`).
struct Args<I: Index> {
    arg_e: Option<Vec<I>>,
    arg_out: Option<AlignedVec<I>>,
}

impl<'g> PreparedOp<'g> {
    /// Checks `req`, makes the inputs and output, and runs the warm-up calls:
    /// `req.warmup`, and at least the SIMD backend's trial calls.
    pub fn new(graph: &'g BenchGraph, req: &OpRequest) -> Result<PreparedOp<'g>> {
        if req.reps == 0 {
            return Err(BenchError::input("--reps", "must be at least 1"));
        }
        let dims = graph.dims();
        let shapes = shapes(&req.op, dims, req.dim, req.heads)?;
        let cost = model::cost(&req.op, dims, &shapes, graph.kernel.index_bytes());
        let choice = BackendChoice::from_name(&req.backend)
            .map_err(|e| BenchError::Op { context: "--backend".to_string(), source: e })?;
        let pool = pool(req.threads, req.pin)?;
        let lhs = operand_input("--lhs", shapes.lhs.as_ref(), req.lhs.as_deref(), LHS_SEED)?;
        let rhs = operand_input("--rhs", shapes.rhs.as_ref(), req.rhs.as_deref(), RHS_SEED)?;
        let grad_out = operand_input("output gradient", shapes.grad_out.as_ref(), None, GRAD_SEED)?;
        // Every buffer cache-line aligned, as torch allocates the peers' tensors.
        let out = aligned_filled(shapes.out.iter().product(), 0.0f32);
        rss::reset_peak();
        let exec = Exec::new(choice);
        let inputs = Inputs { shapes: &shapes, lhs: &lhs, rhs: &rhs, grad_out: &grad_out };
        let args = pool
            .install(|| {
                Ok(match &graph.kernel {
                    KernelGraph::I32(g) => ArgBuffers::I32(Args::new(&exec, g, &req.op, &inputs, out.len())?),
                    KernelGraph::I64(g) => ArgBuffers::I64(Args::new(&exec, g, &req.op, &inputs, out.len())?),
                })
            })
            .map_err(|e| op_error(req, graph, e))?;
        let mut op = PreparedOp {
            graph,
            // The explicit inputs live on in `lhs` and `rhs`.
            req: OpRequest { op: req.op.clone(), backend: req.backend.clone(), lhs: None, rhs: None, ..*req },
            shapes,
            cost,
            pool,
            exec,
            lhs,
            rhs,
            grad_out,
            out,
            args,
            times: Vec::new(),
            slice_medians: Vec::new(),
            backend: None,
            pass: None,
        };
        // The SIMD backend times its first calls of a large op to choose between
        // the plain and the blocked pass (edge softmax: between its two schemes):
        // the timed calls start once it decided.
        let calls = req.warmup.max(gnnkern::backend::simd::trials::CALLS_TO_DECIDE);
        op.calls(Warm { calls, ms: 0.0 }, 0)?;
        Ok(op)
    }

    /// Runs the `warm` calls, then times `timed` calls (at least one call
    /// runs); returns the timed calls' times (ms), which `finish` counts.
    /// A slice that follows another tool's starts warm: its untimed calls
    /// pay for the caches the other tool left full of its data and for the
    /// cores' idle time (`suite::run`'s `SLICE_WARM`).
    pub fn time_slice(&mut self, warm: Warm, timed: usize) -> Result<Vec<f64>> {
        let times = self.calls(warm, timed)?;
        if !times.is_empty() {
            self.slice_medians.push(median(&times));
            self.times.extend_from_slice(&times);
        }
        Ok(times)
    }

    fn calls(&mut self, warm: Warm, timed: usize) -> Result<Vec<f64>> {
        let inputs = Inputs { shapes: &self.shapes, lhs: &self.lhs, rhs: &self.rhs, grad_out: &self.grad_out };
        let calls = Calls { exec: &self.exec, op: &self.req.op, inputs: &inputs, warm, timed };
        let (graph, out) = (self.graph, &mut self.out);
        let (times, backend, pass) = self
            .pool
            .install(|| match (&graph.kernel, &mut self.args) {
                (KernelGraph::I32(g), ArgBuffers::I32(a)) => time_calls(g, &calls, a, out),
                (KernelGraph::I64(g), ArgBuffers::I64(a)) => time_calls(g, &calls, a, out),
                _ => unreachable!("the arg buffers were made for this graph's index type"),
            })
            .map_err(|e| op_error(&self.req, self.graph, e))?;
        self.backend = backend.or(self.backend);
        self.pass = pass;
        Ok(times)
    }

    /// Summarizes every timed call; with `keep_output`, returns the output.
    pub fn finish(self, machine: &Machine, triad: Option<&MachineFile>) -> Result<OpOutcome> {
        if self.times.is_empty() {
            return Err(BenchError::input("--reps", "no call was timed"));
        }
        let peak_rss_mb = rss::peak_rss_mb();
        let (checksum, checksum_abs) = checksums(&self.out);
        let traversal_bytes = traversal(self.graph, &self.req, &self.shapes, self.pass.as_deref());
        let result = summarize(Summary {
            graph: self.graph,
            req: &self.req,
            machine,
            triad,
            cost: self.cost,
            shapes: &self.shapes,
            times: self.times,
            slice_medians: self.slice_medians,
            backend: self.backend.map_or("unknown", BackendKind::name).to_string(),
            pass: self.pass,
            traversal_bytes,
            peak_rss_mb,
            checksum,
            checksum_abs,
        });
        Ok(OpOutcome { result, output: self.req.keep_output.then(|| self.out.to_vec()) })
    }
}

fn op_error(req: &OpRequest, graph: &BenchGraph, e: gnnkern::Error) -> BenchError {
    BenchError::Op { context: format!("{} on {}", req.op.name, graph.name), source: e }
}

impl<I: Index> Args<I> {
    fn new(exec: &Exec, g: &Graph<I>, op: &BenchOp, inputs: &Inputs<'_>, out_len: usize) -> gnnkern::Result<Args<I>> {
        let arg_e = forward_arg_e(exec, g, op, inputs)?;
        // A max/min g-SpMM writes the arg output its backward reads: gnnkern's
        // `arg_e` (the backward finds a source from its edge). DGL's gspmm writes
        // the ones its backward reads too: `arg_u` for copy_u, `arg_e` for copy_e,
        // both for binary ops (dgl/_sparse_ops.py, `use_u` / `use_e`), as int64.
        let arg_out = match op.family {
            OpFamily::Spmm(spec) if spec.reduce.has_arg() => Some(aligned_filled(out_len, I::from_usize(0))),
            _ => None,
        };
        Ok(Args { arg_e, arg_out })
    }
}

/// The pool an op is timed in: `threads` workers, pinned one per core with `pin`.
fn pool(threads: usize, pin: bool) -> Result<rayon::ThreadPool> {
    if !pin {
        return crate::triad::pool(threads);
    }
    if threads == 0 {
        return Err(BenchError::input("--threads", "must be at least 1"));
    }
    gnnkern::threads::build_pool(threads, Pinning::PerCore, "bench")
        .map_err(|e| BenchError::input("--pin", e.to_string()))
}

struct Inputs<'a> {
    shapes: &'a OpShapes,
    lhs: &'a [f32],
    rhs: &'a [f32],
    grad_out: &'a [f32],
}

/// The untimed calls before a slice's timed ones: at least `calls` of
/// them, and more until `ms` milliseconds have passed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Warm {
    pub calls: usize,
    pub ms: f64,
}

struct Calls<'a> {
    exec: &'a Exec,
    op: &'a BenchOp,
    inputs: &'a Inputs<'a>,
    warm: Warm,
    timed: usize,
}

/// The `warm` calls, then `timed` timed calls (one untimed call if there
/// would be no call at all); returns the times (ms), the backend that ran (`None` if gnnkern did
/// not report one) and, for the SIMD backend's g-SpMM / g-SDDMM / edge
/// softmax and the max/min backward, the pass of the last call.
fn time_calls<I: Index>(
    g: &Graph<I>,
    t: &Calls<'_>,
    args: &mut Args<I>,
    out: &mut [f32],
) -> gnnkern::Result<(Vec<f64>, Option<BackendKind>, Option<String>)> {
    let mut backend = None;
    let mut times = Vec::with_capacity(t.timed);
    let min_untimed = if t.warm.calls + t.timed == 0 { 1 } else { t.warm.calls };
    let warm_start = Instant::now();
    let mut untimed = 0;
    while untimed < min_untimed || warm_start.elapsed().as_secs_f64() * 1e3 < t.warm.ms {
        backend = run_once(t.exec, g, t.op, t.inputs, args.arg_e.as_deref(), args.arg_out.as_deref_mut(), out)?;
        untimed += 1;
    }
    for _ in 0..t.timed {
        let start = Instant::now();
        backend = run_once(t.exec, g, t.op, t.inputs, args.arg_e.as_deref(), args.arg_out.as_deref_mut(), out)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let pass = match (backend, t.op.family) {
        (
            Some(BackendKind::Simd),
            OpFamily::Spmm(_) | OpFamily::Sddmm(_) | OpFamily::EdgeSoftmax | OpFamily::EdgeSoftmaxBackward,
        ) => gnnkern::backend::simd::last_pass().map(pass_name),
        // The max/min backward's source gradient of a copy-like message:
        // pulled or scattered (nothing reported for the others).
        (_, OpFamily::SpmmBackward(spec)) if spec.reduce.has_arg() => {
            gnnkern::backend::simd::last_pass().map(pass_name)
        }
        _ => None,
    };
    Ok((times, backend, pass))
}

/// The run file's name for a SIMD pass.
fn pass_name(pass: PassKind) -> String {
    match pass {
        PassKind::Plain => "plain".to_string(),
        PassKind::PlainNarrow => "plain-narrow".to_string(),
        PassKind::Streamed => "streamed".to_string(),
        PassKind::Staged => "staged".to_string(),
        PassKind::EdgeOrder => "edge-order".to_string(),
        PassKind::EdgeParts { num_parts } => format!("edge-parts:{num_parts}"),
        PassKind::EdgeRanges { num_parts } => format!("edge-ranges:{num_parts}"),
        PassKind::Blocked { block_sources, num_blocks } => format!("blocked:{num_blocks}x{block_sources}"),
        PassKind::RowOrder => "row-order".to_string(),
        PassKind::RowOrderStreamed => "row-order-streamed".to_string(),
        PassKind::TwoPhase => "two-phase".to_string(),
        PassKind::Ranges { num_ranges } => format!("ranges:{num_ranges}"),
        PassKind::Pulled => "pulled".to_string(),
        PassKind::Scattered => "scattered".to_string(),
    }
}

/// The forward's edge arg outputs a max/min gradient op routes through (computed untimed).
fn forward_arg_e<I: Index>(
    exec: &Exec,
    g: &Graph<I>,
    op: &BenchOp,
    inputs: &Inputs<'_>,
) -> gnnkern::Result<Option<Vec<I>>> {
    let OpFamily::SpmmBackward(spec) = op.family else { return Ok(None) };
    if !spec.reduce.has_arg() {
        return Ok(None);
    }
    let grad_shape = &inputs.shapes.grad_out.as_ref().expect("gradient ops have an output gradient").shape;
    let mut fwd = aligned_filled(grad_shape.iter().product(), 0.0f32);
    let mut arg_e = vec![I::from_usize(0); fwd.len()];
    let io = SpmmIo {
        lhs: tensor(inputs.lhs, inputs.shapes.lhs.as_ref())?,
        rhs: tensor(inputs.rhs, inputs.shapes.rhs.as_ref())?,
        out: TensorMut::new(&mut fwd, grad_shape)?,
        arg_u: None,
        arg_e: Some(&mut arg_e),
    };
    exec.gspmm(g, spec, io)?;
    Ok(Some(arg_e))
}

fn operand_input(flag: &str, operand: Option<&Operand>, given: Option<&[f32]>, seed: u64) -> Result<AlignedVec<f32>> {
    match (operand, given) {
        (None, None) => Ok(aligned_copy(&[])),
        (None, Some(_)) => Err(BenchError::input(flag, "this op does not read this operand")),
        (Some(o), Some(v)) if v.len() != o.len() => Err(BenchError::input(
            flag,
            format!("expected {} f32 values (shape {:?}), the file holds {}", o.len(), o.shape, v.len()),
        )),
        (Some(_), Some(v)) => Ok(aligned_copy(v)),
        (Some(o), None) => Ok(aligned_copy(&rng::uniform(seed, o.len(), o.range.0, o.range.1))),
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
    arg_e: Option<&[I]>,
    arg_out: Option<&mut [I]>,
    out: &mut [f32],
) -> gnnkern::Result<Option<BackendKind>> {
    let lhs = tensor(inputs.lhs, inputs.shapes.lhs.as_ref())?;
    let rhs = tensor(inputs.rhs, inputs.shapes.rhs.as_ref())?;
    if op.is_gradient() {
        let grad_out =
            tensor(inputs.grad_out, inputs.shapes.grad_out.as_ref())?.expect("gradient ops have an output gradient");
        let (gl, gr) = out.split_at_mut(inputs.lhs.len());
        let grad_lhs = inputs.shapes.lhs.as_ref().map(|o| TensorMut::new(gl, &o.shape)).transpose()?;
        let grad_rhs = inputs.shapes.rhs.as_ref().map(|o| TensorMut::new(gr, &o.shape)).transpose()?;
        match op.family {
            OpFamily::SpmmBackward(spec) => {
                exec.gspmm_backward(g, spec, SpmmBackwardIo { lhs, rhs, grad_out, arg_e, grad_lhs, grad_rhs })?
            }
            OpFamily::SddmmBackward(spec) => {
                exec.gsddmm_backward(g, spec, SddmmBackwardIo { lhs, rhs, grad_out, grad_lhs, grad_rhs })?
            }
            _ => unreachable!("is_gradient() covers exactly the two backward families"),
        }
        return Ok(gnnkern::backend::last_used());
    }
    let out = TensorMut::new(out, &inputs.shapes.out)?;
    let ran = match op.family {
        OpFamily::Spmm(spec) => exec.gspmm(g, spec, SpmmIo { lhs, rhs, out, arg_u: None, arg_e: arg_out }),
        OpFamily::Sddmm(spec) => exec.gsddmm(g, spec, SddmmIo { lhs, rhs, out }),
        OpFamily::EdgeSoftmax => exec.edge_softmax(g, lhs.expect("edge_softmax has logits"), out),
        OpFamily::EdgeSoftmaxBackward => exec.edge_softmax_backward(
            g,
            lhs.expect("edge_softmax_backward has a softmax output"),
            rhs.expect("edge_softmax_backward has an output gradient"),
            out,
        ),
        OpFamily::SpmmBackward(_) | OpFamily::SddmmBackward(_) => unreachable!("handled above"),
    }?;
    Ok(Some(ran))
}

/// (Σ x, Σ |x|) in f64, the same bits run to run: chunks are summed in
/// parallel, then their sums in chunk order (a parallel `reduce` combines
/// in whatever tree the work stealing built, which moved the last digit of
/// the checksum between processes of one binary).
pub fn checksums(out: &[f32]) -> (f64, f64) {
    let parts: Vec<(f64, f64)> = out
        .par_chunks(1 << 16)
        .map(|c| c.iter().fold((0.0f64, 0.0f64), |(s, a), &x| (s + f64::from(x), a + f64::from(x).abs())))
        .collect();
    parts.iter().fold((0.0, 0.0), |x, y| (x.0 + y.0, x.1 + y.1))
}

struct Summary<'a> {
    graph: &'a BenchGraph,
    req: &'a OpRequest,
    machine: &'a Machine,
    triad: Option<&'a MachineFile>,
    cost: Cost,
    shapes: &'a OpShapes,
    times: Vec<f64>,
    slice_medians: Vec<f64>,
    backend: String,
    pass: Option<String>,
    traversal_bytes: Option<u64>,
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
    let triad = s.triad.and_then(|t| t.gbps(s.req.threads));
    let pct = |bytes: u64| triad.map(|t| 100.0 * bytes as f64 / secs / 1e9 / t);
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
        pass: s.pass,
        isa: gnnkern_simd::isa::active_level().name().to_string(),
        reps: s.times.len(),
        slice_medians_ms: (s.slice_medians.len() > 1).then_some(s.slice_medians),
        median_ms,
        min_ms,
        max_ms,
        flops: s.cost.flops,
        gflops: s.cost.flops as f64 / secs / 1e9,
        model_bytes: s.cost.bytes,
        gbps,
        pct_of_triad: pct(s.cost.bytes),
        traversal_bytes: s.traversal_bytes,
        traversal_pct_of_triad: s.traversal_bytes.and_then(pct),
        peak_rss_mb: s.peak_rss_mb,
        out_shape: s.shapes.out.clone(),
        checksum: s.checksum,
        checksum_abs: s.checksum_abs,
        machine: MachineBrief::from(s.machine),
    }
}

/// The bytes gnnkern's plain (narrow chunks or not), streamed or row-order (streamed or not) pass moves through a
/// cache of this machine's size (`traversal.rs`, which charges a write no
/// read for ownership, as a streamed store); `None` for other passes.
fn traversal(graph: &BenchGraph, req: &OpRequest, shapes: &OpShapes, pass: Option<&str>) -> Option<u64> {
    if !matches!(pass, Some("plain" | "plain-narrow" | "streamed" | "row-order" | "row-order-streamed")) {
        return None;
    }
    let cache = traversal::cache_bytes(req.threads);
    match &graph.kernel {
        KernelGraph::I32(g) => {
            traversal::traversal_bytes_memo(&graph.name, g, &req.op.family, shapes, req.threads, cache)
        }
        KernelGraph::I64(g) => {
            traversal::traversal_bytes_memo(&graph.name, g, &req.op.family, shapes, req.threads, cache)
        }
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
    use super::{checksums, median};

    #[test]
    fn checksums_sum_the_chunks_in_order() {
        // Magnitudes 1e-8 .. 1e8, so the order of the f64 additions shows.
        let out: Vec<f32> = (0..(5 << 16) + 123).map(|i| ((i % 17) as f32 - 8.0) * 10f32.powi(i % 17 - 8)).collect();
        let in_order = out.chunks(1 << 16).fold((0.0f64, 0.0f64), |(s, a), c| {
            let (cs, ca) = c.iter().fold((0.0f64, 0.0f64), |(s, a), &x| (s + f64::from(x), a + f64::from(x).abs()));
            (s + cs, a + ca)
        });
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for _ in 0..4 {
                let got = pool.install(|| checksums(&out));
                assert_eq!((got.0.to_bits(), got.1.to_bits()), (in_order.0.to_bits(), in_order.1.to_bits()));
            }
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
