//! Graph cases, operand shapes, operand data and op enumerations.

use super::rng::Rng;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{Graph, Index, SddmmSpec, SpmmSpec};

/// Feature sizes straddling every lane count (4, 8, 16 lanes) and more.
pub const FEATURE_SIZES: [usize; 14] = [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 257];

/// Heads in multi-head shapes (`[H, D]`): not a power of two on purpose.
pub const HEADS: usize = 3;

/// The structural graph cases every op is checked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GraphKind {
    /// Nodes but no edges: every output row is empty.
    NoEdges,
    /// Half the destinations have no in-edges.
    EmptyRows,
    /// One destination with thousands of in-edges (see [`Scale`]), the rest sparse.
    Hub,
    /// Every node has a self-loop, plus random edges.
    SelfLoops,
    /// Every edge appears two or three times.
    Duplicates,
    /// `num_src != num_dst` (a sampled block).
    Bipartite,
    /// Random edges, built from an out-CSR rather than COO.
    Random,
}

impl GraphKind {
    pub const ALL: [GraphKind; 7] = [
        GraphKind::NoEdges,
        GraphKind::EmptyRows,
        GraphKind::Hub,
        GraphKind::SelfLoops,
        GraphKind::Duplicates,
        GraphKind::Bipartite,
        GraphKind::Random,
    ];
}

/// How big a case is: `Small` for brute-force oracles and finite
/// differences, `Full` for backend comparisons (a hub of 3000 in-edges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Small,
    Full,
}

/// A graph with its edge list kept in plain form for oracles.
#[derive(Clone, Debug)]
pub struct GraphCase<I: Index> {
    pub kind: GraphKind,
    pub graph: Graph<I>,
    pub num_src: usize,
    pub num_dst: usize,
    /// `src[e]`, `dst[e]` by edge id.
    pub src: Vec<usize>,
    pub dst: Vec<usize>,
}

impl<I: Index> GraphCase<I> {
    pub fn num_edges(&self) -> usize {
        self.src.len()
    }

    /// Rows of an operand on `target`.
    pub fn rows(&self, target: Target) -> usize {
        match target {
            Target::Src => self.num_src,
            Target::Edge => self.num_edges(),
            Target::Dst => self.num_dst,
        }
    }

    /// Largest in- or out-degree (at least 1).
    pub fn max_degree(&self) -> usize {
        let mut din = vec![0usize; self.num_dst];
        let mut dout = vec![0usize; self.num_src];
        for (&u, &v) in self.src.iter().zip(&self.dst) {
            dout[u] += 1;
            din[v] += 1;
        }
        din.into_iter().chain(dout).max().unwrap_or(0).max(1)
    }
}

fn edges(kind: GraphKind, scale: Scale, rng: &mut Rng) -> (usize, usize, Vec<usize>, Vec<usize>) {
    let small = scale == Scale::Small;
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    let mut push = |u: usize, v: usize| {
        src.push(u);
        dst.push(v);
    };
    let (ns, nd) = match kind {
        GraphKind::NoEdges => (5, 4),
        GraphKind::EmptyRows => {
            let n = if small { 8 } else { 24 };
            for _ in 0..2 * n {
                push(rng.below(n), 2 * rng.below(n / 2));
            }
            (n, n)
        }
        GraphKind::Hub => {
            let n = if small { 12 } else { 48 };
            let hub_edges = if small { 60 } else { 3000 };
            for _ in 0..hub_edges {
                push(rng.below(n), 0);
            }
            for _ in 0..n {
                push(rng.below(n), 1 + rng.below(n - 1));
            }
            (n, n)
        }
        GraphKind::SelfLoops => {
            let n = if small { 6 } else { 20 };
            for v in 0..n {
                push(v, v);
            }
            for _ in 0..n {
                push(rng.below(n), rng.below(n));
            }
            (n, n)
        }
        GraphKind::Duplicates => {
            let n = if small { 6 } else { 20 };
            for _ in 0..n {
                let (u, v) = (rng.below(n), rng.below(n));
                for _ in 0..2 + rng.below(2) {
                    push(u, v);
                }
            }
            (n, n)
        }
        GraphKind::Bipartite => {
            let (ns, nd) = if small { (7, 4) } else { (30, 11) };
            for _ in 0..2 * ns {
                push(rng.below(ns), rng.below(nd));
            }
            (ns, nd)
        }
        GraphKind::Random => {
            let n = if small { 7 } else { 25 + rng.below(10) };
            for _ in 0..rng.below(3 * n) + 1 {
                push(rng.below(n), rng.below(n));
            }
            (n, n)
        }
    };
    (ns, nd, src, dst)
}

fn ids<I: Index>(v: &[usize]) -> Vec<I> {
    v.iter().map(|&x| I::try_from_usize(x).unwrap()).collect()
}

/// The graph case `kind` drawn with `seed`.
pub fn graph_case<I: Index>(kind: GraphKind, scale: Scale, seed: u64) -> GraphCase<I> {
    let mut rng = Rng::new(seed);
    let (num_src, num_dst, src, dst) = edges(kind, scale, &mut rng);
    let graph = if kind == GraphKind::Random {
        // Out-CSR rows in edge-id order (unsorted columns): the graph sorts them.
        let mut order: Vec<usize> = (0..src.len()).collect();
        order.sort_by_key(|&e| src[e]);
        let mut indptr = vec![0usize; num_src + 1];
        for &u in &src {
            indptr[u + 1] += 1;
        }
        for i in 0..num_src {
            indptr[i + 1] += indptr[i];
        }
        let indices: Vec<usize> = order.iter().map(|&e| dst[e]).collect();
        Graph::from_csr(num_src, num_dst, ids(&indptr), ids(&indices), Some(ids(&order))).unwrap()
    } else {
        Graph::from_coo(num_src, num_dst, ids(&src), ids(&dst)).unwrap()
    };
    GraphCase { kind, graph, num_src, num_dst, src, dst }
}

/// Feature shapes of the two operands of one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shapes {
    pub lhs: Vec<usize>,
    pub rhs: Vec<usize>,
}

/// Number of shape families [`shapes`] knows for `op`.
pub fn shape_families(op: BinaryOpKind) -> usize {
    match op {
        BinaryOpKind::CopyLhs | BinaryOpKind::CopyRhs => 2,
        BinaryOpKind::Dot => 4,
        _ => 7,
    }
}

/// Operand shapes of family `family` with feature size `d`:
/// plain `[d]`, scalar weights `[1]`, multi-head `[H,d]×[H,1]` both ways,
/// a leading broadcast `[2,d]×[d]`, a two-sided broadcast `[d]×[3,1]`; for
/// dot `[d]·[d]`, `[H,d]·[H,d]` and head broadcasts `[H,d]·[1,d]`.
pub fn shapes(op: BinaryOpKind, family: usize, d: usize) -> Shapes {
    let h = HEADS;
    let (lhs, rhs): (Vec<usize>, Vec<usize>) = match op {
        BinaryOpKind::CopyLhs | BinaryOpKind::CopyRhs => {
            let s = if family.is_multiple_of(2) { vec![d] } else { vec![h, d] };
            if op == BinaryOpKind::CopyLhs { (s, vec![]) } else { (vec![], s) }
        }
        BinaryOpKind::Dot => match family % 4 {
            0 => (vec![d], vec![d]),
            1 => (vec![h, d], vec![h, d]),
            2 => (vec![h, d], vec![1, d]),
            _ => (vec![1, d], vec![h, d]),
        },
        _ => match family % 7 {
            0 => (vec![d], vec![d]),
            1 => (vec![d], vec![1]),
            2 => (vec![1], vec![d]),
            3 => (vec![h, d], vec![h, 1]),
            4 => (vec![h, 1], vec![h, d]),
            5 => (vec![2, d], vec![d]),
            _ => (vec![d], vec![3, 1]),
        },
    };
    Shapes { lhs, rhs }
}

/// How operand values are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Uniform in ±[0.25, 2).
    Finite,
    /// Small integers: every sum and dot is exact in f32 (for arg comparisons of dot max/min).
    Integers,
    /// Finite values with NaN, +inf and -inf sprinkled in.
    Specials,
}

/// `rows × feat` operand values; divisors (`divisor = true`) stay away from 0
/// unless specials are asked for.
pub fn operand_data(rng: &mut Rng, rows: usize, feat: &[usize], values: Values, divisor: bool) -> Vec<f32> {
    let n = rows * feat.iter().product::<usize>();
    match values {
        Values::Finite => rng.signed_vec(n, 0.25, 2.0),
        Values::Integers if divisor => (0..n).map(|_| [1.0, 2.0, -1.0, 4.0][rng.below(4)]).collect(),
        Values::Integers => rng.int_vec(n, 3),
        Values::Specials => {
            let mut v = rng.signed_vec(n, 0.25, 2.0);
            for _ in 0..(n / 7).max(1).min(n) {
                let i = rng.below(n);
                v[i] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0][rng.below(4)];
            }
            v
        }
    }
}

const TARGETS: [Target; 3] = [Target::Src, Target::Edge, Target::Dst];

/// Every message `(op, lhs target, rhs target)`: copy_lhs and copy_rhs on
/// each target, and every binary op on every target pair.
pub fn all_messages() -> Vec<(BinaryOpKind, Target, Target)> {
    let mut v = Vec::new();
    for t in TARGETS {
        v.push((BinaryOpKind::CopyLhs, t, Target::Edge));
        v.push((BinaryOpKind::CopyRhs, Target::Edge, t));
    }
    for op in [BinaryOpKind::Add, BinaryOpKind::Sub, BinaryOpKind::Mul, BinaryOpKind::Div, BinaryOpKind::Dot] {
        for l in TARGETS {
            for r in TARGETS {
                v.push((op, l, r));
            }
        }
    }
    v
}

/// Every g-SpMM spec.
pub fn all_spmm_specs() -> Vec<SpmmSpec> {
    let mut v = Vec::new();
    for (op, l, r) in all_messages() {
        for reduce in ReduceKind::ALL {
            v.push(SpmmSpec::new(op, l, r, reduce));
        }
    }
    v
}

/// Every g-SDDMM spec.
pub fn all_sddmm_specs() -> Vec<SddmmSpec> {
    all_messages().into_iter().map(|(op, l, r)| SddmmSpec::new(op, l, r)).collect()
}

/// The operand tensors of one op on a graph case, as owned data with shapes.
#[derive(Clone, Debug)]
pub struct Operands {
    pub lhs: Option<(Vec<f32>, Vec<usize>)>,
    pub rhs: Option<(Vec<f32>, Vec<usize>)>,
}

impl Operands {
    /// Draws the operands `op` reads on targets `l`, `r`.
    pub fn draw<I: Index>(
        g: &GraphCase<I>,
        op: BinaryOpKind,
        (l, r): (Target, Target),
        shapes: &Shapes,
        values: Values,
        rng: &mut Rng,
    ) -> Self {
        let mk = |rng: &mut Rng, t: Target, feat: &[usize], divisor: bool| {
            let rows = g.rows(t);
            let mut shape = vec![rows];
            shape.extend_from_slice(feat);
            (operand_data(rng, rows, feat, values, divisor), shape)
        };
        let lhs = op.uses_lhs().then(|| mk(rng, l, &shapes.lhs, false));
        let rhs = op.uses_rhs().then(|| mk(rng, r, &shapes.rhs, op == BinaryOpKind::Div));
        Self { lhs, rhs }
    }

    pub fn lhs(&self) -> Option<gnnkern::TensorRef<'_>> {
        self.lhs.as_ref().map(|(d, s)| gnnkern::TensorRef::new(d, s).unwrap())
    }

    pub fn rhs(&self) -> Option<gnnkern::TensorRef<'_>> {
        self.rhs.as_ref().map(|(d, s)| gnnkern::TensorRef::new(d, s).unwrap())
    }
}
