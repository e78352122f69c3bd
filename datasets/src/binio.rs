//! Raw little-endian arrays on disk: memory-mapped reads, buffered writes.
//!
//! A file is mapped read-only, its size is checked against the element size
//! (and the expected count, when the metadata gives one), and the bytes are
//! decoded straight into the final `Vec` in parallel — one pass, no
//! intermediate copy of the file. Writes go through a 1 MiB buffer.

use crate::dataset::IndexWidth;
use crate::error::{DatasetError, Result};
use memmap2::Mmap;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// A read-only view of a whole file (empty files are not mapped).
pub(crate) struct Mapped {
    map: Option<Mmap>,
}

impl Mapped {
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| DatasetError::io(path, "open", e))?;
        let len = file.metadata().map_err(|e| DatasetError::io(path, "stat", e))?.len();
        if len == 0 {
            return Ok(Self { map: None });
        }
        // SAFETY: the mapping is read-only and private to this call chain; the
        // bytes are decoded into owned vectors before `Mapped` is dropped. As
        // with any mmap, another process truncating or rewriting the file
        // while it is mapped is outside what Rust can guard against; dataset
        // files are written once and then only read.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| DatasetError::io(path, "mmap", e))?;
        Ok(Self { map: Some(map) })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

/// Element types stored in dataset files.
pub(crate) trait LeElem: Copy + Send + Sync {
    const SIZE: usize;
    const DTYPE: &'static str;
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! le_elem {
    ($t:ty, $name:literal) => {
        impl LeElem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const DTYPE: &'static str = $name;
            #[inline(always)]
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("chunks_exact yields SIZE bytes"))
            }
        }
    };
}
le_elem!(i32, "int32");
le_elem!(i64, "int64");
le_elem!(f32, "float32");
le_elem!(f64, "float64");

/// Checks the byte length of `path` for `count` elements (or any whole
/// number when `count` is `None`) and returns the element count.
pub(crate) fn check_len(
    path: &Path,
    len: u64,
    elem_size: usize,
    dtype: &'static str,
    count: Option<(usize, &str)>,
) -> Result<usize> {
    match count {
        Some((n, why)) => {
            let expected = (n as u64).saturating_mul(elem_size as u64);
            if len != expected {
                return Err(DatasetError::FileSize {
                    path: path.to_path_buf(),
                    expected,
                    actual: len,
                    why: format!("{n} x {dtype} for {why}"),
                });
            }
            Ok(n)
        }
        None => {
            if !len.is_multiple_of(elem_size as u64) {
                return Err(DatasetError::RaggedFile { path: path.to_path_buf(), actual: len, elem_size, dtype });
            }
            Ok((len / elem_size as u64) as usize)
        }
    }
}

/// Decodes little-endian elements of `bytes` in parallel into a new vector.
pub(crate) fn decode<T: LeElem>(bytes: &[u8]) -> Vec<T> {
    let mut out = Vec::new();
    bytes.par_chunks_exact(T::SIZE).map(T::from_le).collect_into_vec(&mut out);
    out
}

fn read_typed<T: LeElem>(path: &Path, count: Option<(usize, &str)>) -> Result<Vec<T>> {
    let m = Mapped::open(path)?;
    check_len(path, m.bytes().len() as u64, T::SIZE, T::DTYPE, count)?;
    Ok(decode::<T>(m.bytes()))
}

/// Reads node ids of the given width as `i64`.
pub(crate) fn read_ids(path: &Path, width: IndexWidth, count: Option<(usize, &str)>) -> Result<Vec<i64>> {
    match width {
        IndexWidth::I32 => {
            let m = Mapped::open(path)?;
            check_len(path, m.bytes().len() as u64, 4, "int32", count)?;
            let mut out = Vec::new();
            m.bytes().par_chunks_exact(4).map(|b| i64::from(<i32 as LeElem>::from_le(b))).collect_into_vec(&mut out);
            Ok(out)
        }
        IndexWidth::I64 => read_typed::<i64>(path, count),
    }
}

/// Reads an int32 file.
pub(crate) fn read_i32(path: &Path, count: Option<(usize, &str)>) -> Result<Vec<i32>> {
    read_typed::<i32>(path, count)
}

/// Reads a float32 file.
pub(crate) fn read_f32(path: &Path, count: Option<(usize, &str)>) -> Result<Vec<f32>> {
    read_typed::<f32>(path, count)
}

/// Fails naming the first id outside `0..bound` by its position in `path`.
pub(crate) fn check_ids_in_file(path: &Path, ids: &[i64], bound: usize) -> Result<()> {
    match crate::dataset::first_out_of_range(ids, bound) {
        None => Ok(()),
        Some(p) => Err(DatasetError::IdOutOfRange { path: path.to_path_buf(), position: p, value: ids[p], bound }),
    }
}

/// Writes `items` to `path` as little-endian bytes, `size` bytes each.
fn write_with<T: Copy>(path: &Path, items: &[T], size: usize, put: impl Fn(T, &mut [u8])) -> Result<()> {
    let file = File::create(path).map_err(|e| DatasetError::io(path, "create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut buf = vec![0u8; size * 65536];
    for chunk in items.chunks(65536) {
        let bytes = &mut buf[..chunk.len() * size];
        for (&x, b) in chunk.iter().zip(bytes.chunks_exact_mut(size)) {
            put(x, b);
        }
        w.write_all(bytes).map_err(|e| DatasetError::io(path, "write", e))?;
    }
    w.flush().map_err(|e| DatasetError::io(path, "write", e))
}

/// Writes ids with the given width; the caller has checked they fit.
pub(crate) fn write_ids(path: &Path, ids: &[i64], width: IndexWidth) -> Result<()> {
    match width {
        IndexWidth::I32 => write_with(path, ids, 4, |x, b| b.copy_from_slice(&(x as i32).to_le_bytes())),
        IndexWidth::I64 => write_with(path, ids, 8, |x, b| b.copy_from_slice(&x.to_le_bytes())),
    }
}

/// Writes an int32 array.
pub(crate) fn write_i32(path: &Path, v: &[i32]) -> Result<()> {
    write_with(path, v, 4, |x, b| b.copy_from_slice(&x.to_le_bytes()))
}

/// Writes a float32 array.
pub(crate) fn write_f32(path: &Path, v: &[f32]) -> Result<()> {
    write_with(path, v, 4, |x, b| b.copy_from_slice(&x.to_le_bytes()))
}
