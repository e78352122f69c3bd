//! gnnkern-simd: the operator algebra, the layouts kernels read, and the
//! hand-tuned CPU kernels of gnnkern.
//!
//! This crate is a leaf: it knows nothing of graph construction or
//! validation. It takes [`layout::CsrView`]s, which only the validated graph
//! types of the `gnnkern` crate create, and [`layout::BroadcastPlan`]s.
//!
//! | where | what |
//! |---|---|
//! | [`op`] | message functions and reducers as types |
//! | [`layout`] | `CsrView`, `BroadcastPlan` |
//! | [`isa`] | levels, tokens, the per-ISA vocabulary (`isa/avx512.rs`, `isa/avx2.rs`, `isa/portable.rs`) |
//! | [`kernels`] | the kernel templates: g-SpMM (plain and source-blocked), g-SDDMM, edge softmax |
//! | [`tuning`] | cache sizes, the traffic model, knobs |
//! | [`math`] | the vectorised `exp` |

pub mod buffer;
mod error;
pub mod huge_pages;
pub mod index;
pub mod isa;
pub mod kernels;
pub mod layout;
pub mod math;
pub mod op;
pub mod tuning;

pub use error::KernelError;
pub use index::Index;
