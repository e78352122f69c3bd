//! Graph datasets for gnnkern: loaders, a writer, seeded generators and a
//! neighbour sampler.
//!
//! - [`load_dir`] / [`write_dir`]: the directory format of
//!   `../shared/datasets` (also our own output, with i32 or i64 ids).
//! - [`npy`], [`mtx`], [`snap`], [`ogb`], [`planetoid`]: NumPy arrays, Matrix Market,
//!   SNAP-style edge lists, OGB node-property layouts and Planetoid raw files.
//! - [`generate`](fn@generate) / [`GraphSpec`]: `uniform:N:M:SEED`, `rmat:SCALE:DEG:SEED`,
//!   `sbm:N:K:P_IN:P_OUT:SEED`, `chain:N`, `star:N`.
//! - [`sample_block`]: DGL-style neighbour-sampled blocks per layer.
//!
//! [`open`] takes either a directory or a spec string, which is what a
//! command line wants. Every failure is a [`DatasetError`] naming the file
//! and position (or spec) and the problem; nothing panics on bad input.
//!
//! ```
//! let ds = gnnkern_datasets::open("sbm:100:4:0.2:0.01:7").unwrap();
//! assert_eq!(ds.num_nodes, 100);
//! let g = ds.graph::<i32>().unwrap();
//! assert_eq!(g.num_edges(), ds.num_edges());
//! ```

mod binio;
mod dataset;
mod dir;
mod error;
mod generate;
pub mod mtx;
pub mod npy;
pub mod ogb;
mod pickle;
pub mod planetoid;
pub mod rng;
mod sample;
pub mod snap;
mod spec;
mod text;

pub use dataset::{Dataset, Features, IndexWidth};
pub use dir::{load_dir, write_dir};
pub use error::{DatasetError, Result};
pub use generate::{generate, generate_spec};
pub use sample::{Block, InCsr, InEdges, sample_block};
pub use spec::{GRAPH500_ABC, GraphSpec};

use std::path::Path;

/// Opens `dir_or_spec`: an existing directory is loaded with [`load_dir`];
/// anything else is parsed as a [`GraphSpec`] and generated. A string that
/// is neither reports both readings.
pub fn open(dir_or_spec: &str) -> Result<Dataset> {
    let path = Path::new(dir_or_spec);
    if path.is_dir() {
        return load_dir(path);
    }
    generate(dir_or_spec).map_err(|e| match e {
        DatasetError::BadSpec { spec, problem } => {
            DatasetError::BadSpec { spec, problem: format!("{problem}; and no directory of that name exists") }
        }
        other => other,
    })
}
