//! The GPU backend (cargo feature `gpu`): adapts [`Backend`] calls onto the
//! wgpu kernels of `gnnkern-gpu`.
//!
//! Per call: the graph's device copy is taken from `Graph::cached` (uploaded
//! once per graph orientation and per context), operands are uploaded, the
//! kernels run, and outputs are downloaded into the caller's slices only
//! after the device reported success — an error leaves them untouched.
//!
//! The context is the one installed with [`set_context`] (a host framework's
//! own device) or, by default, one created from the environment on first use
//! ([`GpuContext::from_env`]: `WGPU_BACKEND`, `WGPU_ADAPTER_NAME`,
//! `WGPU_POWER_PREF`). Arg outputs come back from the device as i32 and are
//! widened to the graph's index type; graphs with ids >= 2^31 are
//! unsupported on this backend.

use super::{Backend, BackendKind, EdgeSoftmaxBackwardCall, EdgeSoftmaxCall, SddmmCall, SpmmCall};
use crate::graph::Graph;
use crate::{Error, Index, Result};
use gnnkern_gpu::{GpuContext, GpuError, GpuGraph, GpuTensor, MessageOp, SddmmArgs, SpmmArgs};
use gnnkern_simd::op::{BinaryOp, Reducer};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

pub use gnnkern_gpu::AdapterSummary;

const NAME: &str = "gpu";

/// Maps a device-path error onto the crate's error model.
fn device_error(e: GpuError) -> Error {
    match e {
        GpuError::NoAdapter(reason) => Error::BackendUnavailable { backend: NAME, reason },
        GpuError::OutOfMemory(m) => Error::Device { backend: NAME, message: format!("out of memory: {m}") },
        GpuError::Device(message) => Error::Device { backend: NAME, message },
        GpuError::Unsupported(what) | GpuError::InvalidArgument(what) => Error::Unsupported { backend: NAME, what },
    }
}

static INSTALLED: RwLock<Option<Arc<GpuContext>>> = RwLock::new(None);
static DEFAULT: OnceLock<std::result::Result<Arc<GpuContext>, GpuError>> = OnceLock::new();

/// Installs the context every later GPU call in this process uses (for
/// example one built by a host framework from its own device and queue).
pub fn set_context(ctx: Arc<GpuContext>) {
    *INSTALLED.write().unwrap_or_else(PoisonError::into_inner) = Some(ctx);
}

/// The context GPU calls use: the installed one, else the environment's default.
pub fn context() -> Result<Arc<GpuContext>> {
    if let Some(ctx) = &*INSTALLED.read().unwrap_or_else(PoisonError::into_inner) {
        return Ok(Arc::clone(ctx));
    }
    DEFAULT
        .get_or_init(|| {
            let ctx = GpuContext::from_env().map(Arc::new);
            match &ctx {
                Ok(c) => log::debug!("gnnkern GPU backend on {}", c.adapter()),
                Err(e) => log::debug!("gnnkern GPU backend unavailable: {e}"),
            }
            ctx
        })
        .clone()
        .map_err(device_error)
}

/// `Ok` when a GPU adapter and device can be obtained, else why not.
pub fn availability() -> Result<()> {
    context().map(|_| ())
}

/// The GPU backend bound to one context.
#[derive(Clone, Debug)]
pub struct Gpu {
    ctx: Arc<GpuContext>,
}

/// Device copies of one graph orientation, one per context.
#[derive(Default)]
struct DeviceGraphs(Mutex<Vec<(u64, Arc<GpuGraph>)>>);

impl Gpu {
    /// The backend on the process context (see [`context`]).
    pub fn get() -> Result<Gpu> {
        context().map(Gpu::with_context)
    }

    /// The backend on a caller's context.
    pub fn with_context(ctx: Arc<GpuContext>) -> Gpu {
        Gpu { ctx }
    }

    /// The context this backend runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// The graph's device copy on this context, uploaded on first use.
    pub fn device_graph<I: Index>(&self, graph: &Graph<I>) -> Result<Arc<GpuGraph>> {
        let graphs = graph.cached(|| Ok(DeviceGraphs::default()))?;
        // The formats are built (rayon jobs) before the list is locked, for
        // the reason `graph::built_once` gives; the upload itself runs no jobs.
        let (src, dst) = graph.coo();
        let in_csr = graph.in_csr().view();
        let mut list = graphs.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, g)) = list.iter().find(|(id, _)| *id == self.ctx.id()) {
            return Ok(Arc::clone(g));
        }
        let g = Arc::new(GpuGraph::upload(&self.ctx, in_csr, src, dst).map_err(device_error)?);
        list.push((self.ctx.id(), Arc::clone(&g)));
        Ok(g)
    }

    fn upload_opt(&self, used: bool, data: &[f32]) -> Result<Option<GpuTensor>> {
        if used { self.ctx.upload(data).map(Some).map_err(device_error) } else { Ok(None) }
    }
}

/// Widens device arg ids into the caller's index type.
fn widen<I: Index>(ids: &[i32], out: &mut [I]) {
    for (o, &x) in out.iter_mut().zip(ids) {
        *o = if x < 0 { I::NONE } else { I::from_usize(x as usize) };
    }
}

impl Backend for Gpu {
    const KIND: BackendKind = BackendKind::Gpu;

    fn gspmm<O: BinaryOp, R: Reducer, I: Index>(&self, call: SpmmCall<'_, I>) -> Result<()> {
        let SpmmCall { graph, lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e } = call;
        let op = MessageOp::of::<O>().map_err(device_error)?;
        let g = self.device_graph(graph)?;
        let ctx = &*self.ctx;
        let lhs = self.upload_opt(O::USE_LHS, lhs)?;
        let rhs = self.upload_opt(O::USE_RHS, rhs)?;
        let dev_out = ctx.zeros(out.len()).map_err(device_error)?;
        let want_args = R::HAS_ARG && (arg_u.is_some() || arg_e.is_some());
        let ids = if want_args { Some(ctx.ids(out.len()).map_err(device_error)?) } else { None };
        ctx.spmm(&SpmmArgs {
            graph: &g,
            op,
            reduce: R::KIND,
            lhs_target,
            rhs_target,
            plan,
            lhs: lhs.as_ref(),
            rhs: rhs.as_ref(),
            out: &dev_out,
            arg: ids.as_ref(),
        })
        .map_err(device_error)?;
        let values = ctx.download(&dev_out).map_err(device_error)?;
        let pairs = ids.as_ref().map(|ids| ctx.download_ids(ids)).transpose().map_err(device_error)?;
        out.copy_from_slice(&values);
        if let Some((u, e)) = pairs {
            if let Some(arg_u) = arg_u {
                widen(&u, arg_u);
            }
            if let Some(arg_e) = arg_e {
                widen(&e, arg_e);
            }
        }
        Ok(())
    }

    fn gsddmm<O: BinaryOp, I: Index>(&self, call: SddmmCall<'_, I>) -> Result<()> {
        let SddmmCall { graph, lhs_target, rhs_target, plan, lhs, rhs, out } = call;
        let op = MessageOp::of::<O>().map_err(device_error)?;
        let g = self.device_graph(graph)?;
        let ctx = &*self.ctx;
        let lhs = self.upload_opt(O::USE_LHS, lhs)?;
        let rhs = self.upload_opt(O::USE_RHS, rhs)?;
        let dev_out = ctx.zeros(out.len()).map_err(device_error)?;
        ctx.sddmm(&SddmmArgs {
            graph: &g,
            op,
            lhs_target,
            rhs_target,
            plan,
            lhs: lhs.as_ref(),
            rhs: rhs.as_ref(),
            out: &dev_out,
        })
        .map_err(device_error)?;
        ctx.download_into(&dev_out, out).map_err(device_error)
    }

    fn edge_softmax<I: Index>(&self, call: EdgeSoftmaxCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxCall { graph, logits, row_len, out } = call;
        let g = self.device_graph(graph)?;
        let ctx = &*self.ctx;
        let x = ctx.upload(logits).map_err(device_error)?;
        let y = ctx.zeros(out.len()).map_err(device_error)?;
        ctx.edge_softmax(&g, &x, row_len, &y).map_err(device_error)?;
        ctx.download_into(&y, out).map_err(device_error)
    }

    fn edge_softmax_backward<I: Index>(&self, call: EdgeSoftmaxBackwardCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxBackwardCall { graph, out, grad_out, row_len, grad_logits } = call;
        let g = self.device_graph(graph)?;
        let ctx = &*self.ctx;
        let y = ctx.upload(out).map_err(device_error)?;
        let dy = ctx.upload(grad_out).map_err(device_error)?;
        let dx = ctx.zeros(grad_logits.len()).map_err(device_error)?;
        ctx.edge_softmax_backward(&g, &y, &dy, row_len, &dx).map_err(device_error)?;
        ctx.download_into(&dx, grad_logits).map_err(device_error)
    }
}
