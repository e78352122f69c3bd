//! Graph spec strings: a generated graph named in one token.
//!
//! ```text
//! uniform:N:M:SEED                 G(n, m): M edges, uniform endpoints
//! rmat:SCALE:AVG_DEG:SEED          RMAT, 2^SCALE nodes, 2^SCALE*AVG_DEG edges,
//!                                  Graph500 a,b,c = 0.57,0.19,0.19
//! rmat:SCALE:AVG_DEG:SEED:A:B:C    RMAT with explicit quadrant probabilities
//! sbm:N:K:P_IN:P_OUT:SEED          stochastic block model, K equal blocks
//! chain:N                          path 0 -> 1 -> ... -> N-1
//! star:N                           leaves 1..N-1 -> hub 0 (one hub row)
//! ```
//!
//! `Display` writes the canonical form and `FromStr` reads it back exactly
//! (`rmat` with Graph500 defaults prints the short form; floats use Rust's
//! shortest round-trip formatting).

use crate::error::{DatasetError, Result};
use std::fmt;
use std::str::FromStr;

/// Graph500 RMAT quadrant probabilities (d = 1 - a - b - c = 0.05).
pub const GRAPH500_ABC: (f64, f64, f64) = (0.57, 0.19, 0.19);

/// A generated graph, as named by a spec string.
#[derive(Clone, Debug, PartialEq)]
pub enum GraphSpec {
    /// `m` directed edges with independent uniform endpoints in `0..n`.
    Uniform { n: usize, m: usize, seed: u64 },
    /// Recursive-matrix graph: `2^scale` nodes, `2^scale * avg_degree` edges.
    Rmat { scale: u32, avg_degree: usize, a: f64, b: f64, c: f64, seed: u64 },
    /// Undirected stochastic block model, both directions stored.
    Sbm { n: usize, k: usize, p_in: f64, p_out: f64, seed: u64 },
    /// Directed path `0 -> 1 -> ... -> n-1`.
    Chain { n: usize },
    /// Every leaf `1..n` points to hub `0`.
    Star { n: usize },
}

impl GraphSpec {
    /// Number of nodes of the generated graph.
    pub fn num_nodes(&self) -> usize {
        match *self {
            Self::Uniform { n, .. } | Self::Sbm { n, .. } | Self::Chain { n } | Self::Star { n } => n,
            Self::Rmat { scale, .. } => 1usize << scale,
        }
    }

    /// Checks parameter ranges (also done by `FromStr`).
    pub fn validate(&self) -> Result<()> {
        let bad = |p: String| Err(DatasetError::spec(&self.to_string(), p));
        let prob = |name: &str, p: f64| -> Option<String> {
            (!(0.0..=1.0).contains(&p)).then(|| format!("{name} = {p} is not a probability in [0, 1]"))
        };
        match *self {
            Self::Uniform { n, m, .. } => {
                if n == 0 && m > 0 {
                    return bad("edges need at least one node".into());
                }
            }
            Self::Rmat { scale, avg_degree, a, b, c, .. } => {
                if scale > 40 {
                    return bad(format!("scale {scale} is above 40 (2^40 nodes)"));
                }
                if (1usize << scale).checked_mul(avg_degree).is_none() {
                    return bad("2^scale x avg_degree overflows".into());
                }
                for (name, p) in [("a", a), ("b", b), ("c", c)] {
                    if let Some(msg) = prob(name, p) {
                        return bad(msg);
                    }
                }
                if a + b + c > 1.0 + 1e-12 {
                    return bad(format!("a + b + c = {} exceeds 1", a + b + c));
                }
            }
            Self::Sbm { n, k, p_in, p_out, .. } => {
                if k == 0 || k > n.max(1) {
                    return bad(format!("k = {k} blocks must be in 1..=n ({n})"));
                }
                for (name, p) in [("p_in", p_in), ("p_out", p_out)] {
                    if let Some(msg) = prob(name, p) {
                        return bad(msg);
                    }
                }
            }
            Self::Chain { .. } | Self::Star { .. } => {}
        }
        Ok(())
    }
}

impl fmt::Display for GraphSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Uniform { n, m, seed } => write!(f, "uniform:{n}:{m}:{seed}"),
            Self::Rmat { scale, avg_degree, a, b, c, seed } => {
                write!(f, "rmat:{scale}:{avg_degree}:{seed}")?;
                if (a, b, c) != GRAPH500_ABC {
                    write!(f, ":{a:?}:{b:?}:{c:?}")?;
                }
                Ok(())
            }
            Self::Sbm { n, k, p_in, p_out, seed } => write!(f, "sbm:{n}:{k}:{p_in:?}:{p_out:?}:{seed}"),
            Self::Chain { n } => write!(f, "chain:{n}"),
            Self::Star { n } => write!(f, "star:{n}"),
        }
    }
}

impl FromStr for GraphSpec {
    type Err = DatasetError;

    fn from_str(s: &str) -> Result<Self> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let kind = parts[0];
        let args = &parts[1..];
        let arity = |allowed: &[usize], usage: &str| -> Result<()> {
            if allowed.contains(&args.len()) {
                Ok(())
            } else {
                Err(DatasetError::spec(s, format!("expected {usage}, got {} fields after {kind:?}", args.len())))
            }
        };
        let num = |i: usize, name: &str| -> Result<usize> {
            args[i].parse().map_err(|_| DatasetError::spec(s, format!("{name} = {:?} is not a count", args[i])))
        };
        let seed = |i: usize| -> Result<u64> {
            args[i].parse().map_err(|_| DatasetError::spec(s, format!("seed = {:?} is not a u64", args[i])))
        };
        let real = |i: usize, name: &str| -> Result<f64> {
            args[i].parse().map_err(|_| DatasetError::spec(s, format!("{name} = {:?} is not a number", args[i])))
        };
        let spec = match kind {
            "uniform" => {
                arity(&[3], "uniform:N:M:SEED")?;
                Self::Uniform { n: num(0, "N")?, m: num(1, "M")?, seed: seed(2)? }
            }
            "rmat" => {
                arity(&[3, 6], "rmat:SCALE:AVG_DEG:SEED[:A:B:C]")?;
                let scale = u32::try_from(num(0, "SCALE")?)
                    .map_err(|_| DatasetError::spec(s, format!("SCALE = {} is too large", args[0])))?;
                let (a, b, c) =
                    if args.len() == 6 { (real(3, "A")?, real(4, "B")?, real(5, "C")?) } else { GRAPH500_ABC };
                Self::Rmat { scale, avg_degree: num(1, "AVG_DEG")?, a, b, c, seed: seed(2)? }
            }
            "sbm" => {
                arity(&[5], "sbm:N:K:P_IN:P_OUT:SEED")?;
                Self::Sbm {
                    n: num(0, "N")?,
                    k: num(1, "K")?,
                    p_in: real(2, "P_IN")?,
                    p_out: real(3, "P_OUT")?,
                    seed: seed(4)?,
                }
            }
            "chain" => {
                arity(&[1], "chain:N")?;
                Self::Chain { n: num(0, "N")? }
            }
            "star" => {
                arity(&[1], "star:N")?;
                Self::Star { n: num(0, "N")? }
            }
            other => {
                return Err(DatasetError::spec(
                    s,
                    format!("unknown generator {other:?} (expected uniform, rmat, sbm, chain or star)"),
                ));
            }
        };
        spec.validate().map_err(|e| match e {
            DatasetError::BadSpec { problem, .. } => DatasetError::spec(s, problem),
            other => other,
        })?;
        Ok(spec)
    }
}
