//! Status codes, the thread-local error message, and the boundary every
//! entry point runs inside (errors and panics become status codes).

use crate::Error;
use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The result of every `gk_` function. `GK_OK` is 0; every other value is
/// an error, and `gk_last_error_message()` then names the problem.
/// A failed call has written nothing to any output (tensor or handle).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_status {
    /// Success.
    GK_OK = 0,
    /// A required pointer argument (tensor, array, output slot) was NULL, or
    /// a tensor with elements has a NULL `data` pointer.
    GK_ERROR_NULL_POINTER = 1,
    /// The graph handle is not live: never created, already destroyed, or zero.
    GK_ERROR_INVALID_HANDLE = 2,
    /// An enum argument (op, reducer, target, backend, ISA) holds a value
    /// outside its declared constants.
    GK_ERROR_INVALID_ENUM = 3,
    /// A tensor's dtype is not the one required (float32 features; int32 or
    /// int64 arg outputs matching the graph's index type).
    GK_ERROR_DTYPE = 4,
    /// A tensor is not in CPU memory (`device_type != kDLCPU`).
    GK_ERROR_DEVICE = 5,
    /// A shape is wrong: `ndim < 1`, a negative or overflowing extent, a
    /// leading dimension that is not the number of nodes/edges, feature
    /// shapes that do not broadcast, or an output of the wrong shape.
    GK_ERROR_SHAPE = 6,
    /// A tensor's memory layout is not supported: non-contiguous strides
    /// (only compact row-major tensors are accepted; the message names the
    /// strides), or data misaligned for its dtype after `byte_offset`.
    GK_ERROR_LAYOUT = 7,
    /// An output tensor overlaps an input or another output.
    GK_ERROR_ALIASING = 8,
    /// A node or edge id is negative or not below its bound, or an arg
    /// input of a max/min backward holds an id no forward pass could have
    /// produced (an edge that does not enter the row's destination).
    GK_ERROR_INDEX_OUT_OF_RANGE = 9,
    /// Graph arrays are inconsistent: a malformed `indptr`, edge ids that are
    /// not a permutation, or counts that do not fit the index type.
    GK_ERROR_INVALID_GRAPH = 10,
    /// The operator needs an operand that was NULL, or was given one it ignores.
    GK_ERROR_OPERAND = 11,
    /// The selected backend cannot run this call (forced backend only; under
    /// `GK_BACKEND_AUTO` another backend takes it).
    GK_ERROR_UNSUPPORTED = 12,
    /// The selected backend is not built in or cannot run on this machine.
    GK_ERROR_BACKEND_UNAVAILABLE = 13,
    /// A backend failed while running (device lost, out of memory, MKL error).
    GK_ERROR_BACKEND_FAILURE = 14,
    /// Any other invalid argument (a negative count, a thread count the
    /// pool cannot be built with, an ISA level this CPU lacks).
    GK_ERROR_INVALID_ARGUMENT = 15,
    /// A panic inside gnnkern was caught at the boundary (a bug: please
    /// report it with the message). Outputs may have been partly written.
    GK_ERROR_PANIC = 16,
}

/// A failed call: the status and the message for `gk_last_error_message`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: gk_status,
    pub message: String,
}

impl Failure {
    pub fn new(status: gk_status, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    pub fn null(what: &str) -> Self {
        Self::new(gk_status::GK_ERROR_NULL_POINTER, format!("{what} is NULL"))
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        use gk_status::*;
        let status = match &e {
            Error::IndexOutOfRange { .. } | Error::BadArg { .. } => GK_ERROR_INDEX_OUT_OF_RANGE,
            Error::LengthMismatch { .. }
            | Error::ShapeMismatch { .. }
            | Error::BadShape { .. }
            | Error::TensorSize { .. } => GK_ERROR_SHAPE,
            Error::BadIndptr { .. } | Error::CountOverflow { .. } | Error::BadEdgeIds { .. } => GK_ERROR_INVALID_GRAPH,
            Error::MissingOperand(_) => GK_ERROR_OPERAND,
            Error::UnknownName { .. } => GK_ERROR_INVALID_ARGUMENT,
            Error::BackendUnavailable { .. } => GK_ERROR_BACKEND_UNAVAILABLE,
            Error::Unsupported { .. } => GK_ERROR_UNSUPPORTED,
            Error::Device { .. } => GK_ERROR_BACKEND_FAILURE,
        };
        Failure::new(status, e.to_string())
    }
}

pub(crate) type CResult<T = ()> = Result<T, Failure>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let bytes: Vec<u8> = message.bytes().map(|b| if b == 0 { b'?' } else { b }).collect();
    let message = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// Runs an entry point: `Ok` -> `GK_OK`; an error or a panic -> its status,
/// with the message stored for `gk_last_error_message`. No panic unwinds
/// into the caller.
pub(crate) fn boundary(f: impl FnOnce() -> CResult) -> gk_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => gk_status::GK_OK,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            set_last_error(&format!("panic inside gnnkern (a bug; please report): {what}"));
            gk_status::GK_ERROR_PANIC
        }
    }
}

/// The message of the most recent failed `gk_` call on the calling thread
/// (an empty string if none has failed). Never NULL.
///
/// The string is owned by gnnkern and stays valid until the next failing
/// `gk_` call on the same thread; copy it to keep it. Successful calls do not
/// change it.
#[unsafe(no_mangle)]
pub extern "C" fn gk_last_error_message() -> *const c_char {
    // The CString lives in the thread-local until replaced by the next
    // failure on this thread; its heap buffer does not move.
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The name of a status code (`"GK_ERROR_SHAPE"`), a static string; NULL
/// never: unknown values give `"GK_UNKNOWN_STATUS"`.
#[unsafe(no_mangle)]
pub extern "C" fn gk_status_name(status: i32) -> *const c_char {
    use gk_status::*;
    let all = [
        (GK_OK, c"GK_OK"),
        (GK_ERROR_NULL_POINTER, c"GK_ERROR_NULL_POINTER"),
        (GK_ERROR_INVALID_HANDLE, c"GK_ERROR_INVALID_HANDLE"),
        (GK_ERROR_INVALID_ENUM, c"GK_ERROR_INVALID_ENUM"),
        (GK_ERROR_DTYPE, c"GK_ERROR_DTYPE"),
        (GK_ERROR_DEVICE, c"GK_ERROR_DEVICE"),
        (GK_ERROR_SHAPE, c"GK_ERROR_SHAPE"),
        (GK_ERROR_LAYOUT, c"GK_ERROR_LAYOUT"),
        (GK_ERROR_ALIASING, c"GK_ERROR_ALIASING"),
        (GK_ERROR_INDEX_OUT_OF_RANGE, c"GK_ERROR_INDEX_OUT_OF_RANGE"),
        (GK_ERROR_INVALID_GRAPH, c"GK_ERROR_INVALID_GRAPH"),
        (GK_ERROR_OPERAND, c"GK_ERROR_OPERAND"),
        (GK_ERROR_UNSUPPORTED, c"GK_ERROR_UNSUPPORTED"),
        (GK_ERROR_BACKEND_UNAVAILABLE, c"GK_ERROR_BACKEND_UNAVAILABLE"),
        (GK_ERROR_BACKEND_FAILURE, c"GK_ERROR_BACKEND_FAILURE"),
        (GK_ERROR_INVALID_ARGUMENT, c"GK_ERROR_INVALID_ARGUMENT"),
        (GK_ERROR_PANIC, c"GK_ERROR_PANIC"),
    ];
    all.iter().find(|(s, _)| *s as i32 == status).map_or(c"GK_UNKNOWN_STATUS", |(_, n)| n).as_ptr()
}
