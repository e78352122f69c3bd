//! Models as stacks of convolutions with an activation and dropout between
//! them — the structure of DGL's `gcn`, `graphsage` and `gat` examples.
//!
//! [`Net`] keeps every layer input (post-dropout) for backward, and nothing
//! else: a hidden layer's output is activated and dropped out in place
//! ([`activate_dropout`]), and backward recovers the activation's
//! derivative from that same tensor and regenerates the dropout mask
//! ([`activate_dropout_backward`]). The original features are borrowed,
//! never copied; input dropout writes a pooled buffer.

use super::conv::{Conv, GatConv, GraphConv, SageAggregator, SageConv};
use super::dropout::Dropout;
pub use super::nn::Activation;
use super::nn::{activate_dropout, activate_dropout_backward};
use super::rng::Rng;
use super::sparse::G;
use super::{Ctx, Mat, ModelError, Param, Result};

/// A stack of graph convolutions.
pub struct Net {
    pub layers: Vec<Box<dyn Conv + Send>>,
    pub activation: Activation,
    /// Dropout probability applied to the input of layer `i` where
    /// `drop_input[i]`.
    pub dropout: f32,
    pub drop_input: Vec<bool>,
    // Per layer `i`: its input when it differs from the features (`None` =
    // the features themselves) and the dropout that made it.
    inputs: Vec<Option<Mat>>,
    drops: Vec<Option<Dropout>>,
}

/// Model hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    pub in_dim: usize,
    pub hidden: usize,
    pub classes: usize,
    pub layers: usize,
    pub dropout: f32,
    /// GAT: heads of the hidden layers (the output layer has one head).
    pub heads: usize,
    /// GAT: attention dropout.
    pub attn_drop: f32,
}

impl Net {
    fn new(layers: Vec<Box<dyn Conv + Send>>, activation: Activation, dropout: f32, drop_input: Vec<bool>) -> Self {
        Self { layers, activation, dropout, drop_input, inputs: Vec::new(), drops: Vec::new() }
    }

    /// GCN (Kipf & Welling's reference `gcn/models.py`): `GraphConv`
    /// layers, ReLU, dropout before every layer, the input features
    /// included (DGL's example skips the input dropout and decays every
    /// layer: 81.04% vs 81.46% mean test accuracy over 5 seeds on Cora, both
    /// measured with DGL, docs/MODELS.md). `g` must carry self-loops
    /// ([`crate::models::data::with_self_loops`]).
    pub fn gcn(c: &NetConfig, rng: &mut Rng) -> Self {
        let dims = dims(c.in_dim, c.hidden, c.classes, c.layers);
        let layers =
            dims.windows(2).map(|w| Box::new(GraphConv::new(w[0], w[1], rng)) as Box<dyn Conv + Send>).collect();
        Self::new(layers, Activation::Relu, c.dropout, vec![true; c.layers])
    }

    /// GraphSAGE (DGL `examples/pytorch/graphsage`): `SageConv` layers,
    /// ReLU, dropout before every layer (input included).
    pub fn sage(c: &NetConfig, aggregator: SageAggregator, rng: &mut Rng) -> Self {
        let dims = dims(c.in_dim, c.hidden, c.classes, c.layers);
        let layers = dims
            .windows(2)
            .map(|w| Box::new(SageConv::new(w[0], w[1], aggregator, rng)) as Box<dyn Conv + Send>)
            .collect();
        Self::new(layers, Activation::Relu, c.dropout, vec![true; c.layers])
    }

    /// GAT (DGL `examples/pytorch/gat`): hidden layers of `heads × hidden`
    /// (concatenated), ELU, a one-head output layer; feature dropout before
    /// every layer, attention dropout inside.
    pub fn gat(c: &NetConfig, rng: &mut Rng) -> Self {
        let mut layers: Vec<Box<dyn Conv + Send>> = Vec::new();
        let mut input = c.in_dim;
        for i in 0..c.layers {
            let last = i + 1 == c.layers;
            let (out, heads) = if last { (c.classes, 1) } else { (c.hidden, c.heads) };
            layers.push(Box::new(GatConv::new(input, out, heads, c.attn_drop, 0x6a7 + i as u64, rng)));
            input = out * heads;
        }
        Self::new(layers, Activation::Elu, c.dropout, vec![true; c.layers])
    }

    /// Logits for the destinations of `graphs[last]`; `graphs[i]` is layer
    /// `i`'s graph (the same full graph for all, or sampled blocks). The
    /// logits come from `ctx`'s pool: hand them back with [`Ctx::recycle`].
    pub fn forward(&mut self, ctx: &mut Ctx, graphs: &[&G], x: &Mat) -> Result<Mat> {
        assert_eq!(graphs.len(), self.layers.len(), "one graph per layer");
        for old in self.inputs.drain(..).flatten() {
            ctx.recycle(old);
        }
        self.drops.clear();
        let mut h: Option<Mat> = None;
        for (i, &g) in graphs.iter().enumerate() {
            let drop = if ctx.training && self.drop_input[i] {
                Dropout::new(self.dropout, ctx.stream(0xd50 + i as u64))
            } else {
                None
            };
            match (&mut h, drop) {
                // The hidden activation and its dropout, fused in place.
                (Some(hidden), _) => ctx.dense(|| activate_dropout(self.activation, &mut hidden.data, drop)),
                (None, Some(d)) => {
                    let mut dropped = ctx.mat(x.rows, x.cols);
                    ctx.dense(|| d.apply_into(&x.data, &mut dropped.data));
                    h = Some(dropped);
                }
                (None, None) => {}
            }
            self.drops.push(drop);
            let out = self.layers[i].forward(ctx, g, h.as_ref().unwrap_or(x))?;
            self.inputs.push(h.replace(out));
        }
        h.ok_or_else(|| ModelError::Arg("a model needs at least one layer".into()))
    }

    /// Backward from the logits' gradient; accumulates parameter gradients.
    /// `grad` is handed back to `ctx`'s pool.
    pub fn backward(&mut self, ctx: &mut Ctx, graphs: &[&G], x: &Mat, grad: Mat) -> Result<()> {
        let mut grad = grad;
        for i in (0..self.layers.len()).rev() {
            let input = self.inputs[i].as_ref().unwrap_or(x);
            let dx = self.layers[i].backward(ctx, graphs[i], input, &grad, i > 0)?;
            ctx.recycle(std::mem::take(&mut grad));
            let Some(mut dx) = dx else {
                break;
            };
            let (act, drop) = (self.activation, self.drops[i]);
            ctx.dense(|| activate_dropout_backward(act, &input.data, &mut dx.data, drop));
            grad = dx;
        }
        ctx.recycle(grad);
        Ok(())
    }

    /// Every parameter, in a fixed order.
    pub fn params(&mut self) -> Vec<&mut Param> {
        self.layers.iter_mut().flat_map(|l| l.params()).collect()
    }
}

/// Layer widths `[in, hidden, ..., hidden, classes]`.
fn dims(input: usize, hidden: usize, classes: usize, layers: usize) -> Vec<usize> {
    let mut d = vec![input];
    d.extend(std::iter::repeat_n(hidden, layers.saturating_sub(1)));
    d.push(classes);
    d
}
