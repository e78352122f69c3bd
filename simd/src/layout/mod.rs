//! Data layouts shared by every backend: the validated CSR view kernels
//! traverse, and the broadcasting plan that maps output elements to operand
//! elements.

mod broadcast;
mod csr;

pub use broadcast::{BroadcastError, BroadcastPlan, OperandShape, Run};
pub use csr::CsrView;
