//! Graph convolutions, one type each, with explicit forward and backward.
//!
//! A convolution maps source-node features `x` (`[num_src, in]`) over a
//! graph or a sampled bipartite block `g` to destination features
//! (`[num_dst, out]`). In a block the destination nodes are the first
//! `num_dst` source nodes (DGL's block convention), which is what "self"
//! terms read; on a full graph `num_src == num_dst`.
//!
//! `forward` caches what `backward` needs except the input itself, which
//! the caller keeps (the model holds every activation anyway, so caching it
//! twice would copy `N × in` floats per layer). `backward` accumulates
//! parameter gradients and returns the input gradient only when asked (the
//! first layer's input gradient is a wasted GEMM).

mod gat_conv;
mod graph_conv;
mod lgnn;
mod sage_conv;

pub use gat_conv::GatConv;
pub use graph_conv::GraphConv;
pub use lgnn::{LgnnGraphs, LgnnLayer};
pub use sage_conv::{SageAggregator, SageConv};

use super::sparse::G;
use super::{Ctx, Mat, Param, Result};

/// A graph convolution with explicit forward and backward.
///
/// Returned tensors come from the context's buffer pool ([`Ctx::mat`]); the
/// caller hands them back with [`Ctx::recycle`] once done, and layers
/// recycle the caches they replace.
pub trait Conv {
    /// Output features of the destination nodes of `g`.
    fn forward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat) -> Result<Mat>;

    /// Accumulates parameter gradients from `grad_out` (`[num_dst, out]`)
    /// for the last `forward` (same `g`, same `x`) and returns the input
    /// gradient when `need_dx`.
    fn backward(&mut self, ctx: &mut Ctx, g: &G, x: &Mat, grad_out: &Mat, need_dx: bool) -> Result<Option<Mat>>;

    /// The trainable parameters, in a fixed order.
    fn params(&mut self) -> Vec<&mut Param>;
}
