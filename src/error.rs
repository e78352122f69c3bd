//! The error model: every invalid input is a typed [`Error`](enum@Error) that names the
//! problem (which array, which position, which shapes). Validation happens
//! before any output is written, so an error never leaves a partly written
//! output behind.

use thiserror::Error;

/// Convenience alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a gnnkern call.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// An id is negative or not below its bound.
    #[error("{what}[{position}] = {value} is out of range 0..{bound}")]
    IndexOutOfRange { what: &'static str, position: usize, value: i64, bound: usize },

    /// Two lengths that must agree do not.
    #[error("{what}: expected length {expected}, got {actual}")]
    LengthMismatch { what: &'static str, expected: usize, actual: usize },

    /// A CSR offset array is malformed.
    #[error("indptr is invalid: {reason} (at position {position})")]
    BadIndptr { reason: &'static str, position: usize },

    /// A count or offset does not fit the graph's index type.
    #[error("{what} = {count} does not fit index type {index_type}")]
    CountOverflow { what: &'static str, count: usize, index_type: &'static str },

    /// Edge ids of a CSR are not a permutation of `0..num_edges`.
    #[error("edge ids are not a permutation of 0..{num_edges}: id {value} at position {position} {problem}")]
    BadEdgeIds { num_edges: usize, position: usize, value: i64, problem: &'static str },

    /// Feature shapes that cannot be combined.
    #[error("{what}: lhs feature shape {lhs:?} and rhs feature shape {rhs:?} are incompatible: {reason}")]
    ShapeMismatch { what: String, lhs: Vec<usize>, rhs: Vec<usize>, reason: String },

    /// A tensor whose shape is not what the call needs.
    #[error("{what}: expected shape {expected:?}, got {actual:?}")]
    BadShape { what: String, expected: Vec<usize>, actual: Vec<usize> },

    /// A tensor's data length does not match the product of its shape.
    #[error("tensor data has {actual} elements but shape {shape:?} needs {expected}")]
    TensorSize { shape: Vec<usize>, expected: usize, actual: usize },

    /// An operand the operator needs was not given (or one it ignores was).
    #[error("{0}")]
    MissingOperand(String),

    /// An op, reducer or backend name that does not exist.
    #[error("unknown {kind} name {name:?}{hint}")]
    UnknownName { kind: &'static str, name: String, hint: String },

    /// A backend that was asked for but cannot run here.
    #[error("backend {backend} is unavailable: {reason}")]
    BackendUnavailable { backend: &'static str, reason: String },

    /// The backend cannot run this particular call (op, dtype, size).
    #[error("backend {backend} does not support {what}")]
    Unsupported { backend: &'static str, what: String },

    /// A failure inside a device backend (lost device, out of memory, ...).
    #[error("device error in backend {backend}: {message}")]
    Device { backend: &'static str, message: String },

    /// An arg array handed to a backward pass that its forward pass cannot
    /// have produced (an edge that does not enter the row's destination, a
    /// row outside its segment, -1 for a non-empty row, ...).
    #[error("{what}[{position}] = {value} {problem}")]
    BadArg { what: &'static str, position: usize, value: i64, problem: String },
}

/// A kernel's argument check (`gnnkern_simd::KernelError`) as a length
/// mismatch. Validation before the kernels should make it unreachable; if it
/// is not, the caller still gets a typed error rather than a panic.
impl From<gnnkern_simd::KernelError> for Error {
    fn from(e: gnnkern_simd::KernelError) -> Self {
        Error::LengthMismatch { what: e.what, expected: e.expected, actual: e.actual }
    }
}
