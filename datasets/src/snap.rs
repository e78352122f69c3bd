//! SNAP-style edge lists: one `SRC DST` pair per line.
//!
//! Lines starting with `#` or `%` and blank lines are skipped; fields are
//! separated by whitespace or commas; columns after the second (weights,
//! timestamps) are ignored. Without remapping, ids must be non-negative and
//! the graph has `max id + 1` nodes (or the given count). With remapping,
//! the distinct ids are sorted and renumbered `0..n`; the returned map gives
//! the original id of each new id (`map[new] = original`). The file is
//! memory-mapped and parsed in place; errors name the line.

use crate::binio::Mapped;
use crate::dataset::Dataset;
use crate::error::{DatasetError, Result};
use crate::text::{self, int, lines, tokens};
use std::path::Path;

/// How to read an edge list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapOptions {
    /// Renumber the distinct ids to `0..n` (sorted order).
    pub remap: bool,
    /// Node count when not remapping (default `max id + 1`); ids must be below it.
    pub num_nodes: Option<usize>,
}

/// Reads an edge list; returns the dataset and, when remapping, the
/// original id of every node.
pub fn load(path: &Path, opts: SnapOptions) -> Result<(Dataset, Option<Vec<i64>>)> {
    let map = Mapped::open(path)?;
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for (ln, line) in lines(map.bytes()) {
        if text::is_comment_or_blank(line) {
            continue;
        }
        let mut t = tokens(line);
        let (Some(a), Some(b)) = (t.next(), t.next()) else {
            return Err(DatasetError::parse(path, ln, "expected two node ids (SRC DST)"));
        };
        let u = int(path, ln, a, "source id")?;
        let v = int(path, ln, b, "destination id")?;
        if !opts.remap
            && let Some(bad) =
                [u, v].into_iter().find(|&x| x < 0 || opts.num_nodes.is_some_and(|n| x as u64 >= n as u64))
        {
            let bound = opts.num_nodes.map_or_else(|| "non-negative".to_string(), |n| format!("in 0..{n}"));
            return Err(DatasetError::parse(path, ln, format!("node id {bad} is not {bound}")));
        }
        src.push(u);
        dst.push(v);
    }
    let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    if opts.remap {
        let mut ids: Vec<i64> = src.iter().chain(&dst).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let renumber = |v: &mut Vec<i64>| {
            for x in v.iter_mut() {
                *x = ids.binary_search(x).expect("every id was collected") as i64;
            }
        };
        renumber(&mut src);
        renumber(&mut dst);
        let n = ids.len();
        return Ok((Dataset::from_edges(name, n, src, dst), Some(ids)));
    }
    let n = opts.num_nodes.unwrap_or_else(|| src.iter().chain(&dst).max().map_or(0, |&m| m as usize + 1));
    Ok((Dataset::from_edges(name, n, src, dst), None))
}
