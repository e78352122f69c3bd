//! Segment reductions (DGL `segment_reduce`): the rows of a `[N, feat...]`
//! tensor grouped into consecutive segments, each reduced to one row.
//!
//! Segment `s` holds rows `offsets[s]..offsets[s + 1]`; `offsets` has
//! `num_segments + 1` entries, starts at 0, never decreases and ends at `N`
//! ([`offsets_from_lengths`] builds it from segment lengths). The output is
//! `[num_segments, feat...]`:
//! - `sum`, `mean` accumulate in f64 (mean divides by the segment length);
//! - `max`, `min` follow the g-SpMM contract: NaN propagates, among equal
//!   extremes the first row wins, and `arg` (optional) receives the winning
//!   row's index into `x` per output element;
//! - an empty segment gives 0 (and arg -1) for every reducer.
//!
//! The reductions are dense and backend-independent; they run in parallel
//! over segments with rayon.
//!
//! ```
//! use gnnkern::op::ReduceKind;
//! use gnnkern::{Tensor, segment};
//! // Rows 0..2, (none), 2..3.
//! let offsets = segment::offsets_from_lengths(&[2i64, 0, 1]).unwrap();
//! let x = Tensor::from_vec(vec![1.0, 5.0, 3.0], vec![3, 1]).unwrap();
//! let (out, arg) = segment::segment_reduce_alloc(ReduceKind::Max, &offsets, x.view()).unwrap();
//! assert_eq!(out.data(), &[5.0, 0.0, 3.0]);
//! assert_eq!(arg.unwrap(), vec![1, -1, 2]);
//! ```

use crate::tensor::{Tensor, TensorMut, TensorRef};
use crate::{Error, Index, Result};
use gnnkern_simd::dispatch_reducer;
use gnnkern_simd::op::{ReduceKind, Reducer};
use rayon::prelude::*;

/// Offsets for consecutive segments of the given lengths (negative lengths
/// and totals beyond the index type are errors).
pub fn offsets_from_lengths<I: Index>(lengths: &[I]) -> Result<Vec<I>> {
    let mut offsets = Vec::with_capacity(lengths.len() + 1);
    offsets.push(I::from_usize(0));
    let mut total = 0usize;
    for (position, &len) in lengths.iter().enumerate() {
        if len.to_i64() < 0 {
            return Err(Error::IndexOutOfRange {
                what: "segment lengths",
                position,
                value: len.to_i64(),
                bound: I::MAX_USIZE,
            });
        }
        total = total.checked_add(len.to_usize()).filter(|&t| t <= I::MAX_USIZE).ok_or(Error::CountOverflow {
            what: "total segment length",
            count: total.saturating_add(len.to_usize()),
            index_type: I::NAME,
        })?;
        offsets.push(I::from_usize(total));
    }
    Ok(offsets)
}

/// `offsets` must describe consecutive segments covering `num_rows` rows.
fn check_offsets<I: Index>(offsets: &[I], num_rows: usize) -> Result<usize> {
    let Some((&last, _)) = offsets.split_last() else {
        return Err(Error::BadIndptr { reason: "segment offsets need at least one entry (0)", position: 0 });
    };
    if offsets[0].to_i64() != 0 {
        return Err(Error::BadIndptr { reason: "segment offsets must start at 0", position: 0 });
    }
    if let Some(p) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::BadIndptr { reason: "segment offsets must be non-decreasing", position: p + 1 });
    }
    if last.to_usize() != num_rows {
        return Err(Error::BadIndptr {
            reason: "the last segment offset must equal the number of rows of x",
            position: offsets.len() - 1,
        });
    }
    Ok(offsets.len() - 1)
}

fn shape_with_rows(rows: usize, feat: &[usize]) -> Vec<usize> {
    let mut s = vec![rows];
    s.extend_from_slice(feat);
    s
}

fn check_shape(what: &str, expected: &[usize], actual: &[usize]) -> Result<()> {
    if expected != actual {
        return Err(Error::BadShape { what: what.to_string(), expected: expected.to_vec(), actual: actual.to_vec() });
    }
    Ok(())
}

fn check_arg_presence<I: Index>(reduce: ReduceKind, arg: Option<&[I]>, len: usize) -> Result<()> {
    if let Some(a) = arg {
        if !reduce.has_arg() {
            return Err(Error::MissingOperand(format!(
                "arg was given but reducer {} has no arg output",
                reduce.name()
            )));
        }
        if a.len() != len {
            return Err(Error::LengthMismatch { what: "segment arg", expected: len, actual: a.len() });
        }
    }
    Ok(())
}

/// Reduces each segment of `x` into one row of `out` (see the module docs).
///
/// `out` must be `[num_segments, feat...]`; `arg` (max/min only) has `out`'s
/// element count. Everything is checked before anything is written.
pub fn segment_reduce<I: Index>(
    reduce: ReduceKind,
    offsets: &[I],
    x: TensorRef<'_>,
    mut out: TensorMut<'_>,
    arg: Option<&mut [I]>,
) -> Result<()> {
    let num_segments = check_offsets(offsets, x.rows())?;
    check_shape("segment_reduce: output", &shape_with_rows(num_segments, x.feat_shape()), out.shape())?;
    check_arg_presence(reduce, arg.as_deref(), out.as_ref().data().len())?;
    dispatch_reducer!(reduce, R => reduce_segments::<R, I>(offsets, x.data(), x.row_len(), out.data(), arg));
    Ok(())
}

fn reduce_segments<R: Reducer, I: Index>(offsets: &[I], x: &[f32], len: usize, out: &mut [f32], arg: Option<&mut [I]>) {
    if len == 0 {
        return;
    }
    let mut arg_rows = arg.map(|a| a.chunks_mut(len));
    // (segment, output row, arg row) triples, handed to rayon.
    let rows: Vec<_> =
        out.chunks_mut(len).enumerate().map(|(s, o)| (s, o, arg_rows.as_mut().and_then(Iterator::next))).collect();
    rows.into_par_iter().for_each_init(
        || vec![0f64; len],
        |acc, (s, out_row, mut arg_row)| {
            let (begin, end) = (offsets[s].to_usize(), offsets[s + 1].to_usize());
            if begin == end {
                out_row.fill(0.0);
                if let Some(a) = arg_row {
                    a.fill(I::NONE);
                }
            } else if R::HAS_ARG {
                out_row.copy_from_slice(&x[begin * len..(begin + 1) * len]);
                if let Some(a) = arg_row.as_deref_mut() {
                    a.fill(I::from_usize(begin));
                }
                for r in begin + 1..end {
                    for (j, &val) in x[r * len..(r + 1) * len].iter().enumerate() {
                        if R::replaces(val, out_row[j]) {
                            out_row[j] = val;
                            if let Some(a) = arg_row.as_deref_mut() {
                                a[j] = I::from_usize(r);
                            }
                        }
                    }
                }
            } else {
                acc.fill(0.0);
                for r in begin..end {
                    for (a, &val) in acc.iter_mut().zip(&x[r * len..(r + 1) * len]) {
                        *a += f64::from(val);
                    }
                }
                let scale = if R::DIVIDES_BY_DEGREE { 1.0 / (end - begin) as f64 } else { 1.0 };
                for (o, a) in out_row.iter_mut().zip(acc.iter()) {
                    *o = (a * scale) as f32;
                }
            }
        },
    );
}

/// Gradient of [`segment_reduce`] w.r.t. `x` (overwrite): sum copies each
/// segment's output gradient to its rows, mean also divides by the segment
/// length, max/min route it to the `arg` row (which is then required and
/// checked to lie inside its segment, or be -1 for an empty segment).
pub fn segment_reduce_backward<I: Index>(
    reduce: ReduceKind,
    offsets: &[I],
    grad_out: TensorRef<'_>,
    arg: Option<&[I]>,
    mut grad_x: TensorMut<'_>,
) -> Result<()> {
    let num_segments = check_offsets(offsets, grad_x.rows())?;
    check_shape(
        "segment_reduce_backward: grad_out",
        &shape_with_rows(num_segments, grad_x.feat_shape()),
        grad_out.shape(),
    )?;
    let len = grad_out.row_len();
    check_arg_presence(reduce, arg, grad_out.data().len())?;
    if reduce.has_arg() {
        let arg = arg.ok_or_else(|| {
            Error::MissingOperand(format!(
                "segment_reduce_backward with {} needs the forward arg output",
                reduce.name()
            ))
        })?;
        for (position, &a) in arg.iter().enumerate() {
            let s = position / len;
            let (begin, end) = (offsets[s].to_usize(), offsets[s + 1].to_usize());
            let ok = if a == I::NONE { begin == end } else { (begin..end).contains(&a.to_usize()) };
            if !ok {
                return Err(Error::BadArg {
                    what: "segment arg",
                    position,
                    value: a.to_i64(),
                    problem: format!("is not a row of segment {s} (rows {begin}..{end})"),
                });
            }
        }
    }
    if len == 0 {
        return Ok(());
    }
    // Split grad_x into the row blocks of the segments: disjoint, so every
    // segment writes its own block in parallel.
    let mut blocks = Vec::with_capacity(num_segments);
    let mut rest = grad_x.data();
    for w in offsets.windows(2) {
        let (block, tail) = rest.split_at_mut((w[1].to_usize() - w[0].to_usize()) * len);
        blocks.push(block);
        rest = tail;
    }
    let g = grad_out.data();
    blocks.into_par_iter().enumerate().for_each(|(s, block)| {
        let g_row = &g[s * len..(s + 1) * len];
        let rows = block.len() / len;
        match (reduce, arg) {
            (ReduceKind::Max | ReduceKind::Min, Some(arg)) => {
                block.fill(0.0);
                let begin = offsets[s].to_usize();
                for (j, (&a, &gv)) in arg[s * len..(s + 1) * len].iter().zip(g_row).enumerate() {
                    if a != I::NONE {
                        block[(a.to_usize() - begin) * len + j] += gv;
                    }
                }
            }
            _ => {
                let scale = if reduce == ReduceKind::Mean { 1.0 / rows as f64 } else { 1.0 };
                for row in block.chunks_mut(len) {
                    for (x, &gv) in row.iter_mut().zip(g_row) {
                        *x = (f64::from(gv) * scale) as f32;
                    }
                }
            }
        }
    });
    Ok(())
}

/// [`segment_reduce`] into a freshly allocated output; max/min also return `arg`.
pub fn segment_reduce_alloc<I: Index>(
    reduce: ReduceKind,
    offsets: &[I],
    x: TensorRef<'_>,
) -> Result<(Tensor, Option<Vec<I>>)> {
    let num_segments = check_offsets(offsets, x.rows())?;
    let mut out = Tensor::zeros(&shape_with_rows(num_segments, x.feat_shape()))?;
    let mut arg = reduce.has_arg().then(|| vec![I::NONE; out.data().len()]);
    segment_reduce(reduce, offsets, x, out.view_mut(), arg.as_deref_mut())?;
    Ok((out, arg))
}

/// [`segment_reduce_backward`] into a freshly allocated `[N, feat...]` gradient.
pub fn segment_reduce_backward_alloc<I: Index>(
    reduce: ReduceKind,
    offsets: &[I],
    grad_out: TensorRef<'_>,
    arg: Option<&[I]>,
) -> Result<Tensor> {
    // Invalid offsets are reported by the call below; a negative last offset
    // must not size the allocation.
    let num_rows = match offsets.last() {
        Some(&last) if last.to_i64() >= 0 => last.to_usize(),
        _ => 0,
    };
    let mut grad = Tensor::zeros(&shape_with_rows(num_rows, grad_out.feat_shape()))?;
    segment_reduce_backward(reduce, offsets, grad_out, arg, grad.view_mut())?;
    Ok(grad)
}
