//! The C enums, and the one place their values become gnnkern types.
//!
//! A C caller can pass any integer where an enum is declared, and a Rust
//! enum holding an undeclared value is undefined behaviour. So entry points
//! take the `Raw*` wrappers (plain `int32_t` in the header, where cbindgen
//! renames them to the enum's typedef) and convert them here, rejecting
//! unknown values with `GK_ERROR_INVALID_ENUM`.

use super::status::{CResult, Failure, gk_status};
use crate::BackendKind;
use gnnkern_simd::isa::IsaLevel;
use gnnkern_simd::op::{BinaryOpKind, ReduceKind, Target};

/// A message function φ(a, b) (DGL's binary operators).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_op {
    /// a + b
    GK_OP_ADD = 0,
    /// a - b
    GK_OP_SUB = 1,
    /// a * b
    GK_OP_MUL = 2,
    /// a / b
    GK_OP_DIV = 3,
    /// a (DGL `copy_lhs`: `copy_u` is `GK_OP_COPY_LHS` with lhs target `GK_TARGET_SRC`)
    GK_OP_COPY_LHS = 4,
    /// b (DGL `copy_rhs`)
    GK_OP_COPY_RHS = 5,
    /// Σ_k a_k·b_k over the last feature dimension (kept as size 1).
    GK_OP_DOT = 6,
}

/// A reducer ρ over a destination's in-edges.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_reduce {
    GK_REDUCE_SUM = 0,
    /// Writes the arg outputs (source id / edge id of the winner) if given.
    GK_REDUCE_MAX = 1,
    /// Writes the arg outputs (source id / edge id of the winner) if given.
    GK_REDUCE_MIN = 2,
    /// Sum divided by the in-degree (0 for no in-edges).
    GK_REDUCE_MEAN = 3,
}

/// Where an operand row comes from for an edge e = (u, v).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_target {
    /// The source node u (DGL `u`): the tensor has num_src rows.
    GK_TARGET_SRC = 0,
    /// The edge e (DGL `e`): num_edges rows, indexed by edge id.
    GK_TARGET_EDGE = 1,
    /// The destination node v (DGL `v`): num_dst rows.
    GK_TARGET_DST = 2,
}

/// How `gk_segment_reduce` describes its segments.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_segments {
    /// `num_segments + 1` offsets: segment s holds rows `offsets[s]..offsets[s + 1]`
    /// (starts at 0, never decreases, ends at the row count).
    GK_SEGMENTS_OFFSETS = 0,
    /// `num_segments` lengths (DGL's `seglen`): consecutive segments of
    /// `lengths[s] >= 0` rows each, summing to the row count.
    GK_SEGMENTS_LENGTHS = 1,
}

/// The id type of a graph (and of its arg outputs).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_index_type {
    GK_INDEX_INT32 = 0,
    GK_INDEX_INT64 = 1,
}

/// A backend selection (`gk_set_backend`) or report (`gk_last_backend`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_backend {
    /// Report only: no op has succeeded on this thread yet.
    GK_BACKEND_NONE = -1,
    /// Selection only: the fastest available backend that supports the call.
    GK_BACKEND_AUTO = 0,
    /// Plain loops accumulating in f64 (the oracle).
    GK_BACKEND_REFERENCE = 1,
    /// The hand-tuned CPU kernels.
    GK_BACKEND_SIMD = 2,
    /// Intel MKL sparse BLAS (only in builds with the `mkl` feature).
    GK_BACKEND_MKL = 3,
    /// wgpu compute shaders (only in builds with the `gpu` feature).
    GK_BACKEND_GPU = 4,
}

/// A CPU instruction-set level of the kernels.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum gk_isa {
    /// Report only: no op has succeeded on this thread yet. Selection:
    /// return to the default (`GNNKERN_ISA`, else the best the CPU has).
    GK_ISA_DEFAULT = -1,
    /// No x86 extensions.
    GK_ISA_PORTABLE = 0,
    /// x86-64-v3: AVX2 + FMA.
    GK_ISA_AVX2 = 1,
    /// x86-64-v4: AVX-512 F/BW/DQ/VL.
    GK_ISA_AVX512 = 2,
}

macro_rules! raw_enum {
    ($(#[$doc:meta])* $raw:ident) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug)]
        pub struct $raw(pub i32);
    };
}

raw_enum!(
    /// A `gk_op` as passed by C (any `int32_t`).
    RawOp
);
raw_enum!(
    /// A `gk_reduce` as passed by C.
    RawReduce
);
raw_enum!(
    /// A `gk_target` as passed by C.
    RawTarget
);
raw_enum!(
    /// A `gk_segments` as passed by C.
    RawSegments
);
raw_enum!(
    /// A `gk_backend` as passed by C.
    RawBackend
);
raw_enum!(
    /// A `gk_isa` as passed by C.
    RawIsa
);

fn invalid(what: &str, value: i32, known: &str) -> Failure {
    Failure::new(gk_status::GK_ERROR_INVALID_ENUM, format!("{what} = {value} is not a valid value (expected {known})"))
}

impl RawOp {
    pub(crate) fn kind(self) -> CResult<BinaryOpKind> {
        Ok(match self.0 {
            0 => BinaryOpKind::Add,
            1 => BinaryOpKind::Sub,
            2 => BinaryOpKind::Mul,
            3 => BinaryOpKind::Div,
            4 => BinaryOpKind::CopyLhs,
            5 => BinaryOpKind::CopyRhs,
            6 => BinaryOpKind::Dot,
            v => return Err(invalid("op", v, "a gk_op: 0..=6")),
        })
    }
}

impl RawReduce {
    pub(crate) fn kind(self) -> CResult<ReduceKind> {
        Ok(match self.0 {
            0 => ReduceKind::Sum,
            1 => ReduceKind::Max,
            2 => ReduceKind::Min,
            3 => ReduceKind::Mean,
            v => return Err(invalid("reduce", v, "a gk_reduce: 0..=3")),
        })
    }
}

impl RawTarget {
    pub(crate) fn target(self, what: &str) -> CResult<Target> {
        Ok(match self.0 {
            0 => Target::Src,
            1 => Target::Edge,
            2 => Target::Dst,
            v => return Err(invalid(what, v, "a gk_target: 0..=2")),
        })
    }
}

impl RawSegments {
    pub(crate) fn kind(self) -> CResult<gk_segments> {
        Ok(match self.0 {
            0 => gk_segments::GK_SEGMENTS_OFFSETS,
            1 => gk_segments::GK_SEGMENTS_LENGTHS,
            v => return Err(invalid("segments", v, "a gk_segments: 0..=1")),
        })
    }
}

/// `gk_backend` values and gnnkern's backend names, for the backends C can
/// name. Mapping through the name keeps this table valid whichever backends
/// a build contains.
const BACKEND_NAMES: [(gk_backend, &str); 4] = [
    (gk_backend::GK_BACKEND_REFERENCE, "reference"),
    (gk_backend::GK_BACKEND_SIMD, "simd"),
    (gk_backend::GK_BACKEND_MKL, "mkl"),
    (gk_backend::GK_BACKEND_GPU, "gpu"),
];

impl RawBackend {
    /// `None` for `GK_BACKEND_AUTO`, else the backend.
    pub(crate) fn kind(self) -> CResult<Option<BackendKind>> {
        if self.0 == gk_backend::GK_BACKEND_AUTO as i32 {
            return Ok(None);
        }
        let (_, name) = BACKEND_NAMES
            .iter()
            .find(|(b, _)| *b as i32 == self.0)
            .ok_or_else(|| invalid("backend", self.0, "a gk_backend: 0..=4"))?;
        BackendKind::from_name(name).map(Some).map_err(|_| {
            Failure::new(
                gk_status::GK_ERROR_BACKEND_UNAVAILABLE,
                format!("backend {name} is not part of this gnnkern version"),
            )
        })
    }
}

impl gk_backend {
    pub(crate) fn from_kind(kind: Option<BackendKind>) -> gk_backend {
        kind.and_then(|k| BACKEND_NAMES.iter().find(|(_, n)| *n == k.name()).map(|(b, _)| *b))
            .unwrap_or(gk_backend::GK_BACKEND_NONE)
    }
}

impl RawIsa {
    /// `None` for `GK_ISA_DEFAULT`.
    pub(crate) fn level(self) -> CResult<Option<IsaLevel>> {
        Ok(match self.0 {
            -1 => None,
            0 => Some(IsaLevel::Portable),
            1 => Some(IsaLevel::Avx2),
            2 => Some(IsaLevel::Avx512),
            v => return Err(invalid("isa", v, "a gk_isa: -1..=2")),
        })
    }
}

impl gk_isa {
    pub(crate) fn from_level(level: Option<IsaLevel>) -> gk_isa {
        match level {
            None => gk_isa::GK_ISA_DEFAULT,
            Some(IsaLevel::Portable) => gk_isa::GK_ISA_PORTABLE,
            Some(IsaLevel::Avx2) => gk_isa::GK_ISA_AVX2,
            Some(IsaLevel::Avx512) => gk_isa::GK_ISA_AVX512,
        }
    }
}
