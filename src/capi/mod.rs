//! The C ABI: `include/gnnkern.h` is generated from this module by cbindgen
//! (`cbindgen.toml`; `tests/c_header.rs` fails when the committed header is
//! out of date). See `docs/C_ABI.md` for linking, ownership and threading.
//!
//! Conventions, for every `gk_` function:
//! - it returns a [`status::gk_status`]; on error,
//!   [`status::gk_last_error_message`] names the problem, and nothing has
//!   been written (no output tensor element, no handle);
//! - no panic crosses the boundary (the crate-private `status::boundary` catches it and
//!   reports `GK_ERROR_PANIC`);
//! - graphs are opaque registry handles ([`graph`] explains why), so a
//!   destroyed or invented handle is an error, not a crash;
//! - feature tensors are DLPack `DLTensor*`, checked in [`dlpack`]; outputs
//!   are caller-allocated;
//! - op, reducer and operand targets are C enums, converted to gnnkern types
//!   in exactly one place ([`enums`]);
//! - every op runs on gnnkern's own rayon pool ([`runtime`]);
//! - segment reductions ([`segment`]) follow the same rules.

pub mod dlpack;
pub mod enums;
pub mod graph;
pub mod ops;
pub mod runtime;
pub mod segment;
pub mod status;
