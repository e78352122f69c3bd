//! Dense feature tensors: contiguous, row-major, with a leading dimension
//! (nodes or edges) followed by a feature shape such as `[H, D]`.
//!
//! Ops read [`TensorRef`]s and write [`TensorMut`]s that borrow caller
//! memory, so the library never allocates `E × d` message tensors; [`Tensor`]
//! is the owned form used by the allocating convenience wrappers. The
//! element type is a parameter (f32 today) so f64 and bf16 can be added
//! without changing op signatures.
//!
//! Owned storage is [`AlignedVec`]: 64-byte (cache-line) aligned, as
//! PyTorch's and NumPy's allocators align. A 128-byte feature row (d = 32)
//! that starts mid-line spans 3 cache lines instead of 2, and the pull
//! kernels' random row gathers are bound by lines fetched: misaligned rows
//! made copy_u_sum 1.4x slower on a 2^24-edge graph (docs/PERFORMANCE.md,
//! "Alignment"). Large owned buffers also ask for transparent huge pages
//! ([`crate::huge_pages`]). Views over caller memory work at any alignment.

use crate::{Error, Result};

/// The storage of [`Tensor`] (use it for feature buffers handed to the
/// ops), and the helpers that allocate it: cache-line aligned, advised for
/// huge pages when large (`gnnkern_simd::buffer`).
pub use gnnkern_simd::buffer::{AlignedVec, CACHE_LINE, aligned_copy, aligned_filled, aligned_with_capacity};

/// Element types a tensor may hold.
pub trait Element: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// Name for error messages and the C ABI.
    const NAME: &'static str;
}

impl Element for f32 {
    const NAME: &'static str = "float32";
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn check_len(shape: &[usize], len: usize) -> Result<()> {
    if shape.is_empty() {
        return Err(Error::BadShape {
            what: "a tensor needs a leading dimension".into(),
            expected: vec![0],
            actual: vec![],
        });
    }
    let expected = numel(shape);
    if expected != len {
        return Err(Error::TensorSize { shape: shape.to_vec(), expected, actual: len });
    }
    Ok(())
}

/// A read-only view: `data.len() == shape.iter().product()`, `shape.len() >= 1`.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a, T: Element = f32> {
    data: &'a [T],
    shape: &'a [usize],
}

impl<'a, T: Element> TensorRef<'a, T> {
    /// Wraps `data` with `shape`; the element count must match.
    pub fn new(data: &'a [T], shape: &'a [usize]) -> Result<Self> {
        check_len(shape, data.len())?;
        Ok(Self { data, shape })
    }

    /// The elements, row-major.
    pub fn data(&self) -> &'a [T] {
        self.data
    }

    /// The full shape `[rows, feat...]`.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// Size of the leading dimension.
    pub fn rows(&self) -> usize {
        self.shape[0]
    }

    /// The feature shape (everything after the leading dimension).
    pub fn feat_shape(&self) -> &'a [usize] {
        &self.shape[1..]
    }

    /// Elements per row.
    pub fn row_len(&self) -> usize {
        numel(self.feat_shape())
    }
}

/// A writable view with the same invariants as [`TensorRef`].
#[derive(Debug)]
pub struct TensorMut<'a, T: Element = f32> {
    data: &'a mut [T],
    shape: &'a [usize],
}

impl<'a, T: Element> TensorMut<'a, T> {
    /// Wraps `data` with `shape`; the element count must match.
    pub fn new(data: &'a mut [T], shape: &'a [usize]) -> Result<Self> {
        check_len(shape, data.len())?;
        Ok(Self { data, shape })
    }

    /// The elements, row-major.
    pub fn data(&mut self) -> &mut [T] {
        self.data
    }

    /// Consumes the view, returning the element slice.
    pub fn into_data(self) -> &'a mut [T] {
        self.data
    }

    /// The full shape.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// Size of the leading dimension.
    pub fn rows(&self) -> usize {
        self.shape[0]
    }

    /// The feature shape.
    pub fn feat_shape(&self) -> &'a [usize] {
        &self.shape[1..]
    }

    /// A read-only view of the same memory.
    pub fn as_ref(&self) -> TensorRef<'_, T> {
        TensorRef { data: self.data, shape: self.shape }
    }

    /// Reborrows for a shorter lifetime.
    pub fn reborrow(&mut self) -> TensorMut<'_, T> {
        TensorMut { data: self.data, shape: self.shape }
    }
}

/// An owned tensor (cache-line aligned storage).
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T: Element = f32> {
    data: AlignedVec<T>,
    shape: Vec<usize>,
}

impl<T: Element> Tensor<T> {
    /// A tensor of `T::default()` (zero) values.
    pub fn zeros(shape: &[usize]) -> Result<Self> {
        check_len(shape, numel(shape))?;
        Ok(Self { data: aligned_filled(numel(shape), T::default()), shape: shape.to_vec() })
    }

    /// `data` laid out as `shape`, copied into aligned storage (one pass;
    /// [`Tensor::from_aligned`] takes an [`AlignedVec`] without copying).
    pub fn from_vec(data: Vec<T>, shape: Vec<usize>) -> Result<Self> {
        check_len(&shape, data.len())?;
        Ok(Self { data: aligned_copy(&data), shape })
    }

    /// Takes ownership of `data` laid out as `shape`.
    pub fn from_aligned(data: AlignedVec<T>, shape: Vec<usize>) -> Result<Self> {
        check_len(&shape, data.len())?;
        Ok(Self { data, shape })
    }

    /// The elements.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// The elements, mutably.
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements as a `Vec` (a copy: `Vec` cannot own aligned storage).
    pub fn into_vec(self) -> Vec<T> {
        self.data.to_vec()
    }

    /// Consumes the tensor, returning its aligned storage.
    pub fn into_aligned(self) -> AlignedVec<T> {
        self.data
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// A read-only view.
    pub fn view(&self) -> TensorRef<'_, T> {
        TensorRef { data: &self.data, shape: &self.shape }
    }

    /// A writable view.
    pub fn view_mut(&mut self) -> TensorMut<'_, T> {
        TensorMut { data: &mut self.data, shape: &self.shape }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let d = [0.0f32; 6];
        let t = TensorRef::new(&d, &[2, 3]).unwrap();
        assert_eq!((t.rows(), t.row_len(), t.feat_shape()), (2, 3, &[3][..]));
        assert!(matches!(TensorRef::new(&d, &[4, 2]), Err(Error::TensorSize { expected: 8, actual: 6, .. })));
        assert!(TensorRef::new(&d, &[]).is_err());
        let z = Tensor::<f32>::zeros(&[3, 0]).unwrap();
        assert_eq!(z.view().row_len(), 0);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no madvise")]
    fn large_owned_storage_is_advised_for_huge_pages() {
        let mode = crate::huge_pages::system_mode();
        if !matches!(mode.as_deref(), Some("madvise" | "always")) || !crate::huge_pages::enabled() {
            eprintln!("SKIPPED: THP mode {mode:?} ignores the advice, or GNNKERN_HUGE_PAGES=0");
            return;
        }
        let len = (16 << 20) / 4;
        let middle = |p: *const f32| p.wrapping_add(len / 2).cast::<u8>();
        let filled = aligned_filled(len, 1.0f32);
        assert_eq!(crate::huge_pages::is_advised(middle(filled.as_ptr())), Some(true), "aligned_filled");
        let copy = aligned_copy(&filled[..]);
        assert_eq!(crate::huge_pages::is_advised(middle(copy.as_ptr())), Some(true), "aligned_copy");
        let zeros = Tensor::<f32>::zeros(&[len, 1]).unwrap();
        assert_eq!(crate::huge_pages::is_advised(middle(zeros.data().as_ptr())), Some(true), "Tensor::zeros");
    }

    #[test]
    fn owned_storage_is_cache_line_aligned() {
        for n in [1usize, 3, 17, 1 << 20] {
            let t = Tensor::<f32>::zeros(&[n, 1]).unwrap();
            assert_eq!(t.data().as_ptr() as usize % CACHE_LINE, 0, "zeros({n})");
            assert!(t.data().iter().all(|&x| x == 0.0));
            let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let t = Tensor::from_vec(v.clone(), vec![n, 1]).unwrap();
            assert_eq!(t.data().as_ptr() as usize % CACHE_LINE, 0, "from_vec({n})");
            assert_eq!(t.into_vec(), v);
        }
    }
}
