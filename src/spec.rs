//! Op specifications and DGL-style names.
//!
//! g-SpMM names are `{lhs}_{op}_{rhs}_{reduce}` (`u_mul_e_sum`,
//! `u_dot_v_max`) or `copy_{x}_{reduce}` (`copy_u_mean`); g-SDDMM names drop
//! the reducer (`u_dot_v`, `e_mul_v`, `copy_u`). `x`, `lhs`, `rhs` are `u`
//! (source node), `e` (edge) or `v` (destination node). This module is the
//! only place a name becomes a spec.

use crate::{Error, Result};
use gnnkern_simd::op::{BinaryOpKind, ReduceKind, Target};

/// One g-SpMM: `out[v] = ρ(φ(lhs[a(e)], rhs[b(e)]) for e into v)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpmmSpec {
    pub op: BinaryOpKind,
    pub lhs: Target,
    pub rhs: Target,
    pub reduce: ReduceKind,
}

/// One g-SDDMM: `out[e] = φ(lhs[a(e)], rhs[b(e)])`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SddmmSpec {
    pub op: BinaryOpKind,
    pub lhs: Target,
    pub rhs: Target,
}

fn unknown(kind: &'static str, name: &str, hint: &str) -> Error {
    Error::UnknownName { kind, name: name.to_string(), hint: hint.to_string() }
}

fn target(s: &str) -> Option<Target> {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Target::from_letter(c),
        _ => None,
    }
}

/// Parses `x_op_y` or `copy_x` into (op, lhs, rhs).
fn parse_message(parts: &[&str]) -> Option<(BinaryOpKind, Target, Target)> {
    match *parts {
        ["copy", x] => {
            let t = target(x)?;
            // A copy reads one operand: put it on the lhs; rhs is unused.
            Some((BinaryOpKind::CopyLhs, t, Target::Edge))
        }
        [x, op, y] => {
            let op =
                BinaryOpKind::from_name(op).filter(|o| !matches!(o, BinaryOpKind::CopyLhs | BinaryOpKind::CopyRhs))?;
            Some((op, target(x)?, target(y)?))
        }
        _ => None,
    }
}

fn message_name(op: BinaryOpKind, lhs: Target, rhs: Target) -> String {
    match op {
        BinaryOpKind::CopyLhs => format!("copy_{}", lhs.letter()),
        BinaryOpKind::CopyRhs => format!("copy_{}", rhs.letter()),
        _ => format!("{}_{}_{}", lhs.letter(), op.name(), rhs.letter()),
    }
}

impl SpmmSpec {
    /// A spec from its parts.
    pub fn new(op: BinaryOpKind, lhs: Target, rhs: Target, reduce: ReduceKind) -> Self {
        Self { op, lhs, rhs, reduce }
    }

    /// `copy_{x}_{reduce}`.
    pub fn copy(x: Target, reduce: ReduceKind) -> Self {
        Self::new(BinaryOpKind::CopyLhs, x, Target::Edge, reduce)
    }

    /// Parses a DGL name such as `u_mul_e_sum` or `copy_u_max`.
    pub fn from_name(name: &str) -> Result<Self> {
        const HINT: &str =
            " (expected {u,e,v}_{add,sub,mul,div,dot}_{u,e,v}_{sum,max,min,mean} or copy_{u,e,v}_{sum,max,min,mean})";
        let parts: Vec<&str> = name.split('_').collect();
        let (reduce, msg) = parts.split_last().ok_or_else(|| unknown("g-SpMM op", name, HINT))?;
        let reduce = ReduceKind::from_name(reduce).ok_or_else(|| unknown("g-SpMM op", name, HINT))?;
        let (op, lhs, rhs) = parse_message(msg).ok_or_else(|| unknown("g-SpMM op", name, HINT))?;
        Ok(Self { op, lhs, rhs, reduce })
    }

    /// The DGL name (`copy_u_sum`, `u_mul_e_max`, ...).
    pub fn name(&self) -> String {
        format!("{}_{}", message_name(self.op, self.lhs, self.rhs), self.reduce.name())
    }
}

impl SddmmSpec {
    /// A spec from its parts.
    pub fn new(op: BinaryOpKind, lhs: Target, rhs: Target) -> Self {
        Self { op, lhs, rhs }
    }

    /// Parses a DGL name such as `u_dot_v` or `copy_u`.
    pub fn from_name(name: &str) -> Result<Self> {
        const HINT: &str = " (expected {u,e,v}_{add,sub,mul,div,dot}_{u,e,v} or copy_{u,e,v})";
        let parts: Vec<&str> = name.split('_').collect();
        let (op, lhs, rhs) = parse_message(&parts).ok_or_else(|| unknown("g-SDDMM op", name, HINT))?;
        Ok(Self { op, lhs, rhs })
    }

    /// The DGL name.
    pub fn name(&self) -> String {
        message_name(self.op, self.lhs, self.rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in ["copy_u_sum", "copy_e_max", "u_mul_e_sum", "u_dot_v_min", "e_sub_v_mean", "v_div_u_sum"] {
            assert_eq!(SpmmSpec::from_name(name).unwrap().name(), name);
        }
        for name in ["u_dot_v", "u_add_v", "e_mul_v", "copy_u", "copy_v", "u_sub_e"] {
            assert_eq!(SddmmSpec::from_name(name).unwrap().name(), name);
        }
        let s = SpmmSpec::from_name("u_mul_e_max").unwrap();
        assert_eq!((s.op, s.lhs, s.rhs, s.reduce), (BinaryOpKind::Mul, Target::Src, Target::Edge, ReduceKind::Max));
    }

    #[test]
    fn bad_names_are_errors() {
        for bad in ["", "u_mul_e", "copy_x_sum", "u_pow_e_sum", "u_copy_lhs_e_sum", "uu_add_e_sum", "u_mul_e_prod"] {
            assert!(matches!(SpmmSpec::from_name(bad), Err(Error::UnknownName { .. })), "{bad}");
        }
        assert!(SddmmSpec::from_name("u_dot_v_sum").is_err());
    }
}
