//! The operator algebra: message functions and reducers as types.
//!
//! A g-SpMM computes, for every destination `v`,
//! `out[v] = ρ({ φ(lhs[a(e)], rhs[b(e)]) : e = (u, v) ∈ E })`, and a g-SDDMM
//! computes `out[e] = φ(lhs[a(e)], rhs[b(e)])`, where `a` and `b` pick the
//! operand row from the edge's source (`u`), the edge itself (`e`) or its
//! destination (`v`) — see [`Target`].
//!
//! `φ` is a [`BinaryOp`] and `ρ` a [`Reducer`]. Both are zero-sized types
//! whose associated constants and methods give every form a backend needs
//! (f32 scalar, f64 oracle, SIMD vector, WGSL expression), so a kernel
//! template is written once and monomorphized per operator (DGL's
//! `spmm_binary_ops.h`, FeatGraph's templates). A user-defined message
//! function is one more `BinaryOp` impl and gets the same fused traversal.
//!
//! Runtime names (`u_mul_e_sum`, C ABI enums, CLI flags) map onto these
//! types in exactly one place each: [`BinaryOpKind`], [`ReduceKind`] and
//! [`Target`] are the runtime mirrors, and `dispatch_binary_op!` /
//! `dispatch_reducer!` turn them into types.

use crate::isa::Simd;

/// Where an operand row comes from, for an edge `e = (u, v)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The source node `u` (DGL's `u`).
    Src,
    /// The edge `e` itself (DGL's `e`), indexed by edge id.
    Edge,
    /// The destination node `v` (DGL's `v`).
    Dst,
}

impl Target {
    /// DGL's one-letter name: `u`, `e` or `v`.
    pub const fn letter(self) -> char {
        match self {
            Target::Src => 'u',
            Target::Edge => 'e',
            Target::Dst => 'v',
        }
    }

    /// Parses `u`, `e` or `v`.
    pub fn from_letter(c: char) -> Option<Self> {
        match c {
            'u' => Some(Target::Src),
            'e' => Some(Target::Edge),
            'v' => Some(Target::Dst),
            _ => None,
        }
    }
}

/// Runtime mirror of the built-in message functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOpKind {
    Add,
    Sub,
    Mul,
    Div,
    /// `φ(a, b) = a` (DGL `copy_lhs`, e.g. `copy_u`).
    CopyLhs,
    /// `φ(a, b) = b` (DGL `copy_rhs`, e.g. `copy_e`).
    CopyRhs,
    /// `φ(a, b) = Σ_k a[k]·b[k]` over the last feature dimension.
    Dot,
}

impl BinaryOpKind {
    /// Every built-in message function.
    pub const ALL: [BinaryOpKind; 7] = [
        BinaryOpKind::Add,
        BinaryOpKind::Sub,
        BinaryOpKind::Mul,
        BinaryOpKind::Div,
        BinaryOpKind::CopyLhs,
        BinaryOpKind::CopyRhs,
        BinaryOpKind::Dot,
    ];

    /// DGL's name of the operator (`add`, `mul`, `copy_lhs`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            BinaryOpKind::Add => Add::NAME,
            BinaryOpKind::Sub => Sub::NAME,
            BinaryOpKind::Mul => Mul::NAME,
            BinaryOpKind::Div => Div::NAME,
            BinaryOpKind::CopyLhs => CopyLhs::NAME,
            BinaryOpKind::CopyRhs => CopyRhs::NAME,
            BinaryOpKind::Dot => Dot::NAME,
        }
    }

    /// Parses DGL's operator name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the operator reads its left operand.
    pub const fn uses_lhs(self) -> bool {
        !matches!(self, BinaryOpKind::CopyRhs)
    }

    /// Whether the operator reads its right operand.
    pub const fn uses_rhs(self) -> bool {
        !matches!(self, BinaryOpKind::CopyLhs)
    }

    /// Evaluates the operator on one pair, in f64 (dot: one product term).
    pub fn apply_f64(self, a: f64, b: f64) -> f64 {
        match self {
            BinaryOpKind::Add => a + b,
            BinaryOpKind::Sub => a - b,
            BinaryOpKind::Mul | BinaryOpKind::Dot => a * b,
            BinaryOpKind::Div => a / b,
            BinaryOpKind::CopyLhs => a,
            BinaryOpKind::CopyRhs => b,
        }
    }
}

/// Runtime mirror of the built-in reducers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Max,
    Min,
    Mean,
}

impl ReduceKind {
    /// Every built-in reducer.
    pub const ALL: [ReduceKind; 4] = [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Mean];

    /// DGL's name of the reducer.
    pub const fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => Sum::NAME,
            ReduceKind::Max => Max::NAME,
            ReduceKind::Min => Min::NAME,
            ReduceKind::Mean => Mean::NAME,
        }
    }

    /// Parses DGL's reducer name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the reducer produces arg outputs (max and min).
    pub const fn has_arg(self) -> bool {
        matches!(self, ReduceKind::Max | ReduceKind::Min)
    }
}

/// A message function `φ(a, b)`, applied elementwise (after broadcasting).
///
/// For `REDUCES_LAST_DIM` operators (dot) the elementwise form is one product
/// term and the kernel sums the terms over the last feature dimension.
pub trait BinaryOp: Copy + Default + Send + Sync + 'static {
    /// Name used in op names and error messages.
    const NAME: &'static str;
    /// The built-in this type implements; `None` for user-defined operators.
    const KIND: Option<BinaryOpKind>;
    /// Whether `a` is read (false: the lhs operand may be absent).
    const USE_LHS: bool;
    /// Whether `b` is read (false: the rhs operand may be absent).
    const USE_RHS: bool;
    /// Whether the elementwise results are summed over the last feature dimension.
    const REDUCES_LAST_DIM: bool = false;
    /// WGSL expression of `φ` in the f32 variables `a` and `b`; `None` if the
    /// operator has no GPU form (the GPU backend then reports it unsupported).
    const WGSL: Option<&'static str> = None;

    /// f32 scalar form.
    fn apply(a: f32, b: f32) -> f32;
    /// f64 form used by the reference oracle.
    fn apply_f64(a: f64, b: f64) -> f64;
    /// Vector form on the ISA `S`.
    fn apply_vec<S: Simd>(s: S, a: S::F32, b: S::F32) -> S::F32;
    /// `acc + φ(a, b)` on the ISA `S`: the sum reducer's inner step.
    /// Operators with a fused form override it (`mul`, `dot`: one FMA).
    #[inline(always)]
    fn accumulate_vec<S: Simd>(s: S, a: S::F32, b: S::F32, acc: S::F32) -> S::F32 {
        s.add(acc, Self::apply_vec(s, a, b))
    }
}

macro_rules! binary_op {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $kind:ident, lhs: $ul:expr, rhs: $ur:expr,
     dot: $dot:expr, wgsl: $wgsl:literal, |$a:ident, $b:ident| $scalar:expr, |$s:ident, $va:ident, $vb:ident| $vector:expr
     $(, fused: |$fs:ident, $fa:ident, $fb:ident, $fc:ident| $fused:expr)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl BinaryOp for $ty {
            const NAME: &'static str = $name;
            const KIND: Option<BinaryOpKind> = Some(BinaryOpKind::$kind);
            const USE_LHS: bool = $ul;
            const USE_RHS: bool = $ur;
            const REDUCES_LAST_DIM: bool = $dot;
            const WGSL: Option<&'static str> = Some($wgsl);

            #[inline(always)]
            fn apply($a: f32, $b: f32) -> f32 {
                $scalar
            }
            #[inline(always)]
            fn apply_f64($a: f64, $b: f64) -> f64 {
                $scalar
            }
            #[inline(always)]
            fn apply_vec<S: Simd>($s: S, $va: S::F32, $vb: S::F32) -> S::F32 {
                $vector
            }
            $(
                #[inline(always)]
                fn accumulate_vec<S: Simd>($fs: S, $fa: S::F32, $fb: S::F32, $fc: S::F32) -> S::F32 {
                    $fused
                }
            )?
        }
    };
}

binary_op!(/// `a + b`
    Add, "add", Add, lhs: true, rhs: true, dot: false, wgsl: "(a + b)", |a, b| a + b, |s, a, b| s.add(a, b));
binary_op!(/// `a - b`
    Sub, "sub", Sub, lhs: true, rhs: true, dot: false, wgsl: "(a - b)", |a, b| a - b, |s, a, b| s.sub(a, b));
binary_op!(/// `a * b`
    Mul, "mul", Mul, lhs: true, rhs: true, dot: false, wgsl: "(a * b)", |a, b| a * b, |s, a, b| s.mul(a, b),
    fused: |s, a, b, acc| s.mul_add(a, b, acc));
binary_op!(/// `a / b` (IEEE: `x / 0` is ±inf or NaN)
    Div, "div", Div, lhs: true, rhs: true, dot: false, wgsl: "(a / b)", |a, b| a / b, |s, a, b| s.div(a, b));
binary_op!(/// `a` (the rhs operand is not read)
    CopyLhs, "copy_lhs", CopyLhs, lhs: true, rhs: false, dot: false, wgsl: "a", |a, _b| a, |_s, a, _b| a);
binary_op!(/// `b` (the lhs operand is not read)
    CopyRhs, "copy_rhs", CopyRhs, lhs: false, rhs: true, dot: false, wgsl: "b", |_a, b| b, |_s, _a, b| b);
binary_op!(/// `Σ_k a[k]·b[k]` over the last feature dimension; elementwise form `a * b`
    Dot, "dot", Dot, lhs: true, rhs: true, dot: true, wgsl: "(a * b)", |a, b| a * b, |s, a, b| s.mul(a, b),
    fused: |s, a, b, acc| s.mul_add(a, b, acc));

/// A reducer `ρ` over a destination's incoming messages.
///
/// Output contract (every backend): a destination with no in-edges gets `0`
/// for every reducer, and `-1` in both arg outputs of max/min; no `±inf`
/// ever leaks from an empty row. Max/min propagate NaN (a NaN message makes
/// the result NaN) and, among equal extreme messages, keep the first one in
/// in-CSR row order, which is ascending (source id, edge id).
pub trait Reducer: Copy + Default + Send + Sync + 'static {
    /// Name used in op names.
    const NAME: &'static str;
    /// The runtime mirror.
    const KIND: ReduceKind;
    /// Value the accumulator starts from (sum: 0, max: -inf, min: +inf).
    const IDENTITY: f32;
    /// Whether arg outputs exist (max/min).
    const HAS_ARG: bool;
    /// Whether the sum is divided by the in-degree at the end (mean).
    const DIVIDES_BY_DEGREE: bool = false;

    /// Whether `val` replaces `acc` (max/min); unused by sum and mean.
    fn replaces(val: f32, acc: f32) -> bool;
    /// f64 form of [`Reducer::replaces`] for the oracle.
    fn replaces_f64(val: f64, acc: f64) -> bool;
}

macro_rules! sum_like {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $kind:ident, $div:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl Reducer for $ty {
            const NAME: &'static str = $name;
            const KIND: ReduceKind = ReduceKind::$kind;
            const IDENTITY: f32 = 0.0;
            const HAS_ARG: bool = false;
            const DIVIDES_BY_DEGREE: bool = $div;

            #[inline(always)]
            fn replaces(_val: f32, _acc: f32) -> bool {
                false
            }
            #[inline(always)]
            fn replaces_f64(_val: f64, _acc: f64) -> bool {
                false
            }
        }
    };
}

sum_like!(/// `Σ messages`
    Sum, "sum", Sum, false);
sum_like!(/// `Σ messages / in-degree` (0 for an empty row)
    Mean, "mean", Mean, true);

macro_rules! extreme {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $kind:ident, $identity:expr, $cmp:tt) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl Reducer for $ty {
            const NAME: &'static str = $name;
            const KIND: ReduceKind = ReduceKind::$kind;
            const IDENTITY: f32 = $identity;
            const HAS_ARG: bool = true;

            /// Strictly better, or the first NaN (a NaN accumulator is never replaced).
            #[inline(always)]
            fn replaces(val: f32, acc: f32) -> bool {
                !acc.is_nan() && (val $cmp acc || val.is_nan())
            }
            #[inline(always)]
            fn replaces_f64(val: f64, acc: f64) -> bool {
                !acc.is_nan() && (val $cmp acc || val.is_nan())
            }
        }
    };
}

extreme!(/// Largest message, with arg outputs
    Max, "max", Max, f32::NEG_INFINITY, >);
extreme!(/// Smallest message, with arg outputs
    Min, "min", Min, f32::INFINITY, <);

/// Runs `$body` with `$O` bound to the [`BinaryOp`] type named by a
/// [`BinaryOpKind`] value. The one place runtime operator names become types.
#[macro_export]
macro_rules! dispatch_binary_op {
    ($kind:expr, $O:ident => $body:expr) => {{
        use $crate::op::BinaryOpKind as K;
        match $kind {
            K::Add => {
                type $O = $crate::op::Add;
                $body
            }
            K::Sub => {
                type $O = $crate::op::Sub;
                $body
            }
            K::Mul => {
                type $O = $crate::op::Mul;
                $body
            }
            K::Div => {
                type $O = $crate::op::Div;
                $body
            }
            K::CopyLhs => {
                type $O = $crate::op::CopyLhs;
                $body
            }
            K::CopyRhs => {
                type $O = $crate::op::CopyRhs;
                $body
            }
            K::Dot => {
                type $O = $crate::op::Dot;
                $body
            }
        }
    }};
}

/// Runs `$body` with `$R` bound to the [`Reducer`] type named by a
/// [`ReduceKind`] value. The one place runtime reducer names become types.
#[macro_export]
macro_rules! dispatch_reducer {
    ($kind:expr, $R:ident => $body:expr) => {{
        use $crate::op::ReduceKind as K;
        match $kind {
            K::Sum => {
                type $R = $crate::op::Sum;
                $body
            }
            K::Max => {
                type $R = $crate::op::Max;
                $body
            }
            K::Min => {
                type $R = $crate::op::Min;
                $body
            }
            K::Mean => {
                type $R = $crate::op::Mean;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in BinaryOpKind::ALL {
            assert_eq!(BinaryOpKind::from_name(k.name()), Some(k));
            let via_type = dispatch_binary_op!(k, O => O::KIND);
            assert_eq!(via_type, Some(k));
        }
        for k in ReduceKind::ALL {
            assert_eq!(ReduceKind::from_name(k.name()), Some(k));
            assert_eq!(dispatch_reducer!(k, R => R::KIND), k);
        }
        assert_eq!(BinaryOpKind::from_name("pow"), None);
    }

    #[test]
    fn max_propagates_first_nan_and_keeps_first_tie() {
        assert!(Max::replaces(2.0, 1.0));
        assert!(!Max::replaces(1.0, 1.0), "ties keep the earlier message");
        assert!(Max::replaces(f32::NAN, 1.0));
        assert!(!Max::replaces(5.0, f32::NAN), "a NaN accumulator sticks");
        assert!(!Max::replaces(f32::NAN, f32::NAN), "the first NaN is the arg");
        assert!(Min::replaces(f32::NEG_INFINITY, 0.0));
        assert!(Min::replaces(f32::NAN, f32::NEG_INFINITY));
    }
}
