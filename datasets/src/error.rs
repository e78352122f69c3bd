//! The error type of every loader, writer, generator and sampler.
//!
//! Each variant names where the problem is (file and line, byte offset or
//! element position; or the spec string) and what it is, so a user can fix
//! the input without reading this crate's source. Loaders validate before
//! they return: an error never comes with a half-built [`crate::Dataset`].

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Convenience alias used across the crate.
pub type Result<T, E = DatasetError> = std::result::Result<T, E>;

/// Everything that can go wrong while loading, writing, generating or
/// sampling a dataset.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The operating system refused an operation on a file.
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// A required file of a dataset directory or layout is absent.
    #[error("{}: missing file ({why})", path.display())]
    MissingFile { path: PathBuf, why: String },

    /// A binary file's size is not what its element type and the metadata imply.
    #[error("{}: expected {expected} bytes ({why}), found {actual} bytes", path.display())]
    FileSize { path: PathBuf, expected: u64, actual: u64, why: String },

    /// A binary file's size is not a whole number of elements.
    #[error("{}: size {actual} bytes is not a multiple of the {elem_size}-byte element size ({dtype})", path.display())]
    RaggedFile { path: PathBuf, actual: u64, elem_size: usize, dtype: &'static str },

    /// An id in a file (or array) is negative or not below its bound.
    #[error("{}: entry {position} = {value} is out of range 0..{bound}", path.display())]
    IdOutOfRange { path: PathBuf, position: usize, value: i64, bound: usize },

    /// A field of `meta.json` is missing, of the wrong type or inconsistent.
    #[error("{}: field `{field}`: {problem}", path.display())]
    BadMeta { path: PathBuf, field: String, problem: String },

    /// A text file has a malformed line (1-based line number).
    #[error("{}: line {line}: {problem}", path.display())]
    Parse { path: PathBuf, line: usize, problem: String },

    /// A binary file has a malformed header or body at a byte offset.
    #[error("{}: byte offset {offset}: {problem}", path.display())]
    Format { path: PathBuf, offset: u64, problem: String },

    /// A generator spec string that does not parse or has invalid parameters.
    #[error("invalid graph spec {spec:?}: {problem}")]
    BadSpec { spec: String, problem: String },

    /// An in-memory dataset or argument is inconsistent (lengths, ranges).
    #[error("invalid {what}: {problem}")]
    Invalid { what: String, problem: String },

    /// A count or id does not fit the requested index type.
    #[error("{what} = {value} does not fit index type {index_type}")]
    IndexOverflow { what: String, value: i64, index_type: &'static str },

    /// The graph constructor rejected the edges.
    #[error(transparent)]
    Graph(#[from] gnnkern::Error),
}

impl DatasetError {
    pub(crate) fn io(path: &Path, op: &'static str, source: std::io::Error) -> Self {
        Self::Io { path: path.to_path_buf(), op, source }
    }

    pub(crate) fn parse(path: &Path, line: usize, problem: impl Into<String>) -> Self {
        Self::Parse { path: path.to_path_buf(), line, problem: problem.into() }
    }

    pub(crate) fn format(path: &Path, offset: u64, problem: impl Into<String>) -> Self {
        Self::Format { path: path.to_path_buf(), offset, problem: problem.into() }
    }

    pub(crate) fn meta(path: &Path, field: &str, problem: impl Into<String>) -> Self {
        Self::BadMeta { path: path.to_path_buf(), field: field.to_string(), problem: problem.into() }
    }

    pub(crate) fn invalid(what: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Invalid { what: what.into(), problem: problem.into() }
    }

    pub(crate) fn spec(spec: &str, problem: impl Into<String>) -> Self {
        Self::BadSpec { spec: spec.to_string(), problem: problem.into() }
    }
}
