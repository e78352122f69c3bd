//! The kernel templates, generic over the message op `O`, the reducer `R`,
//! the index type `I` and the ISA `S`. Each entry point reads the active
//! ISA level once ([`crate::isa::active_level`]), checks its arguments, and
//! runs one [`crate::isa::Simd::vectorize`] per worker task.

mod arg_check;
mod arg_pull;
mod arg_scatter;
mod blocked;
mod common;
mod edge_partition;
mod sddmm;
mod slot_order;
mod softmax;
mod softmax_ranges;
mod spmm;
mod staged;

pub use arg_check::first_bad_arg_row;
pub use arg_pull::arg_pull;
pub use arg_scatter::{arg_scatter, arg_scatter_may_help};
pub use blocked::BlockedCsr;
pub use common::SharedMut;
pub use edge_partition::{EdgePartition, Grouping};
pub use sddmm::{
    SddmmArgs, SddmmOrder, edge_ids_scattered, sddmm, sddmm_blocking, sddmm_edge_order, sddmm_edge_parts,
    sddmm_may_stage, sddmm_may_stream, sddmm_order, sddmm_staging_into,
};
pub use slot_order::EdgeStaging;
pub use softmax::{edge_softmax, edge_softmax_backward, prefers_edge_order, softmax_may_stream};
pub use softmax_ranges::{
    MAX_CHUNK_EDGES, MAX_RANGE_ROWS, MIN_SEGMENT_ROWS, RangeChunks, edge_softmax_ranges, softmax_ranges_shape,
};
pub use spmm::{SpmmArgs, spmm, spmm_blocking, spmm_may_narrow, spmm_may_stage, spmm_staging_into};
pub use staged::StagingBuffer;
