//! Line and token helpers shared by the text loaders.
//!
//! Plain files are memory-mapped and split into lines in place; gzip files
//! are streamed through a buffered decoder. Line numbers are 1-based, a
//! trailing `\r` is dropped, and tokens are separated by ASCII whitespace
//! or commas.

use crate::error::{DatasetError, Result};
use flate2::read::GzDecoder;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// `(line number, line)` for every line of `bytes`.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let mut it = body.split(|&c| c == b'\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)));
    let empty = bytes.is_empty();
    std::iter::from_fn(move || if empty { None } else { it.next() })
}

/// The whitespace- or comma-separated tokens of a line.
pub(crate) fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&c| c.is_ascii_whitespace() || c == b',').filter(|t| !t.is_empty())
}

/// Whether a line is blank or a comment starting with `#` or `%`.
pub(crate) fn is_comment_or_blank(line: &[u8]) -> bool {
    match line.iter().find(|c| !c.is_ascii_whitespace()) {
        None => true,
        Some(&c) => c == b'#' || c == b'%',
    }
}

/// Parses an integer token, naming `what` in the error.
pub(crate) fn int(path: &Path, line: usize, tok: &[u8], what: &str) -> Result<i64> {
    std::str::from_utf8(tok)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| DatasetError::parse(path, line, format!("{what} {:?} is not an integer", show(tok))))
}

/// Parses a floating-point token, naming `what` in the error.
pub(crate) fn real(path: &Path, line: usize, tok: &[u8], what: &str) -> Result<f64> {
    std::str::from_utf8(tok)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| DatasetError::parse(path, line, format!("{what} {:?} is not a number", show(tok))))
}

/// A token for an error message (lossy, at most 40 characters).
pub(crate) fn show(tok: &[u8]) -> String {
    String::from_utf8_lossy(&tok[..tok.len().min(40)]).into_owned()
}

/// Calls `f(line number, line)` for every line of a gzip-compressed file.
pub(crate) fn for_each_gz_line(path: &Path, mut f: impl FnMut(usize, &[u8]) -> Result<()>) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| DatasetError::io(path, "open", e))?;
    let mut reader = BufReader::with_capacity(1 << 20, GzDecoder::new(file));
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| DatasetError::io(path, "decompress", e))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        let l = buf.strip_suffix(b"\n").unwrap_or(&buf);
        f(line, l.strip_suffix(b"\r").unwrap_or(l))?;
    }
}
