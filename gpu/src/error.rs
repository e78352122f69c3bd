//! Typed errors of the GPU path: nothing here panics on a device failure.

use thiserror::Error;

/// Convenience alias.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;

/// What can go wrong on the GPU path.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// No adapter could be obtained (no driver, or none matches `WGPU_ADAPTER_NAME`).
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),
    /// The device ran out of memory.
    #[error("GPU out of memory: {0}")]
    OutOfMemory(String),
    /// The device was lost, or reported an internal or validation error.
    #[error("GPU device error: {0}")]
    Device(String),
    /// Inconsistent arguments to the device-level API (lengths, contexts).
    #[error("invalid GPU call: {0}")]
    InvalidArgument(String),
    /// The call needs more than this device offers (limits, index range, operator form).
    #[error("{0}")]
    Unsupported(String),
}
