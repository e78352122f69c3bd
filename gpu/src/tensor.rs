//! Device tensors with explicit upload and download.

use crate::context::GpuContext;
use crate::error::{GpuError, Result};

/// A flat f32 array in a GPU storage buffer (row-major, rows × row_len).
#[derive(Debug)]
pub struct GpuTensor {
    pub(crate) buffer: wgpu::Buffer,
    len: usize,
    ctx: u64,
}

impl GpuTensor {
    /// Number of f32 elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The underlying buffer (for interop with a host framework's own passes).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    pub(crate) fn check(&self, ctx: &GpuContext, what: &str, expected: usize) -> Result<()> {
        if self.ctx != ctx.id() {
            return Err(GpuError::InvalidArgument(format!("{what} belongs to another GPU context")));
        }
        if self.len != expected {
            return Err(GpuError::InvalidArgument(format!(
                "{what} has {} elements, the call needs {expected}",
                self.len
            )));
        }
        Ok(())
    }
}

/// Arg outputs of a max/min g-SpMM on the device: for every output element
/// the pair (source id, edge id) as i32, interleaved; `-1` for empty rows.
#[derive(Debug)]
pub struct GpuIds {
    pub(crate) buffer: wgpu::Buffer,
    len: usize,
    ctx: u64,
}

impl GpuIds {
    /// Number of output elements (pairs).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn check(&self, ctx: &GpuContext, expected: usize) -> Result<()> {
        if self.ctx != ctx.id() || self.len != expected {
            return Err(GpuError::InvalidArgument(format!(
                "arg output: {} pairs of context {}, the call needs {expected} of context {}",
                self.len,
                self.ctx,
                ctx.id()
            )));
        }
        Ok(())
    }
}

impl GpuContext {
    /// Uploads `data` into a new device tensor.
    pub fn upload(&self, data: &[f32]) -> Result<GpuTensor> {
        let buffer = self.storage_init("gnnkern tensor", bytemuck::cast_slice(data))?;
        Ok(GpuTensor { buffer, len: data.len(), ctx: self.id() })
    }

    /// A zero-filled device tensor of `len` elements.
    pub fn zeros(&self, len: usize) -> Result<GpuTensor> {
        let buffer = self.storage_zeroed("gnnkern tensor", len)?;
        Ok(GpuTensor { buffer, len, ctx: self.id() })
    }

    /// Copies a device tensor into `out` (which must have its length).
    pub fn download_into(&self, t: &GpuTensor, out: &mut [f32]) -> Result<()> {
        t.check(self, "download target", out.len())?;
        let words = self.read_words(&t.buffer, t.len)?;
        for (o, w) in out.iter_mut().zip(words) {
            *o = f32::from_bits(w);
        }
        Ok(())
    }

    /// Copies a device tensor back to the host.
    pub fn download(&self, t: &GpuTensor) -> Result<Vec<f32>> {
        let mut out = vec![0.0; t.len];
        self.download_into(t, &mut out)?;
        Ok(out)
    }

    /// Device storage for `len` arg pairs (filled by a max/min g-SpMM).
    pub fn ids(&self, len: usize) -> Result<GpuIds> {
        let words = len.checked_mul(2).ok_or_else(|| GpuError::Unsupported("arg output too large".into()))?;
        let buffer = self.storage_zeroed("gnnkern arg ids", words)?;
        Ok(GpuIds { buffer, len, ctx: self.id() })
    }

    /// Downloads arg pairs as `(source ids, edge ids)`.
    pub fn download_ids(&self, ids: &GpuIds) -> Result<(Vec<i32>, Vec<i32>)> {
        ids.check(self, ids.len)?;
        let words = self.read_words(&ids.buffer, 2 * ids.len)?;
        Ok(words.chunks_exact(2).map(|p| (p[0] as i32, p[1] as i32)).unzip())
    }
}
