//! Suite definitions: `bench-suite/suites.toml` parsed and expanded into
//! cases (graphs × ops × dims × heads × threads × backends per group).

use crate::error::{BenchError, Result};
use crate::opspec::BenchOp;
use crate::runfile::case_key;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A graph of a suite.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum GraphDef {
    /// A generator spec (`rmat:16:16:1`) or a dataset directory (relative
    /// paths are relative to the repository root).
    Spec(String),
    /// A neighbour-sampled block: `seeds` destination nodes drawn from the
    /// graph `from`, `fanout` in-edges sampled per seed.
    Block { from: String, seeds: usize, fanout: usize, seed: u64 },
}

/// One group of cases: the product of its lists.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseGroup {
    pub graphs: Vec<String>,
    pub ops: Vec<String>,
    pub dims: Vec<usize>,
    /// Head counts; 0 means plain `[N, D]` features. Default `[0]`.
    #[serde(default = "no_heads")]
    pub heads: Vec<usize>,
    pub threads: Option<Vec<usize>>,
    pub backends: Option<Vec<String>>,
    pub reps: Option<usize>,
    pub rounds: Option<usize>,
}

fn no_heads() -> Vec<usize> {
    vec![0]
}

fn calibration_mib() -> usize {
    crate::triad::CALIBRATION_ARRAY_MIB
}

fn one() -> usize {
    1
}

fn five() -> usize {
    5
}

/// One suite (`[quick]`, `[full]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteDef {
    pub description: String,
    pub reps: usize,
    #[serde(default = "one")]
    pub warmup: usize,
    /// With `--peers`: the slices a case's timed calls are split into, each
    /// tool running one slice in turn (`suite::run`); at most `reps`.
    #[serde(default = "five")]
    pub rounds: usize,
    pub threads: Vec<usize>,
    pub backends: Vec<String>,
    /// Array size (MiB) of the calibration triads at the start and end of a run.
    #[serde(default = "calibration_mib")]
    pub calibration_mib: usize,
    /// Peers run by `--peers` (names accepted by `peers/peer_op.py --peer`).
    #[serde(default)]
    pub peers: Vec<String>,
    pub graphs: BTreeMap<String, GraphDef>,
    pub cases: Vec<CaseGroup>,
}

/// One benchmark case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Key into [`SuiteDef::graphs`].
    pub graph: String,
    pub op: String,
    pub dim: usize,
    pub heads: Option<usize>,
    pub threads: usize,
    pub backend: String,
    pub reps: usize,
    pub warmup: usize,
    /// Slices of `reps` the tools take in turn with `--peers` (1..=reps).
    pub rounds: usize,
}

impl Case {
    /// The result key of this case (see [`crate::runfile::case_key`]).
    pub fn key(&self) -> String {
        case_key(&self.graph, &self.op, self.dim, self.heads, self.threads)
    }
}

/// Parses the suites file.
pub fn load(path: &Path) -> Result<BTreeMap<String, SuiteDef>> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
    parse(path, &text)
}

/// Parses suites from TOML text (`path` names it in errors).
pub fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, SuiteDef>> {
    let suites: BTreeMap<String, SuiteDef> =
        toml::from_str(text).map_err(|e| BenchError::format(path, e.to_string()))?;
    for (name, s) in &suites {
        s.expand().map_err(|e| BenchError::format(path, format!("suite `{name}`: {e}")))?;
    }
    Ok(suites)
}

impl SuiteDef {
    /// Every case, grouped by graph in order of first use (so a run loads
    /// each graph once); duplicates across groups are dropped.
    pub fn expand(&self) -> std::result::Result<Vec<Case>, String> {
        if self.reps == 0 || self.rounds == 0 {
            return Err("reps and rounds must be at least 1".into());
        }
        let mut cases: Vec<Case> = Vec::new();
        for (i, group) in self.cases.iter().enumerate() {
            let at = format!("cases[{i}]");
            for g in &group.graphs {
                if !self.graphs.contains_key(g) {
                    return Err(format!("{at}: graph `{g}` is not defined under graphs"));
                }
            }
            for op in &group.ops {
                BenchOp::parse(op).map_err(|e| format!("{at}: {e}"))?;
            }
            if group.dims.contains(&0) || group.dims.is_empty() {
                return Err(format!("{at}: dims must be a non-empty list of positive sizes"));
            }
            let threads = group.threads.as_ref().unwrap_or(&self.threads);
            let backends = group.backends.as_ref().unwrap_or(&self.backends);
            if threads.is_empty() || threads.contains(&0) || backends.is_empty() {
                return Err(format!("{at}: threads and backends must be non-empty (threads >= 1)"));
            }
            let reps = group.reps.unwrap_or(self.reps);
            let rounds = group.rounds.unwrap_or(self.rounds);
            if reps == 0 || rounds == 0 {
                return Err(format!("{at}: reps and rounds must be at least 1"));
            }
            for g in &group.graphs {
                for op in &group.ops {
                    for &dim in &group.dims {
                        for &h in &group.heads {
                            if h > 0 && dim % h != 0 {
                                return Err(format!("{at}: {h} heads do not divide dim {dim}"));
                            }
                            for &t in threads {
                                for b in backends {
                                    let case = Case {
                                        graph: g.clone(),
                                        op: op.clone(),
                                        dim,
                                        heads: (h > 0).then_some(h),
                                        threads: t,
                                        backend: b.clone(),
                                        reps,
                                        warmup: self.warmup,
                                        rounds: rounds.min(reps),
                                    };
                                    if !cases.iter().any(|c| c.key() == case.key() && c.backend == case.backend) {
                                        cases.push(case);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        let order: Vec<&String> = {
            let mut seen = Vec::new();
            for c in &cases {
                if !seen.contains(&&c.graph) {
                    seen.push(&c.graph);
                }
            }
            seen
        };
        let mut grouped = Vec::with_capacity(cases.len());
        for g in order {
            grouped.extend(cases.iter().filter(|c| &c.graph == g).cloned());
        }
        Ok(grouped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
[quick]
description = "test"
reps = 3
threads = [2]
backends = ["auto"]
peers = ["dgl"]
[quick.graphs]
a = "chain:10"
b = { from = "rmat:10:4:1", seeds = 16, fanout = 5, seed = 3 }
[[quick.cases]]
graphs = ["a", "b"]
ops = ["copy_u_sum", "u_dot_v"]
dims = [8, 16]
[[quick.cases]]
graphs = ["a"]
ops = ["u_mul_e_sum"]
dims = [16]
heads = [0, 4]
threads = [1, 2]
"#;

    #[test]
    fn groups_expand_to_their_product() {
        let suites = parse(Path::new("t.toml"), TEXT).unwrap();
        let q = &suites["quick"];
        assert_eq!(q.graphs["b"], GraphDef::Block { from: "rmat:10:4:1".into(), seeds: 16, fanout: 5, seed: 3 });
        let cases = q.expand().unwrap();
        assert_eq!(cases.len(), 2 * 2 * 2 + 2 * 2);
        // Grouped by graph: all of `a` first.
        let first_b = cases.iter().position(|c| c.graph == "b").unwrap();
        assert!(cases[first_b..].iter().all(|c| c.graph == "b"));
        assert!(cases.iter().any(|c| c.heads == Some(4) && c.threads == 1));
    }

    #[test]
    fn bad_suites_name_the_problem() {
        let bad = TEXT.replace("\"u_dot_v\"", "\"u_pow_v\"");
        let err = parse(Path::new("t.toml"), &bad).unwrap_err().to_string();
        assert!(err.contains("t.toml") && err.contains("u_pow_v"), "{err}");
        let bad = TEXT.replace("graphs = [\"a\", \"b\"]", "graphs = [\"a\", \"zz\"]");
        assert!(parse(Path::new("t.toml"), &bad).unwrap_err().to_string().contains("`zz`"));
        let bad = TEXT.replace("heads = [0, 4]", "heads = [3]");
        assert!(parse(Path::new("t.toml"), &bad).unwrap_err().to_string().contains("3 heads"));
    }
}
