//! Errors of the model suite: kernel errors pass through, data problems
//! name the file and what is wrong.

/// Convenience alias for the model suite.
pub type Result<T, E = ModelError> = std::result::Result<T, E>;

/// Everything that can go wrong while loading data or training a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A gnnkern op rejected its inputs.
    #[error(transparent)]
    Kernel(#[from] gnnkern::Error),
    /// Loading, generating or sampling a dataset failed.
    #[error(transparent)]
    Dataset(#[from] gnnkern_datasets::DatasetError),
    /// A dataset file is missing, unreadable or inconsistent.
    #[error("dataset {path}: {problem}")]
    Data { path: String, problem: String },
    /// A bad argument (model name, spec string, hyper-parameter).
    #[error("{0}")]
    Arg(String),
}
