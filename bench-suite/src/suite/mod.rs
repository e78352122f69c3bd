//! The standard suites: definitions (`def`), the runner (`run`) and the
//! end-of-run summary table (`summary`).

pub mod def;
pub mod run;
pub mod summary;
