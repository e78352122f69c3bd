//! A graph uploaded once and reused by every op: the in-CSR as (source,
//! edge id) pairs per slot, its row offsets, the segment table that splits
//! hub rows, and the COO pairs for edge-parallel g-SDDMM.

use crate::context::GpuContext;
use crate::error::{GpuError, Result};
use crate::shader::SEGMENT_EDGES;
use gnnkern_simd::Index;
use gnnkern_simd::layout::CsrView;

/// Largest id or count the device path accepts: arg outputs are i32.
const MAX_ID: usize = i32::MAX as usize;

/// A graph resident on one [`GpuContext`].
#[derive(Debug)]
pub struct GpuGraph {
    pub(crate) ctx: u64,
    pub(crate) num_dst: usize,
    pub(crate) num_src: usize,
    pub(crate) num_edges: usize,
    /// In-CSR offsets, `num_dst + 1` words.
    pub(crate) row_ptr: wgpu::Buffer,
    /// First segment of every row, `num_dst + 1` words.
    pub(crate) row_seg: wgpu::Buffer,
    /// `(row, first slot, end slot)` per segment.
    pub(crate) segs: wgpu::Buffer,
    /// `(source, edge id)` per in-CSR slot.
    pub(crate) nbr: wgpu::Buffer,
    /// `(source, destination)` per edge id.
    pub(crate) coo: wgpu::Buffer,
    /// Host copies the planner reads.
    pub(crate) host_row_ptr: Vec<u32>,
    pub(crate) host_row_seg: Vec<u32>,
}

fn narrow<I: Index>(what: &str, ids: &[I]) -> Result<Vec<u32>> {
    ids.iter()
        .map(|&x| {
            let v = x.to_usize();
            if v > MAX_ID {
                Err(GpuError::Unsupported(format!(
                    "{what} holds id {v} >= 2^31; the GPU path stores ids and arg outputs as i32"
                )))
            } else {
                Ok(v as u32)
            }
        })
        .collect()
}

impl GpuGraph {
    /// Uploads a graph from its validated in-CSR (rows = destinations) and
    /// its COO (`src[e]`, `dst[e]` by edge id).
    pub fn upload<I: Index>(ctx: &GpuContext, in_csr: CsrView<'_, I>, src: &[I], dst: &[I]) -> Result<Self> {
        let (num_dst, num_src, num_edges) = (in_csr.num_rows(), in_csr.num_cols(), in_csr.num_edges());
        for (what, n) in [("destinations", num_dst), ("sources", num_src), ("edges", num_edges)] {
            if n > MAX_ID {
                return Err(GpuError::Unsupported(format!(
                    "{n} {what} >= 2^31: the GPU path stores ids and arg outputs as i32"
                )));
            }
        }
        if src.len() != num_edges || dst.len() != num_edges {
            return Err(GpuError::InvalidArgument(format!(
                "COO has {} / {} entries, the CSR {num_edges}",
                src.len(),
                dst.len()
            )));
        }
        let row_ptr = narrow("indptr", in_csr.indptr())?;
        let indices = narrow("indices", in_csr.indices())?;
        let eids = narrow("edge ids", in_csr.eids())?;
        let nbr: Vec<u32> = indices.iter().zip(&eids).flat_map(|(&u, &e)| [u, e]).collect();
        let coo: Vec<u32> =
            narrow("src", src)?.into_iter().zip(narrow("dst", dst)?).flat_map(|(u, v)| [u, v]).collect();
        let mut row_seg = Vec::with_capacity(num_dst + 1);
        let mut segs = Vec::new();
        row_seg.push(0u32);
        for r in 0..num_dst {
            let (k0, k1) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            for start in (k0..k1).step_by(SEGMENT_EDGES) {
                segs.extend([r as u32, start as u32, (start + SEGMENT_EDGES).min(k1) as u32]);
            }
            let n = segs.len() / 3;
            if n > MAX_ID {
                return Err(GpuError::Unsupported(format!("{n} segments >= 2^31")));
            }
            row_seg.push(n as u32);
        }
        let cast = bytemuck::cast_slice::<u32, u8>;
        Ok(Self {
            ctx: ctx.id(),
            num_dst,
            num_src,
            num_edges,
            row_ptr: ctx.storage_init("gnnkern row_ptr", cast(&row_ptr))?,
            row_seg: ctx.storage_init("gnnkern row_seg", cast(&row_seg))?,
            segs: ctx.storage_init("gnnkern segments", cast(&segs))?,
            nbr: ctx.storage_init("gnnkern in-csr", cast(&nbr))?,
            coo: ctx.storage_init("gnnkern coo", cast(&coo))?,
            host_row_ptr: row_ptr,
            host_row_seg: row_seg,
        })
    }

    /// Destination rows.
    pub fn num_dst(&self) -> usize {
        self.num_dst
    }

    /// Source nodes.
    pub fn num_src(&self) -> usize {
        self.num_src
    }

    /// Edges.
    pub fn num_edges(&self) -> usize {
        self.num_edges
    }

    /// Segments (g-SpMM work items): rows split into runs of at most
    /// [`SEGMENT_EDGES`] in-edges.
    pub fn num_segments(&self) -> usize {
        *self.host_row_seg.last().unwrap_or(&0) as usize
    }

    /// Device bytes held by the graph.
    pub fn device_bytes(&self) -> u64 {
        [&self.row_ptr, &self.row_seg, &self.segs, &self.nbr, &self.coo].iter().map(|b| b.size()).sum()
    }

    pub(crate) fn check(&self, ctx: &GpuContext) -> Result<()> {
        if self.ctx != ctx.id() {
            return Err(GpuError::InvalidArgument("the graph was uploaded to another GPU context".into()));
        }
        Ok(())
    }
}
