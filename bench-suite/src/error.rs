//! The bench suite's error type: every failure names what it was doing.

use std::path::{Path, PathBuf};

/// A failure of a bench command.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A graph could not be loaded or generated.
    #[error("graph {graph}: {message}")]
    Graph { graph: String, message: String },
    /// gnnkern rejected a call.
    #[error("{context}: {source}")]
    Op { context: String, source: gnnkern::Error },
    /// An input file or argument does not fit the op.
    #[error("{what}: {message}")]
    Input { what: String, message: String },
    /// A suite, run or machine file is malformed.
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    /// An external program (git, a peer script) failed.
    #[error("{program}: {message}")]
    External { program: String, message: String },
}

/// Result of bench operations.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

impl BenchError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        BenchError::Io { path: path.to_path_buf(), source }
    }

    /// A malformed file.
    pub fn format(path: &Path, message: impl Into<String>) -> Self {
        BenchError::Format { path: path.to_path_buf(), message: message.into() }
    }

    /// A bad input or argument.
    pub fn input(what: impl Into<String>, message: impl Into<String>) -> Self {
        BenchError::Input { what: what.into(), message: message.into() }
    }
}
