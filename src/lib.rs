//! gnnkern: the two sparse primitives of graph neural networks — g-SpMM
//! and g-SDDMM — with every DGL operator, reducer and gradient, behind one
//! dispatch layer over interchangeable backends.
//!
//! ```
//! use gnnkern::{Exec, Graph, SpmmIo, SpmmSpec, Tensor};
//! // 3 nodes, edges 0->2, 1->2: node 2 sums its neighbours' features.
//! let g = Graph::<i32>::from_coo(3, 3, vec![0, 1], vec![2, 2]).unwrap();
//! let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], vec![3, 1]).unwrap();
//! let mut out = Tensor::zeros(&[3, 1]).unwrap();
//! let spec = SpmmSpec::from_name("copy_u_sum").unwrap();
//! Exec::default().gspmm(&g, spec, SpmmIo::new(Some(x.view()), None, out.view_mut())).unwrap();
//! assert_eq!(out.data(), &[0.0, 0.0, 3.0]);
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the layers and where each kind of change goes.

pub mod backend;
pub mod capi;
mod error;
pub mod graph;
mod ops;
pub mod segment;
mod spec;
pub mod tensor;
pub mod threads;

pub use backend::{BackendChoice, BackendKind};
pub use error::{Error, Result};
/// Transparent huge pages for large buffers (see the module docs).
pub use gnnkern_simd::huge_pages;
pub use gnnkern_simd::index::Index;
pub use gnnkern_simd::op;
pub use graph::Graph;
pub use ops::{Exec, Gradients, SddmmBackwardIo, SddmmIo, SpmmBackwardIo, SpmmGradInputs, SpmmIo, SpmmOutput, Wanted};
pub use spec::{SddmmSpec, SpmmSpec};
pub use tensor::{
    AlignedVec, CACHE_LINE, Element, Tensor, TensorMut, TensorRef, aligned_copy, aligned_filled, aligned_with_capacity,
};
