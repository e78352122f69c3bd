//! NumPy `.npy` arrays (format versions 1.0, 2.0 and 3.0).
//!
//! ```text
//! \x93NUMPY  major minor  header_len (u16 LE for v1, u32 LE for v2/v3)
//! header:    {'descr': '<f4', 'fortran_order': False, 'shape': (N, D), }
//!            padded with spaces to a 64-byte boundary, ends in '\n'
//! data:      prod(shape) elements, C order
//! ```
//!
//! Supported dtypes: `<i4`, `<i8`, `<f4`, `<f8` (`|`/`=` byte-order marks
//! are not accepted for these multi-byte types; big-endian is rejected). The
//! header is parsed as the Python literal subset NumPy writes — a dict of
//! exactly the three keys — and every hostile variant is an error naming
//! the byte offset: unknown or repeated keys, `fortran_order: True`, shape
//! products that overflow, a header longer than the file, or a data section
//! whose size does not match the shape. The data section is memory-mapped
//! and decoded once.

use crate::binio::{self, Mapped};
use crate::error::{DatasetError, Result};
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";
/// Largest header accepted (NumPy itself refuses headers above 10 000 bytes
/// by default); guards against allocating for a hostile length field.
const MAX_HEADER: usize = 1 << 20;

/// The element data of an array.
#[derive(Clone, Debug, PartialEq)]
pub enum NpyData {
    /// `<i4`
    I32(Vec<i32>),
    /// `<i8`
    I64(Vec<i64>),
    /// `<f4`
    F32(Vec<f32>),
    /// `<f8`
    F64(Vec<f64>),
}

impl NpyData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::I32(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The NumPy descr of this data.
    pub fn descr(&self) -> &'static str {
        match self {
            Self::I32(_) => "<i4",
            Self::I64(_) => "<i8",
            Self::F32(_) => "<f4",
            Self::F64(_) => "<f8",
        }
    }
}

/// An n-dimensional array read from a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Dimensions, C order (empty for a scalar).
    pub shape: Vec<usize>,
    /// `prod(shape)` elements.
    pub data: NpyData,
}

impl NpyArray {
    /// The elements as `i64` if the array holds integers.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        match &self.data {
            NpyData::I32(v) => Some(v.iter().map(|&x| i64::from(x)).collect()),
            NpyData::I64(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// The elements as `f32` (f64 is rounded; integers converted).
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            NpyData::I32(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::I64(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::F32(v) => v.clone(),
            NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }
}

/// Reads a `.npy` file.
pub fn read(path: &Path) -> Result<NpyArray> {
    let map = Mapped::open(path)?;
    let bytes = map.bytes();
    let (header, data_start) = split_header(path, bytes)?;
    let (descr, shape) = parse_header(path, header, (data_start - header.len()) as u64)?;
    let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| {
        DatasetError::format(
            path,
            MAGIC.len() as u64 + 4,
            format!("shape {shape:?} has more elements than fit in memory"),
        )
    })?;
    let elem = match descr.as_str() {
        "<i4" | "<f4" => 4,
        "<i8" | "<f8" => 8,
        _ => unreachable!("parse_header accepts only these descrs"),
    };
    let body = &bytes[data_start..];
    let expected = (count as u64).saturating_mul(elem);
    if body.len() as u64 != expected {
        return Err(DatasetError::FileSize {
            path: path.to_path_buf(),
            expected: data_start as u64 + expected.min(u64::MAX - data_start as u64),
            actual: bytes.len() as u64,
            why: format!("{data_start}-byte header + {count} x {descr} for shape {shape:?}"),
        });
    }
    let data = match descr.as_str() {
        "<i4" => NpyData::I32(binio::decode(body)),
        "<i8" => NpyData::I64(binio::decode(body)),
        "<f4" => NpyData::F32(binio::decode(body)),
        _ => NpyData::F64(binio::decode(body)),
    };
    Ok(NpyArray { shape, data })
}

/// Returns the header text and the offset of the data section.
fn split_header<'a>(path: &Path, bytes: &'a [u8]) -> Result<(&'a str, usize)> {
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(DatasetError::format(path, 0, "not a .npy file (missing \\x93NUMPY magic)"));
    }
    let major = bytes[6];
    let (len_size, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        v => return Err(DatasetError::format(path, 6, format!("unsupported .npy format version {v}"))),
    };
    let start = 8 + len_size;
    if bytes.len() < start {
        return Err(DatasetError::format(path, 8, "file ends inside the header length field"));
    }
    let len = if len_size == 2 {
        usize::from(u16::from_le_bytes([bytes[8], bytes[9]]))
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    if len > MAX_HEADER {
        return Err(DatasetError::format(path, 8, format!("header length {len} exceeds the {MAX_HEADER}-byte limit")));
    }
    if bytes.len() < start + len {
        return Err(DatasetError::FileSize {
            path: path.to_path_buf(),
            expected: (start + len) as u64,
            actual: bytes.len() as u64,
            why: format!("header of {len} bytes declared at offset 8"),
        });
    }
    let raw = &bytes[start..start + len];
    if !utf8 && !raw.is_ascii() {
        return Err(DatasetError::format(path, start as u64, format!("version {major} header is not ASCII")));
    }
    let text = std::str::from_utf8(raw)
        .map_err(|e| DatasetError::format(path, (start + e.valid_up_to()) as u64, "header is not UTF-8"))?;
    Ok((text, start + len))
}

/// A tiny parser for the Python dict literal of a `.npy` header.
struct HeaderParser<'a> {
    path: &'a Path,
    s: &'a [u8],
    pos: usize,
    base: u64,
}

impl HeaderParser<'_> {
    fn err(&self, problem: impl Into<String>) -> DatasetError {
        DatasetError::format(self.path, self.base + self.pos as u64, format!("bad .npy header: {}", problem.into()))
    }
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn expect(&mut self, c: u8) -> Result<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(format!("expected '{}'", c as char)))
        }
    }
    fn string(&mut self) -> Result<String> {
        let q = self.peek().filter(|&c| c == b'\'' || c == b'"').ok_or_else(|| self.err("expected a quoted string"))?;
        let start = self.pos + 1;
        let end = self.s[start..].iter().position(|&c| c == q).ok_or_else(|| self.err("unterminated string"))?;
        self.pos = start + end + 1;
        let body = &self.s[start..start + end];
        if body.contains(&b'\\') {
            return Err(self.err("escape sequences are not allowed in header strings"));
        }
        Ok(String::from_utf8_lossy(body).into_owned())
    }
    fn word(&mut self) -> &[u8] {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_') {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }
    fn shape(&mut self) -> Result<Vec<usize>> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.peek() == Some(b')') {
                self.pos += 1;
                break;
            }
            let at = self.pos;
            let text = String::from_utf8_lossy(self.word()).into_owned();
            let Ok(d) = text.parse::<usize>() else {
                self.pos = at;
                return Err(self.err(format!("shape entry {text:?} is not a non-negative integer")));
            };
            dims.push(d);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {}
                _ => return Err(self.err("expected ',' or ')' in shape")),
            }
            if dims.len() > 32 {
                return Err(self.err("more than 32 dimensions"));
            }
        }
        Ok(dims)
    }
}

/// Parses the header dict into `(descr, shape)`.
fn parse_header(path: &Path, text: &str, base: u64) -> Result<(String, Vec<usize>)> {
    let mut p = HeaderParser { path, s: text.as_bytes(), pos: 0, base };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        if p.peek() == Some(b'}') {
            p.pos += 1;
            break;
        }
        let key_at = p.pos;
        let key = p.string()?;
        p.expect(b':')?;
        let repeated = match key.as_str() {
            "descr" => descr.replace(p.string()?).is_some(),
            "fortran_order" => {
                let w = p.word();
                let v = match w {
                    b"False" => false,
                    b"True" => true,
                    _ => return Err(p.err("fortran_order must be True or False")),
                };
                fortran.replace(v).is_some()
            }
            "shape" => shape.replace(p.shape()?).is_some(),
            other => {
                p.pos = key_at;
                return Err(p.err(format!("unexpected key {other:?}")));
            }
        };
        if repeated {
            p.pos = key_at;
            return Err(p.err(format!("key {key:?} appears twice")));
        }
        match p.peek() {
            Some(b',') => p.pos += 1,
            Some(b'}') => {}
            _ => return Err(p.err("expected ',' or '}'")),
        }
    }
    if p.s[p.pos..].iter().any(|c| !c.is_ascii_whitespace()) {
        return Err(p.err("trailing characters after the header dict"));
    }
    let descr = descr.ok_or_else(|| p.err("missing key 'descr'"))?;
    let fortran = fortran.ok_or_else(|| p.err("missing key 'fortran_order'"))?;
    let shape = shape.ok_or_else(|| p.err("missing key 'shape'"))?;
    if fortran {
        return Err(p.err("fortran_order True (column-major) arrays are not supported; save with C order"));
    }
    if !matches!(descr.as_str(), "<i4" | "<i8" | "<f4" | "<f8") {
        return Err(p.err(format!("dtype {descr:?} is not supported (expected <i4, <i8, <f4 or <f8)")));
    }
    Ok((descr, shape))
}

/// Writes `data` with `shape` as a version 1.0 `.npy` file.
pub fn write(path: &Path, shape: &[usize], data: &NpyData) -> Result<()> {
    let count: usize = shape.iter().product();
    if count != data.len() {
        return Err(DatasetError::invalid(
            "npy array",
            format!("shape {shape:?} needs {count} elements, data has {}", data.len()),
        ));
    }
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {tuple}, }}", data.descr());
    let total = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let header_len = u16::try_from(header.len())
        .map_err(|_| DatasetError::invalid("npy array", "header too long for format 1.0"))?;
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len() + data.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    match data {
        NpyData::I32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::I64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::F32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::F64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
    }
    let mut f = std::fs::File::create(path).map_err(|e| DatasetError::io(path, "create", e))?;
    f.write_all(&out).map_err(|e| DatasetError::io(path, "write", e))
}

/// Loads an edge index `[2, E]` (or `[E, 2]`) of integers as a dataset;
/// `num_nodes` defaults to `max id + 1`.
pub fn load_edge_index(path: &Path, num_nodes: Option<usize>) -> Result<crate::Dataset> {
    let arr = read(path)?;
    let ids = arr.to_i64().ok_or_else(|| {
        DatasetError::format(path, 0, format!("edge index must be <i4 or <i8, found {}", arr.data.descr()))
    })?;
    let (src, dst) = match arr.shape[..] {
        [2, e] => (ids[..e].to_vec(), ids[e..].to_vec()),
        [e, 2] => (0..e).map(|i| (ids[2 * i], ids[2 * i + 1])).unzip(),
        _ => {
            return Err(DatasetError::format(
                path,
                0,
                format!("edge index shape {:?} is not [2, E] or [E, 2]", arr.shape),
            ));
        }
    };
    let n = match num_nodes {
        Some(n) => n,
        None => ids.iter().copied().max().map_or(0, |m| (m.max(-1) + 1) as usize),
    };
    binio::check_ids_in_file(path, &ids, n)?;
    let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    Ok(crate::Dataset::from_edges(name, n, src, dst))
}
