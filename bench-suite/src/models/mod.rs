//! The model suite: GCN, GraphSAGE (full graph and sampled mini-batch), GAT
//! and LGNN, trained and evaluated on gnnkern's sparse kernels with dense
//! parts on `gemm`.
//!
//! Structure (bottom up):
//! - [`dense`]: the row-major [`Mat`] and GEMM (`gemm`, x86-v4 kernels);
//! - [`nn`]: activations, dropout, masked cross-entropy; [`batch_norm`]:
//!   batch norm with running statistics;
//! - [`sparse`]: the gnnkern calls the layers make, timed as "sparse";
//! - [`conv`]: one type per graph convolution (`GraphConv`, `SageConv`,
//!   `GatConv`, `LgnnLayer`), each with an explicit `forward` that caches
//!   what its `backward` needs — no autograd tape;
//! - [`nets`]: two-layer models composed from the convolutions; [`lgnn`]:
//!   the LGNN community-detection model, loss and SBM mixture;
//! - [`optim`]: Adam; [`train`]: the training loop, timing and the JSON
//!   report the `train` CLI prints; [`data`]: datasets and generated graphs;
//!   mini-batch training samples blocks with `gnnkern_datasets::sample_block`.
//!
//! Every layer's backward is checked against central finite differences on
//! tiny graphs (`bench-suite/tests/models_grad.rs`).

pub mod batch_norm;
pub mod conv;
pub mod data;
pub mod dense;
pub mod dropout;
pub mod lgnn;
pub mod minibatch;
pub mod nets;
pub mod nn;
pub mod optim;
pub mod rng;
pub mod sparse;
pub mod train;

mod ctx;
mod error;
mod pool;

pub use ctx::{Ctx, Profile};
pub use dense::{Buf, Mat, Param};
pub use error::{ModelError, Result};
