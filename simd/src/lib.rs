//! gnnkern-simd: the operator algebra, the layouts kernels read, and the
//! hand-tuned CPU kernels of gnnkern.
//!
//! This crate is a leaf: it knows nothing of graph construction or
//! validation. It takes [`layout::CsrView`]s, which only the validated graph
//! types of the `gnnkern` crate create, and [`layout::BroadcastPlan`]s.

pub mod index;
pub mod isa;
pub mod layout;
pub mod op;

pub use index::Index;
