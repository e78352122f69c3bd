//! Data layouts shared by every backend: the validated CSR view kernels
//! traverse, the validated edge-to-destination map and edge list, and the broadcasting
//! plan that maps output elements to operand elements.

mod broadcast;
mod csr;
mod edge_dst;
mod edge_list;

pub use broadcast::{BroadcastError, BroadcastPlan, OperandShape, Run};
pub use csr::CsrView;
pub use edge_dst::EdgeDst;
pub use edge_list::EdgeList;
