//! Matrix Market coordinate files (`.mtx`).
//!
//! ```text
//! %%MatrixMarket matrix coordinate <pattern|real|integer> <general|symmetric>
//! % comments
//! ROWS COLS NNZ
//! I J [VALUE]        NNZ lines, 1-based
//! ```
//!
//! Entry `(i, j)` becomes the edge `i-1 -> j-1` (row = source), over
//! `max(ROWS, COLS)` nodes — the convention of `../shared/datasets/karate`.
//! A symmetric file stores one triangle; it is expanded to both directions
//! with each diagonal entry kept once, and an entry above the diagonal is an
//! error (it would be duplicated). `array` (dense) files, `complex` and
//! `hermitian`/`skew-symmetric` files are rejected. Every error names the
//! line. The file is memory-mapped and parsed in place.

use crate::binio::Mapped;
use crate::dataset::Dataset;
use crate::error::{DatasetError, Result};
use crate::text::{self, int, lines, real, tokens};
use std::path::Path;

/// The value field of a Matrix Market file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// No values (a graph).
    Pattern,
    /// Floating-point values.
    Real,
    /// Integer values.
    Integer,
}

/// The symmetry of a Matrix Market file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symmetry {
    /// Every entry stored.
    General,
    /// Lower triangle stored; `(i, j)` implies `(j, i)`.
    Symmetric,
}

/// A parsed coordinate matrix, symmetric entries already expanded.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixMarket {
    /// Declared rows.
    pub rows: usize,
    /// Declared columns.
    pub cols: usize,
    /// Value field.
    pub field: Field,
    /// Declared symmetry.
    pub symmetry: Symmetry,
    /// 0-based row of each stored entry.
    pub row: Vec<i64>,
    /// 0-based column of each stored entry.
    pub col: Vec<i64>,
    /// Entry values (`None` for pattern files).
    pub values: Option<Vec<f64>>,
}

/// Parses a Matrix Market coordinate file.
pub fn read(path: &Path) -> Result<MatrixMarket> {
    let map = Mapped::open(path)?;
    let mut it = lines(map.bytes());
    let (_, banner) = it.next().ok_or_else(|| DatasetError::parse(path, 1, "empty file (no %%MatrixMarket banner)"))?;
    let words: Vec<String> = tokens(banner).map(|t| String::from_utf8_lossy(t).to_ascii_lowercase()).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(DatasetError::parse(
            path,
            1,
            "banner must be `%%MatrixMarket matrix coordinate <field> <symmetry>`",
        ));
    }
    if words[2] != "coordinate" {
        return Err(DatasetError::parse(path, 1, format!("format {:?} is not supported (only coordinate)", words[2])));
    }
    let field = match words[3].as_str() {
        "pattern" => Field::Pattern,
        "real" => Field::Real,
        "integer" => Field::Integer,
        f => {
            return Err(DatasetError::parse(path, 1, format!("field {f:?} is not supported (pattern, real, integer)")));
        }
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        s => return Err(DatasetError::parse(path, 1, format!("symmetry {s:?} is not supported (general, symmetric)"))),
    };

    let mut size = None;
    for (ln, line) in it.by_ref() {
        if text::is_comment_or_blank(line) {
            continue;
        }
        let t: Vec<&[u8]> = tokens(line).collect();
        if t.len() != 3 {
            return Err(DatasetError::parse(path, ln, "size line must be `ROWS COLS NNZ`"));
        }
        let mut v = [0usize; 3];
        for (slot, (tok, what)) in v.iter_mut().zip(t.iter().zip(["ROWS", "COLS", "NNZ"])) {
            let x = int(path, ln, tok, what)?;
            *slot =
                usize::try_from(x).map_err(|_| DatasetError::parse(path, ln, format!("{what} = {x} is negative")))?;
        }
        size = Some((ln, v));
        break;
    }
    let (size_line, [rows, cols, nnz]) = size.ok_or_else(|| DatasetError::parse(path, 2, "missing size line"))?;
    if symmetry == Symmetry::Symmetric && rows != cols {
        return Err(DatasetError::parse(
            path,
            size_line,
            format!("symmetric matrix must be square, got {rows} x {cols}"),
        ));
    }
    // Capacity from the file size, not the (untrusted) NNZ field: each entry
    // line has at least 4 bytes.
    let cap = nnz.min(map.bytes().len() / 4) * if symmetry == Symmetry::Symmetric { 2 } else { 1 };
    let (mut row, mut col) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    let mut values = (field != Field::Pattern).then(|| Vec::with_capacity(cap));
    let want = if field == Field::Pattern { 2 } else { 3 };
    let mut seen = 0usize;
    let mut last_line = size_line;
    for (ln, line) in it {
        last_line = ln;
        if text::is_comment_or_blank(line) {
            continue;
        }
        if seen == nnz {
            return Err(DatasetError::parse(path, ln, format!("more entries than the {nnz} declared")));
        }
        let t: Vec<&[u8]> = tokens(line).collect();
        if t.len() != want {
            return Err(DatasetError::parse(
                path,
                ln,
                format!("expected {want} fields for a {:?} entry, found {}", field, t.len()),
            ));
        }
        let i = int(path, ln, t[0], "row")?;
        let j = int(path, ln, t[1], "column")?;
        if i < 1 || i as u64 > rows as u64 {
            return Err(DatasetError::parse(path, ln, format!("row {i} is out of range 1..={rows}")));
        }
        if j < 1 || j as u64 > cols as u64 {
            return Err(DatasetError::parse(path, ln, format!("column {j} is out of range 1..={cols}")));
        }
        if symmetry == Symmetry::Symmetric && j > i {
            return Err(DatasetError::parse(
                path,
                ln,
                format!(
                    "entry ({i}, {j}) is above the diagonal in a symmetric file (only the lower triangle is stored)"
                ),
            ));
        }
        let value = match field {
            Field::Pattern => 0.0,
            Field::Real => real(path, ln, t[2], "value")?,
            Field::Integer => int(path, ln, t[2], "value")? as f64,
        };
        row.push(i - 1);
        col.push(j - 1);
        if let Some(v) = values.as_mut() {
            v.push(value);
        }
        if symmetry == Symmetry::Symmetric && i != j {
            row.push(j - 1);
            col.push(i - 1);
            if let Some(v) = values.as_mut() {
                v.push(value);
            }
        }
        seen += 1;
    }
    if seen < nnz {
        return Err(DatasetError::parse(path, last_line, format!("file ends after {seen} of {nnz} declared entries")));
    }
    Ok(MatrixMarket { rows, cols, field, symmetry, row, col, values })
}

/// Loads a Matrix Market file as a graph (values are dropped; use [`read`]
/// to keep them).
pub fn load(path: &Path) -> Result<Dataset> {
    let m = read(path)?;
    let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let meta = serde_json::json!({
        "source": path.display().to_string(),
        "directed": m.symmetry == Symmetry::General,
        "shape": [m.rows, m.cols],
    });
    Ok(Dataset { meta: Some(meta), ..Dataset::from_edges(name, m.rows.max(m.cols), m.row, m.col) })
}
