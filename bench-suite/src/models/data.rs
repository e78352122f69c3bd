//! A training task from a dataset: the graph, features, labels, splits.
//!
//! Datasets come from `gnnkern_datasets::open` (a directory in the format
//! of `../shared/datasets`, or a generator spec such as `rmat:20:16:1`).
//! A dataset without features gets seeded standard-normal features of
//! [`GENERATED_FEAT_DIM`] columns; one without labels gets seeded random
//! labels in `0..GENERATED_CLASSES`; one without a split gets a seeded
//! random 60/20/20 split — so timing runs work on any graph. Loaded
//! features are row-normalised to sum 1 (what DGL's Planetoid datasets
//! do), unless the config says otherwise.

use super::rng::Rng;
use super::sparse::G;
use super::{Mat, ModelError, Result};
use gnnkern_datasets::Dataset;

/// Feature width given to graphs without features.
pub const GENERATED_FEAT_DIM: usize = 128;
/// Number of classes of random labels.
pub const GENERATED_CLASSES: usize = 16;

/// Everything a node-classification run needs.
#[derive(Debug)]
pub struct Task {
    pub name: String,
    pub graph: G,
    pub features: Mat,
    pub labels: Vec<i32>,
    pub num_classes: usize,
    pub train: Vec<usize>,
    pub val: Vec<usize>,
    pub test: Vec<usize>,
    /// Whether labels and split came with the dataset (so accuracy means
    /// something).
    pub real_labels: bool,
}

/// Nodes of a split, dropping unlabeled ones.
fn split(ids: &[i64], labels: &[i32]) -> Vec<usize> {
    ids.iter().map(|&i| i as usize).filter(|&i| labels[i] >= 0).collect()
}

impl Task {
    /// Builds the task for `ds`; `seed` drives generated features, labels
    /// and splits; `normalize` row-normalises loaded features.
    pub fn from_dataset(ds: &Dataset, seed: u64, normalize: bool) -> Result<Self> {
        let n = ds.num_nodes;
        let graph = ds.graph::<i32>()?;
        let mut rng = Rng::new(seed ^ 0xfea7);
        let features = match &ds.feat {
            Some(f) => {
                let mut m = Mat::from_slice(n, f.dim, &f.data);
                if normalize {
                    row_normalize(&mut m);
                }
                m
            }
            None => Mat::from_values(n, GENERATED_FEAT_DIM, (0..n * GENERATED_FEAT_DIM).map(|_| rng.normal())),
        };
        let has_split = ds.train.is_some() && ds.test.is_some();
        let real_labels = ds.labels.is_some() && has_split;
        let (labels, num_classes) = match (&ds.labels, real_labels) {
            (Some(l), true) => (l.clone(), ds.num_classes().unwrap_or(0)),
            _ => ((0..n).map(|_| rng.below(GENERATED_CLASSES) as i32).collect(), GENERATED_CLASSES),
        };
        if num_classes == 0 {
            return Err(ModelError::Data { path: ds.name.clone(), problem: "labels hold no class".into() });
        }
        let (train, val, test) = if real_labels {
            let empty = Vec::new();
            (
                split(ds.train.as_ref().unwrap_or(&empty), &labels),
                split(ds.val.as_ref().unwrap_or(&empty), &labels),
                split(ds.test.as_ref().unwrap_or(&empty), &labels),
            )
        } else {
            let mut ids: Vec<usize> = (0..n).collect();
            rng.shuffle(&mut ids);
            let (a, b) = (n * 6 / 10, n * 8 / 10);
            (ids[..a].to_vec(), ids[a..b].to_vec(), ids[b..].to_vec())
        };
        if train.is_empty() {
            return Err(ModelError::Data { path: ds.name.clone(), problem: "the training split is empty".into() });
        }
        Ok(Self { name: ds.name.clone(), graph, features, labels, num_classes, train, val, test, real_labels })
    }

    /// The graph with self-loops: existing ones removed, one added per
    /// node (DGL's `remove_self_loop` + `add_self_loop`, as the GCN and GAT
    /// examples do).
    pub fn graph_with_self_loops(&self) -> Result<G> {
        with_self_loops(&self.graph)
    }
}

/// `g` without its self-loops plus one self-loop per node.
pub fn with_self_loops(g: &G) -> Result<G> {
    let (s, d) = g.coo();
    let n = g.num_dst();
    let (mut src, mut dst): (Vec<i32>, Vec<i32>) =
        s.iter().zip(d).filter(|(a, b)| a != b).map(|(&a, &b)| (a, b)).unzip();
    src.extend(0..n as i32);
    dst.extend(0..n as i32);
    Ok(G::from_coo(g.num_src(), n, src, dst)?)
}

/// Scales each row to sum 1 (rows summing to 0 stay 0).
pub fn row_normalize(m: &mut Mat) {
    for r in 0..m.rows {
        let row = m.row_mut(r);
        let s: f32 = row.iter().sum();
        if s != 0.0 {
            row.iter_mut().for_each(|x| *x /= s);
        }
    }
}
