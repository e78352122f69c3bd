//! gnnkern-gpu: the portable GPU path of gnnkern — g-SpMM, g-SDDMM and edge
//! softmax as WGSL compute shaders on wgpu (Vulkan, Metal, DX12, GL).
//!
//! The algorithm (FeatGraph's GPU scheme, pull-based, no float atomics so the
//! GL backend works too):
//!
//! ```text
//! g-SpMM   pass 1 (accumulate): one workgroup per *segment* = a run of at most
//!          SEGMENT_EDGES consecutive in-CSR entries of one destination row;
//!          its threads split the output features (each thread owns ACC
//!          columns of a WG·ACC-wide feature tile) and walk the segment's
//!          edges in row order, so max/min ties resolve exactly as on the CPU.
//!          A hub row is several segments, accumulated by different
//!          workgroups in parallel (FeatGraph's hybrid partitioning).
//!          pass 2 (finalize): one workgroup per destination row merges the
//!          row's segment partials in order, divides (mean), writes 0 / -1 for
//!          empty rows and turns winning CSR slots into (source, edge) ids.
//! g-SDDMM  edge-parallel: one thread per output element; `dot` gives each
//!          edge a workgroup whose threads split the reduced dimension and
//!          combine it with a shared-memory tree reduction.
//! softmax  composed on the device from the two: max (g-SpMM), exp(x - max)
//!          (g-SDDMM), sum (g-SpMM), divide (g-SDDMM); its backward likewise.
//! ```
//!
//! Device and queue come from outside ([`GpuContext::new`]) or from the
//! environment ([`GpuContext::from_env`], honouring `WGPU_BACKEND`,
//! `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`). Tensors live in GPU buffers with
//! explicit upload and download ([`GpuTensor`]); a graph is uploaded once
//! ([`GpuGraph`]) and reused. Arrays bigger than the device's storage-binding
//! limit are processed through aligned binding windows (see [`mod@plan`]).
//!
//! This crate knows nothing of graph validation: it takes the validated
//! [`gnnkern_simd::layout::CsrView`] the core crate hands out.

mod context;
mod error;
mod graph;
pub mod plan;
mod sddmm;
mod shader;
mod softmax;
mod spmm;
mod tensor;

pub use context::{AdapterSummary, GpuContext};
pub use error::{GpuError, Result};
pub use graph::GpuGraph;
pub use sddmm::SddmmArgs;
pub use shader::{ACC, MessageOp, SEGMENT_EDGES, WG};
pub use spmm::SpmmArgs;
pub use tensor::{GpuIds, GpuTensor};
