//! Backends and the one dispatch layer that picks one per call.
//!
//! A backend implements [`Backend`]: typed entry points generic over the
//! message operator, the reducer and the index type. Calls reach a backend
//! already validated (shapes, lengths, operand presence), as the flat
//! slices of [`SpmmCall`] and friends, so backends contain no validation.
//!
//! A backend that cannot run a particular call (an operator it has no form
//! for, a reducer it lacks) returns [`Error::Unsupported`] *before writing
//! anything*; under [`BackendChoice::Auto`] the dispatcher then tries the
//! next backend in [`AUTO_ORDER`], while a forced backend reports the error.
//!
//! Choosing a backend: per call with [`crate::Exec`], or process-wide with
//! the `GNNKERN_BACKEND` environment variable (`auto`, `reference`, `simd`,
//! ...), read once on first use.

#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "mkl")]
pub mod mkl;
pub mod reference;
pub mod simd;

use crate::graph::Graph;
use crate::{Error, Index, Result};
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{BinaryOp, Reducer, Target};
use std::cell::Cell;
use std::sync::OnceLock;

/// The backends gnnkern knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// Plain loops accumulating in f64: the oracle.
    Reference,
    /// The hand-tuned AVX-512 / AVX2 / portable kernels of `gnnkern-simd`.
    Simd,
    /// Intel MKL sparse BLAS (`mkl_sparse_s_mm`), for sum/mean aggregation on large graphs
    /// (cargo feature `mkl`).
    Mkl,
    /// wgpu compute shaders (cargo feature `gpu`).
    Gpu,
}

impl BackendKind {
    /// Every backend (`AUTO_ORDER` says which `auto` tries, in which order).
    pub const ALL: &'static [BackendKind] =
        &[BackendKind::Simd, BackendKind::Reference, BackendKind::Mkl, BackendKind::Gpu];

    /// Lower-case name (`reference`, `simd`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            BackendKind::Reference => "reference",
            BackendKind::Simd => "simd",
            BackendKind::Mkl => "mkl",
            BackendKind::Gpu => "gpu",
        }
    }

    /// Parses a backend name.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.iter().copied().find(|k| k.name() == name).ok_or_else(|| Error::UnknownName {
            kind: "backend",
            name: name.to_string(),
            hint: format!(" (known: auto, {})", Self::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")),
        })
    }

    /// `Ok` if the backend can run on this machine, else why not.
    pub fn availability(self) -> Result<()> {
        match self {
            BackendKind::Reference | BackendKind::Simd => Ok(()),
            #[cfg(feature = "mkl")]
            BackendKind::Mkl => mkl::availability(),
            #[cfg(feature = "gpu")]
            BackendKind::Gpu => gpu::availability(),
            #[cfg(not(feature = "mkl"))]
            BackendKind::Mkl => Err(not_built(self, "mkl")),
            #[cfg(not(feature = "gpu"))]
            BackendKind::Gpu => Err(not_built(self, "gpu")),
        }
    }
}

#[cfg(not(all(feature = "mkl", feature = "gpu")))]
fn not_built(kind: BackendKind, feature: &str) -> Error {
    Error::BackendUnavailable {
        backend: kind.name(),
        reason: format!("gnnkern was built without the `{feature}` cargo feature"),
    }
}

/// The order in which [`BackendChoice::Auto`] tries backends.
pub const AUTO_ORDER: &[BackendKind] = &[BackendKind::Simd, BackendKind::Reference];

/// Which backend a call may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BackendChoice {
    /// The fastest available backend that supports the call.
    #[default]
    Auto,
    /// Exactly this backend; unavailable or unsupported is an error.
    Forced(BackendKind),
}

impl BackendChoice {
    /// Parses `auto` or a backend name.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "auto" => Ok(BackendChoice::Auto),
            other => BackendKind::from_name(other).map(BackendChoice::Forced),
        }
    }

    /// The process-wide default: `GNNKERN_BACKEND`, or `auto` when unset.
    ///
    /// An invalid value is reported by every call that uses the default, so a
    /// typo in a test run's environment cannot silently test the wrong path.
    pub fn from_env() -> Result<Self> {
        static CHOICE: OnceLock<Result<BackendChoice>> = OnceLock::new();
        CHOICE
            .get_or_init(|| match std::env::var("GNNKERN_BACKEND") {
                Ok(v) if !v.is_empty() => {
                    let choice = Self::from_name(&v);
                    log::debug!("GNNKERN_BACKEND={v} -> {choice:?}");
                    choice
                }
                _ => Ok(BackendChoice::Auto),
            })
            .clone()
    }
}

thread_local! {
    static LAST_USED: Cell<Option<BackendKind>> = const { Cell::new(None) };
}

/// The backend that ran the last successful op on this thread.
pub fn last_used() -> Option<BackendKind> {
    LAST_USED.with(Cell::get)
}

/// A validated g-SpMM call: `out[v] = ρ(φ(lhs[a(e)], rhs[b(e)]))`.
///
/// `lhs`/`rhs` are empty when the operator does not read them; `out` has
/// `num_dst × plan.out_len` elements; the arg outputs, when present, have
/// the same length as `out` (only for reducers with `HAS_ARG`).
pub struct SpmmCall<'a, I: Index> {
    pub graph: &'a Graph<I>,
    pub lhs_target: Target,
    pub rhs_target: Target,
    pub plan: &'a BroadcastPlan,
    pub lhs: &'a [f32],
    pub rhs: &'a [f32],
    pub out: &'a mut [f32],
    pub arg_u: Option<&'a mut [I]>,
    pub arg_e: Option<&'a mut [I]>,
}

impl<I: Index> SpmmCall<'_, I> {
    /// Reborrows, so a dispatcher can offer the call to several backends.
    pub fn reborrow(&mut self) -> SpmmCall<'_, I> {
        SpmmCall {
            graph: self.graph,
            lhs_target: self.lhs_target,
            rhs_target: self.rhs_target,
            plan: self.plan,
            lhs: self.lhs,
            rhs: self.rhs,
            out: self.out,
            arg_u: self.arg_u.as_deref_mut(),
            arg_e: self.arg_e.as_deref_mut(),
        }
    }
}

/// A validated g-SDDMM call: `out[e] = φ(lhs[a(e)], rhs[b(e)])`, `out` has
/// `num_edges × plan.out_len` elements.
pub struct SddmmCall<'a, I: Index> {
    pub graph: &'a Graph<I>,
    pub lhs_target: Target,
    pub rhs_target: Target,
    pub plan: &'a BroadcastPlan,
    pub lhs: &'a [f32],
    pub rhs: &'a [f32],
    pub out: &'a mut [f32],
}

impl<I: Index> SddmmCall<'_, I> {
    /// Reborrows, so a dispatcher can offer the call to several backends.
    pub fn reborrow(&mut self) -> SddmmCall<'_, I> {
        SddmmCall {
            graph: self.graph,
            lhs_target: self.lhs_target,
            rhs_target: self.rhs_target,
            plan: self.plan,
            lhs: self.lhs,
            rhs: self.rhs,
            out: self.out,
        }
    }
}

/// A validated edge softmax over each destination's in-edges:
/// `out[e] = exp(x[e] - m_v) / Σ_{e' into v} exp(x[e'] - m_v)`, elementwise
/// over the `row_len` features of an edge row (`m_v`: the row maximum).
pub struct EdgeSoftmaxCall<'a, I: Index> {
    pub graph: &'a Graph<I>,
    pub logits: &'a [f32],
    pub row_len: usize,
    pub out: &'a mut [f32],
}

impl<I: Index> EdgeSoftmaxCall<'_, I> {
    /// Reborrows, so a dispatcher can offer the call to several backends.
    pub fn reborrow(&mut self) -> EdgeSoftmaxCall<'_, I> {
        EdgeSoftmaxCall { graph: self.graph, logits: self.logits, row_len: self.row_len, out: self.out }
    }
}

/// The gradient of [`EdgeSoftmaxCall`] w.r.t. its logits, from the forward
/// output `y` and the output gradient `g`:
/// `grad[e] = y[e] · (g[e] − Σ_{e' into v} g[e']·y[e'])`.
pub struct EdgeSoftmaxBackwardCall<'a, I: Index> {
    pub graph: &'a Graph<I>,
    pub out: &'a [f32],
    pub grad_out: &'a [f32],
    pub row_len: usize,
    pub grad_logits: &'a mut [f32],
}

impl<I: Index> EdgeSoftmaxBackwardCall<'_, I> {
    /// Reborrows, so a dispatcher can offer the call to several backends.
    pub fn reborrow(&mut self) -> EdgeSoftmaxBackwardCall<'_, I> {
        EdgeSoftmaxBackwardCall {
            graph: self.graph,
            out: self.out,
            grad_out: self.grad_out,
            row_len: self.row_len,
            grad_logits: self.grad_logits,
        }
    }
}

/// The typed interface every backend implements.
pub trait Backend {
    /// Which backend this is.
    const KIND: BackendKind;

    /// Runs a g-SpMM (see [`SpmmCall`]).
    fn gspmm<O: BinaryOp, R: Reducer, I: Index>(&self, call: SpmmCall<'_, I>) -> Result<()>;

    /// Runs a g-SDDMM (see [`SddmmCall`]).
    fn gsddmm<O: BinaryOp, I: Index>(&self, call: SddmmCall<'_, I>) -> Result<()>;

    /// Runs an edge softmax (see [`EdgeSoftmaxCall`]).
    fn edge_softmax<I: Index>(&self, call: EdgeSoftmaxCall<'_, I>) -> Result<()>;

    /// Runs the edge-softmax backward pass (see [`EdgeSoftmaxBackwardCall`]).
    fn edge_softmax_backward<I: Index>(&self, call: EdgeSoftmaxBackwardCall<'_, I>) -> Result<()>;
}

/// Rows of the operand tensor a target reads: sources, edges or destinations.
pub fn target_rows<I: Index>(graph: &Graph<I>, target: Target) -> usize {
    match target {
        Target::Src => graph.num_src(),
        Target::Edge => graph.num_edges(),
        Target::Dst => graph.num_dst(),
    }
}

/// Offers a call to the backends `choice` allows, in order, until one runs it.
macro_rules! dispatch_call {
    ($choice:expr, $call:ident, |$b:ident, $c:ident| $run:expr) => {{
        let kinds: &[BackendKind] = match $choice {
            BackendChoice::Auto => AUTO_ORDER,
            BackendChoice::Forced(kind) => {
                kind.availability()?;
                std::slice::from_ref(kind)
            }
        };
        let mut last_err = None;
        for &kind in kinds {
            let $c = $call.reborrow();
            let result = match kind {
                BackendKind::Reference => {
                    let $b = reference::Reference;
                    $run
                }
                BackendKind::Simd => {
                    let $b = simd::Simd;
                    $run
                }
                #[cfg(feature = "mkl")]
                BackendKind::Mkl => {
                    let $b = mkl::Mkl::get()?;
                    $run
                }
                #[cfg(feature = "gpu")]
                BackendKind::Gpu => {
                    let $b = gpu::Gpu::get()?;
                    $run
                }
                #[cfg(not(all(feature = "mkl", feature = "gpu")))]
                other => Err(not_built(other, other.name())),
            };
            match result {
                Ok(()) => {
                    LAST_USED.with(|l| l.set(Some(kind)));
                    return Ok(kind);
                }
                Err(e @ Error::Unsupported { .. }) if matches!($choice, BackendChoice::Auto) => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_err
            .unwrap_or_else(|| Error::BackendUnavailable { backend: "auto", reason: "no backend is available".into() }))
    }};
}

/// Runs a validated g-SpMM on the backend `choice` selects; returns which ran.
pub(crate) fn gspmm<O: BinaryOp, R: Reducer, I: Index>(
    choice: &BackendChoice,
    mut call: SpmmCall<'_, I>,
) -> Result<BackendKind> {
    #[cfg(feature = "mkl")]
    if matches!(choice, BackendChoice::Auto) && mkl::auto_prefers::<O, R, I>(&call) {
        // The one region where the crossover measurements put MKL ahead
        // (`mkl::AUTO_MAX_WIDTH`); anything MKL turns down falls through.
        match mkl::Mkl::get()?.gspmm::<O, R, I>(call.reborrow()) {
            Ok(()) => {
                LAST_USED.with(|l| l.set(Some(BackendKind::Mkl)));
                return Ok(BackendKind::Mkl);
            }
            Err(Error::Unsupported { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    dispatch_call!(choice, call, |b, c| b.gspmm::<O, R, I>(c))
}

/// Runs a validated g-SDDMM on the backend `choice` selects; returns which ran.
pub(crate) fn gsddmm<O: BinaryOp, I: Index>(choice: &BackendChoice, mut call: SddmmCall<'_, I>) -> Result<BackendKind> {
    dispatch_call!(choice, call, |b, c| b.gsddmm::<O, I>(c))
}

/// Runs a validated edge softmax on the backend `choice` selects.
pub(crate) fn edge_softmax<I: Index>(choice: &BackendChoice, mut call: EdgeSoftmaxCall<'_, I>) -> Result<BackendKind> {
    dispatch_call!(choice, call, |b, c| b.edge_softmax::<I>(c))
}

/// Runs a validated edge-softmax backward pass on the backend `choice` selects.
pub(crate) fn edge_softmax_backward<I: Index>(
    choice: &BackendChoice,
    mut call: EdgeSoftmaxBackwardCall<'_, I>,
) -> Result<BackendKind> {
    dispatch_call!(choice, call, |b, c| b.edge_softmax_backward::<I>(c))
}
