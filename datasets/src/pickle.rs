//! A minimal, non-executing reader for Python pickles (protocols 0-2, and
//! the protocol 3/4 opcodes Python 3 writes for the same objects).
//!
//! Nothing is ever called or imported: the stack machine builds a plain
//! [`Value`] tree in which a class or function reference is just its
//! `module.name` ([`Value::Global`]) and an object is "callable, arguments
//! and state" ([`Value::Object`]). The one exception is
//! `_codecs.encode(text, 'latin1')`, which Python 3 emits for `bytes` under
//! protocols 0-2; it is evaluated to [`Value::Bytes`]. [`ndarray`] and
//! [`csr_matrix`] then recognise the shapes NumPy and SciPy pickle into.
//!
//! Memoized values are copies (a later `GET` sees the object as it was
//! when `PUT`), which is enough for data files: sharing only affects
//! repeated classes and dtypes, whose type code lives in their arguments.
//! Every length is checked against the bytes left before anything is
//! allocated; malformed input is an error naming the byte offset.

use crate::error::{DatasetError, Result};
use std::collections::HashMap;
use std::path::Path;

/// A decoded pickle value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Python 2 `str` and Python 3 `bytes`.
    Bytes(Vec<u8>),
    /// Python `unicode` / `str`.
    Str(String),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    /// A class or function, by `module`, `name`.
    Global(String, String),
    /// `callable(*args)` (or `cls.__new__(cls, *args)`), then `BUILD state`,
    /// then `SETITEM`s / `APPEND`s applied to it.
    Object {
        callable: Box<Value>,
        args: Vec<Value>,
        state: Option<Box<Value>>,
        items: Vec<(Value, Value)>,
    },
    /// The stack marker.
    Mark,
}

impl Value {
    /// Text of a `Str`, or of a `Bytes` that is valid UTF-8 (Python 2 keys).
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            Self::Bytes(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    pub(crate) fn is_global(&self, module: &[&str], name: &str) -> bool {
        matches!(self, Self::Global(m, n) if n == name && module.contains(&m.as_str()))
    }
}

struct Machine<'a> {
    path: &'a Path,
    b: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    memo: HashMap<u64, Value>,
}

/// Parses a whole pickle.
pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Value> {
    Machine { path, b: bytes, pos: 0, stack: Vec::new(), memo: HashMap::new() }.run()
}

impl Machine<'_> {
    fn err(&self, at: usize, problem: impl Into<String>) -> DatasetError {
        DatasetError::format(self.path, at as u64, format!("pickle: {}", problem.into()))
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.b.len() - self.pos < n {
            return Err(self.err(self.pos, format!("{n}-byte argument runs past the end of the file")));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        let s = self.take(n)?;
        Ok(s.iter().rev().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    fn line(&mut self) -> Result<&[u8]> {
        let rest = &self.b[self.pos..];
        let end =
            rest.iter().position(|&c| c == b'\n').ok_or_else(|| self.err(self.pos, "unterminated line argument"))?;
        self.pos += end + 1;
        Ok(&rest[..end])
    }

    fn line_str(&mut self) -> Result<String> {
        let at = self.pos;
        let l = self.line()?;
        std::str::from_utf8(l).map(str::to_string).map_err(|_| self.err(at, "line argument is not UTF-8"))
    }

    fn pop(&mut self, at: usize) -> Result<Value> {
        match self.stack.pop() {
            Some(Value::Mark) | None => Err(self.err(at, "stack underflow")),
            Some(v) => Ok(v),
        }
    }

    fn pop_mark(&mut self, at: usize) -> Result<Vec<Value>> {
        let m =
            self.stack.iter().rposition(|v| *v == Value::Mark).ok_or_else(|| self.err(at, "no MARK on the stack"))?;
        let items = self.stack.split_off(m + 1);
        self.stack.pop();
        Ok(items)
    }

    fn top(&mut self, at: usize) -> Result<&mut Value> {
        match self.stack.last_mut() {
            Some(Value::Mark) | None => Err(DatasetError::format(self.path, at as u64, "pickle: stack underflow")),
            Some(v) => Ok(v),
        }
    }

    fn sized(&mut self, len_bytes: usize) -> Result<Vec<u8>> {
        let n = self.uint(len_bytes)?;
        let n = usize::try_from(n).map_err(|_| self.err(self.pos, "length does not fit memory"))?;
        Ok(self.take(n)?.to_vec())
    }

    fn utf8(&self, at: usize, v: Vec<u8>) -> Result<Value> {
        String::from_utf8(v).map(Value::Str).map_err(|_| self.err(at, "string is not UTF-8"))
    }

    fn memo_get(&self, at: usize, key: u64) -> Result<Value> {
        self.memo.get(&key).cloned().ok_or_else(|| self.err(at, format!("memo key {key} was never stored")))
    }

    fn memo_put(&mut self, at: usize, key: u64) -> Result<()> {
        let v = self.top(at)?.clone();
        self.memo.insert(key, v);
        Ok(())
    }

    fn set_items(&mut self, at: usize, pairs: Vec<Value>) -> Result<()> {
        if !pairs.len().is_multiple_of(2) {
            return Err(self.err(at, "odd number of items for SETITEMS"));
        }
        let mut it = pairs.into_iter();
        let mut kv = Vec::new();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            kv.push((k, v));
        }
        match self.top(at)? {
            Value::Dict(d) | Value::Object { items: d, .. } => d.extend(kv),
            _ => return Err(self.err(at, "SETITEM target is not a dict")),
        }
        Ok(())
    }

    fn append(&mut self, at: usize, vals: Vec<Value>) -> Result<()> {
        match self.top(at)? {
            Value::List(l) => l.extend(vals),
            Value::Object { items, .. } => items.extend(vals.into_iter().map(|v| (Value::None, v))),
            _ => return Err(self.err(at, "APPEND target is not a list")),
        }
        Ok(())
    }

    fn reduce(&self, at: usize, callable: Value, args: Value) -> Result<Value> {
        let Value::Tuple(args) = args else {
            return Err(self.err(at, "REDUCE arguments are not a tuple"));
        };
        if callable.is_global(&["_codecs"], "encode") {
            return match args.as_slice() {
                [Value::Str(s), Value::Str(enc)] if enc == "latin1" || enc == "latin-1" => s
                    .chars()
                    .map(|c| u8::try_from(u32::from(c)).ok())
                    .collect::<Option<Vec<u8>>>()
                    .map(Value::Bytes)
                    .ok_or_else(|| self.err(at, "latin1 text holds a character above U+00FF")),
                _ => Err(self.err(at, "unsupported _codecs.encode call")),
            };
        }
        Ok(Value::Object { callable: Box::new(callable), args, state: None, items: Vec::new() })
    }

    fn run(mut self) -> Result<Value> {
        loop {
            let at = self.pos;
            let op = *self.b.get(self.pos).ok_or_else(|| self.err(at, "file ends before STOP"))?;
            self.pos += 1;
            match op {
                b'.' => {
                    let v = self.pop(at)?;
                    return Ok(v);
                }
                b'(' => self.stack.push(Value::Mark),
                b'0' => {
                    self.pop(at)?;
                }
                b'1' => {
                    self.pop_mark(at)?;
                }
                b'2' => {
                    let v = self.top(at)?.clone();
                    self.stack.push(v);
                }
                b'N' => self.stack.push(Value::None),
                0x88 => self.stack.push(Value::Bool(true)),
                0x89 => self.stack.push(Value::Bool(false)),
                b'I' => {
                    let s = self.line_str()?;
                    let v = match s.as_str() {
                        "01" => Value::Bool(true),
                        "00" => Value::Bool(false),
                        _ => Value::Int(s.trim().parse().map_err(|_| self.err(at, format!("bad INT {s:?}")))?),
                    };
                    self.stack.push(v);
                }
                b'L' => {
                    let s = self.line_str()?;
                    let t = s.trim().trim_end_matches('L');
                    self.stack
                        .push(Value::Int(t.parse().map_err(|_| self.err(at, format!("LONG {s:?} out of range")))?));
                }
                b'F' => {
                    let s = self.line_str()?;
                    self.stack
                        .push(Value::Float(s.trim().parse().map_err(|_| self.err(at, format!("bad FLOAT {s:?}")))?));
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes"));
                    self.stack.push(Value::Float(v));
                }
                b'J' => {
                    let v = self.uint(4)? as u32 as i32;
                    self.stack.push(Value::Int(i64::from(v)));
                }
                b'K' => {
                    let v = self.uint(1)?;
                    self.stack.push(Value::Int(v as i64));
                }
                b'M' => {
                    let v = self.uint(2)?;
                    self.stack.push(Value::Int(v as i64));
                }
                0x8a | 0x8b => {
                    let n = self.uint(if op == 0x8a { 1 } else { 4 })? as usize;
                    if n > 8 {
                        return Err(self.err(at, format!("{n}-byte integer does not fit 64 bits")));
                    }
                    let s = self.take(n)?;
                    let mut v = s.iter().rev().fold(0i64, |acc, &x| (acc << 8) | i64::from(x));
                    if n > 0 && n < 8 && s[n - 1] & 0x80 != 0 {
                        v -= 1i64 << (8 * n);
                    }
                    self.stack.push(Value::Int(v));
                }
                b'S' => {
                    let l = self.line()?.to_vec();
                    let v = unquote(&l).ok_or_else(|| self.err(at, "malformed quoted STRING"))?;
                    self.stack.push(Value::Bytes(v));
                }
                b'T' => {
                    let v = self.sized(4)?;
                    self.stack.push(Value::Bytes(v));
                }
                b'U' | b'C' => {
                    let v = self.sized(1)?;
                    self.stack.push(Value::Bytes(v));
                }
                b'B' => {
                    let v = self.sized(4)?;
                    self.stack.push(Value::Bytes(v));
                }
                0x8e => {
                    let v = self.sized(8)?;
                    self.stack.push(Value::Bytes(v));
                }
                b'V' => {
                    let l = self.line()?.to_vec();
                    let s = raw_unicode_unescape(&l).ok_or_else(|| self.err(at, "malformed UNICODE escape"))?;
                    self.stack.push(Value::Str(s));
                }
                b'X' | 0x8c | 0x8d => {
                    let v = self.sized(match op {
                        b'X' => 4,
                        0x8c => 1,
                        _ => 8,
                    })?;
                    let s = self.utf8(at, v)?;
                    self.stack.push(s);
                }
                b')' => self.stack.push(Value::Tuple(Vec::new())),
                b't' => {
                    let items = self.pop_mark(at)?;
                    self.stack.push(Value::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n || self.stack[self.stack.len() - n..].contains(&Value::Mark) {
                        return Err(self.err(at, "stack underflow"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.stack.push(Value::Tuple(items));
                }
                b']' => self.stack.push(Value::List(Vec::new())),
                b'l' => {
                    let items = self.pop_mark(at)?;
                    self.stack.push(Value::List(items));
                }
                b'}' => self.stack.push(Value::Dict(Vec::new())),
                b'd' => {
                    let items = self.pop_mark(at)?;
                    self.stack.push(Value::Dict(Vec::new()));
                    self.set_items(at, items)?;
                }
                b'a' => {
                    let v = self.pop(at)?;
                    self.append(at, vec![v])?;
                }
                b'e' => {
                    let items = self.pop_mark(at)?;
                    self.append(at, items)?;
                }
                b's' => {
                    let v = self.pop(at)?;
                    let k = self.pop(at)?;
                    self.set_items(at, vec![k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark(at)?;
                    self.set_items(at, items)?;
                }
                b'c' => {
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    self.stack.push(Value::Global(module, name));
                }
                0x93 => {
                    let name = self.pop(at)?;
                    let module = self.pop(at)?;
                    match (module, name) {
                        (Value::Str(m), Value::Str(n)) => self.stack.push(Value::Global(m, n)),
                        _ => return Err(self.err(at, "STACK_GLOBAL needs two strings")),
                    }
                }
                b'R' => {
                    let args = self.pop(at)?;
                    let callable = self.pop(at)?;
                    let v = self.reduce(at, callable, args)?;
                    self.stack.push(v);
                }
                0x81 => {
                    let args = self.pop(at)?;
                    let cls = self.pop(at)?;
                    let v = self.reduce(at, cls, args)?;
                    self.stack.push(v);
                }
                b'i' => {
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    let args = self.pop_mark(at)?;
                    let v = self.reduce(at, Value::Global(module, name), Value::Tuple(args))?;
                    self.stack.push(v);
                }
                b'o' => {
                    let mut items = self.pop_mark(at)?;
                    if items.is_empty() {
                        return Err(self.err(at, "OBJ without a class"));
                    }
                    let cls = items.remove(0);
                    let v = self.reduce(at, cls, Value::Tuple(items))?;
                    self.stack.push(v);
                }
                b'b' => {
                    let state = self.pop(at)?;
                    match self.top(at)? {
                        Value::Object { state: s, .. } => *s = Some(Box::new(state)),
                        _ => return Err(self.err(at, "BUILD target is not an object")),
                    }
                }
                b'p' => {
                    let s = self.line_str()?;
                    let key = s.trim().parse().map_err(|_| self.err(at, format!("bad PUT key {s:?}")))?;
                    self.memo_put(at, key)?;
                }
                b'q' | b'r' => {
                    let key = self.uint(if op == b'q' { 1 } else { 4 })?;
                    self.memo_put(at, key)?;
                }
                0x94 => {
                    let key = self.memo.len() as u64;
                    self.memo_put(at, key)?;
                }
                b'g' => {
                    let s = self.line_str()?;
                    let key = s.trim().parse().map_err(|_| self.err(at, format!("bad GET key {s:?}")))?;
                    let v = self.memo_get(at, key)?;
                    self.stack.push(v);
                }
                b'h' | b'j' => {
                    let key = self.uint(if op == b'h' { 1 } else { 4 })?;
                    let v = self.memo_get(at, key)?;
                    self.stack.push(v);
                }
                0x80 => {
                    let proto = self.uint(1)?;
                    if proto > 5 {
                        return Err(self.err(at, format!("unsupported protocol {proto}")));
                    }
                }
                0x95 => {
                    self.take(8)?;
                }
                other => return Err(self.err(at, format!("unsupported opcode 0x{other:02x}"))),
            }
        }
    }
}

/// Decodes a Python 2 `repr` of a byte string: `'...'` or `"..."` with
/// backslash escapes (as `codecs.escape_decode` accepts them).
fn unquote(l: &[u8]) -> Option<Vec<u8>> {
    let l = l.strip_suffix(b"\r").unwrap_or(l);
    let q = *l.first()?;
    if !(q == b'\'' || q == b'"') || l.len() < 2 || *l.last()? != q {
        return None;
    }
    let s = &l[1..l.len() - 1];
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let c = *s.get(i + 1)?;
        i += 2;
        match c {
            b'\\' | b'\'' | b'"' => out.push(c),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\n' => {}
            b'x' => {
                let h = std::str::from_utf8(s.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut k = 0;
                while k < 2 && i < s.len() && (b'0'..=b'7').contains(&s[i]) {
                    v = v * 8 + u32::from(s[i] - b'0');
                    i += 1;
                    k += 1;
                }
                out.push((v & 0xFF) as u8);
            }
            _ => {
                out.push(b'\\');
                out.push(c);
            }
        }
    }
    Some(out)
}

/// Decodes Python's `raw-unicode-escape`: bytes are Latin-1 code points,
/// except the escapes `\u` + 4 hex digits and `\U` + 8 hex digits.
fn raw_unicode_unescape(l: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'\\' && matches!(l.get(i + 1), Some(b'u' | b'U')) {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            let h = std::str::from_utf8(l.get(i + 2..i + 2 + n)?).ok()?;
            out.push(char::from_u32(u32::from_str_radix(h, 16).ok()?)?);
            i += 2 + n;
        } else {
            out.push(char::from(l[i]));
            i += 1;
        }
    }
    Some(out)
}

/// A NumPy array recovered from a pickle.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NdArray {
    pub shape: Vec<usize>,
    /// Values converted to `f64` (exact for the integer sizes in these files).
    pub data: Vec<f64>,
}

const NUMPY_MULTIARRAY: &[&str] = &["numpy.core.multiarray", "numpy._core.multiarray"];

/// Recognises `numpy.core.multiarray._reconstruct(ndarray, ...)` + state.
pub(crate) fn ndarray(v: &Value) -> std::result::Result<NdArray, String> {
    let Value::Object { callable, args, state, .. } = v else {
        return Err("expected a numpy array".into());
    };
    if !callable.is_global(NUMPY_MULTIARRAY, "_reconstruct")
        || !args.first().is_some_and(|c| c.is_global(&["numpy"], "ndarray"))
    {
        return Err(format!("expected a numpy array, found {callable:?}"));
    }
    let Some(Value::Tuple(st)) = state.as_deref() else {
        return Err("numpy array without state".into());
    };
    // (version, shape, dtype, is_fortran, data); very old pickles omit version.
    let st = if st.len() == 5 { &st[1..] } else { &st[..] };
    let [Value::Tuple(shape), dtype, fortran, raw] = st else {
        return Err("numpy array state is not (shape, dtype, fortran, data)".into());
    };
    let shape: Vec<usize> = shape
        .iter()
        .map(|d| match d {
            Value::Int(x) => usize::try_from(*x).map_err(|_| format!("negative dimension {x}")),
            _ => Err("shape entry is not an integer".into()),
        })
        .collect::<std::result::Result<_, String>>()?;
    if matches!(fortran, Value::Bool(true) | Value::Int(1)) && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err("Fortran-ordered arrays are not supported".into());
    }
    let (kind, size) = dtype_code(dtype)?;
    let Value::Bytes(raw) = raw else {
        return Err("numpy array data is not a byte string (object arrays are not supported)".into());
    };
    let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or("shape overflows")?;
    if count.checked_mul(size) != Some(raw.len()) {
        return Err(format!("shape {shape:?} needs {count} x {size} bytes, data has {}", raw.len()));
    }
    let data = raw
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            match (kind, size) {
                ('f', 4) => f64::from(f32::from_le_bytes(b[..4].try_into().expect("4 bytes"))),
                ('f', 8) => f64::from_le_bytes(b),
                ('i', _) => {
                    let shift = 64 - 8 * size as u32;
                    ((i64::from_le_bytes(b) << shift) >> shift) as f64
                }
                _ => u64::from_le_bytes(b) as f64,
            }
        })
        .collect();
    Ok(NdArray { shape, data })
}

/// `(kind, itemsize)` of a pickled `numpy.dtype('f8', 0, 1)` (+ state).
fn dtype_code(v: &Value) -> std::result::Result<(char, usize), String> {
    let Value::Object { callable, args, state, .. } = v else {
        return Err("dtype is not a numpy.dtype object".into());
    };
    if !callable.is_global(&["numpy"], "dtype") {
        return Err("dtype is not a numpy.dtype object".into());
    }
    let code = args.first().and_then(Value::text).ok_or("dtype without a type code")?;
    if let Some(Value::Tuple(st)) = state.as_deref()
        && let Some(Value::Bytes(_) | Value::Str(_)) = st.get(1)
        && st[1].text() == Some(">")
    {
        return Err(format!("big-endian dtype {code} is not supported"));
    }
    let mut chars = code.chars();
    let kind = chars.next().ok_or("empty dtype code")?;
    let size: usize = chars.as_str().parse().map_err(|_| format!("dtype {code:?} is not supported"))?;
    match (kind, size) {
        ('f', 4 | 8) | ('i' | 'u', 1 | 2 | 4 | 8) => Ok((kind, size)),
        ('b', 1) => Ok(('u', 1)),
        _ => Err(format!("dtype {code:?} is not supported")),
    }
}

/// A SciPy CSR matrix recovered from a pickle.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CsrMatrix {
    pub rows: usize,
    pub cols: usize,
    pub indptr: Vec<usize>,
    pub indices: Vec<usize>,
    pub data: Vec<f64>,
}

impl CsrMatrix {
    /// Row-major dense copy.
    pub(crate) fn to_dense(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.rows * self.cols];
        for r in 0..self.rows {
            for k in self.indptr[r]..self.indptr[r + 1] {
                out[r * self.cols + self.indices[k]] += self.data[k] as f32;
            }
        }
        out
    }
}

/// Recognises a pickled `scipy.sparse.csr_matrix` and checks its structure.
pub(crate) fn csr_matrix(v: &Value) -> std::result::Result<CsrMatrix, String> {
    let Value::Object { callable, args, state, .. } = v else {
        return Err("expected a scipy.sparse.csr_matrix".into());
    };
    let csr_class = |c: &Value| matches!(c, Value::Global(m, n) if m.starts_with("scipy.sparse") && n == "csr_matrix");
    let is_csr = csr_class(callable)
        || (callable.is_global(&["copy_reg", "copyreg"], "_reconstructor") && args.first().is_some_and(csr_class));
    if !is_csr {
        return Err(format!("expected a scipy.sparse.csr_matrix, found {callable:?}"));
    }
    let Some(Value::Dict(fields)) = state.as_deref() else {
        return Err("csr_matrix without a state dict".into());
    };
    let field = |name: &str| fields.iter().find(|(k, _)| k.text() == Some(name)).map(|(_, v)| v);
    let shape = field("_shape").or_else(|| field("shape")).ok_or("csr_matrix state has no _shape")?;
    let (rows, cols) = match shape {
        Value::Tuple(t) => match t.as_slice() {
            [Value::Int(r), Value::Int(c)] if *r >= 0 && *c >= 0 => (*r as usize, *c as usize),
            _ => return Err("csr_matrix _shape is not two non-negative integers".into()),
        },
        _ => return Err("csr_matrix _shape is not a tuple".into()),
    };
    let arr = |name: &str| -> std::result::Result<Vec<f64>, String> {
        let a = ndarray(field(name).ok_or(format!("csr_matrix state has no {name}"))?)
            .map_err(|e| format!("{name}: {e}"))?;
        if a.shape.len() != 1 {
            return Err(format!("{name} is not one-dimensional"));
        }
        Ok(a.data)
    };
    let to_idx = |v: Vec<f64>, what: &str, bound: usize| -> std::result::Result<Vec<usize>, String> {
        v.into_iter()
            .enumerate()
            .map(|(i, x)| {
                if x >= 0.0 && x <= bound as f64 && x.fract() == 0.0 {
                    Ok(x as usize)
                } else {
                    Err(format!("{what}[{i}] = {x} is out of range 0..={bound}"))
                }
            })
            .collect()
    };
    let data = arr("data")?;
    let indptr = to_idx(arr("indptr")?, "indptr", data.len())?;
    let indices = to_idx(arr("indices")?, "indices", cols.saturating_sub(1))?;
    if indptr.len() != rows + 1 || indptr.first() != Some(&0) || indptr.last() != Some(&data.len()) {
        return Err(format!("indptr has {} entries for {rows} rows and {} values", indptr.len(), data.len()));
    }
    if indptr.windows(2).any(|w| w[0] > w[1]) {
        return Err("indptr decreases".into());
    }
    if indices.len() != data.len() || (cols == 0 && !data.is_empty()) {
        return Err(format!("{} indices for {} values", indices.len(), data.len()));
    }
    Ok(CsrMatrix { rows, cols, indptr, indices, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_bytes(b: &[u8]) -> Value {
        parse(Path::new("test.pkl"), b).unwrap()
    }

    /// What Python 2's cPickle (protocol 0) writes for
    /// `np.array([[1.5, 0], [0, 2]])`: raw data as an escaped `S'...'`.
    #[test]
    fn python2_protocol0_ndarray() {
        let text = b"cnumpy.core.multiarray\n_reconstruct\np0\n(cnumpy\nndarray\np1\n(I0\ntp2\nS'b'\np3\ntp4\nRp5\n\
(I1\n(I2\nI2\ntp6\ncnumpy\ndtype\np7\n(S'f8'\np8\nI0\nI1\ntp9\nRp10\n(I3\nS'<'\np11\nNNNI-1\nI-1\nI0\ntp12\nbI00\n\
S'\\x00\\x00\\x00\\x00\\x00\\x00\\xf8?\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00@'\n\
p13\ntp14\nb.";
        let a = ndarray(&parse_bytes(text)).unwrap();
        assert_eq!(a, NdArray { shape: vec![2, 2], data: vec![1.5, 0.0, 0.0, 2.0] });
    }

    /// Python 2, protocol 2: SHORT_BINSTRING data, BININT -1, TUPLE1-3.
    #[test]
    fn python2_protocol2_ndarray_and_defaultdict() {
        let mut b = b"\x80\x02cnumpy.core.multiarray\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01K\x00\x85q\x02U\x01bq\x03\x87q\x04Rq\x05".to_vec();
        b.extend(b"(K\x01K\x03\x85q\x06cnumpy\ndtype\nq\x07U\x02i4q\x08K\x00K\x01\x87q\x09Rq\x0a");
        b.extend(b"(K\x03U\x01<q\x0bNNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tq\x0cb\x89U\x0c");
        b.extend([7, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0x80]);
        b.extend(b"q\x0dtq\x0eb.");
        let a = ndarray(&parse_bytes(&b)).unwrap();
        assert_eq!(a, NdArray { shape: vec![3], data: vec![7.0, -2.0, f64::from(i32::MIN)] });

        let d = b"\x80\x02ccollections\ndefaultdict\nq\x00c__builtin__\nlist\nq\x01\x85q\x02Rq\x03(K\x00]q\x04(K\x01K\x02eK\x01]q\x05K\x00au.";
        match parse_bytes(d) {
            Value::Object { callable, items, .. } => {
                assert!(callable.is_global(&["collections"], "defaultdict"));
                assert_eq!(
                    items,
                    vec![
                        (Value::Int(0), Value::List(vec![Value::Int(1), Value::Int(2)])),
                        (Value::Int(1), Value::List(vec![Value::Int(0)])),
                    ]
                );
            }
            v => panic!("not a defaultdict: {v:?}"),
        }
    }

    #[test]
    fn scalars_and_escapes() {
        assert_eq!(parse_bytes(b"\x8a\x02\x00\xff."), Value::Int(-256));
        assert_eq!(parse_bytes(b"\x8a\x01\x7f."), Value::Int(127));
        assert_eq!(parse_bytes(b"L12345678901L\n."), Value::Int(12_345_678_901));
        assert_eq!(parse_bytes(b"S'a\\'b\\n\\101\\\\'\n."), Value::Bytes(b"a'b\nA\\".to_vec()));
        assert_eq!(parse_bytes(b"Vcaf\\u00e9 \xe9\n."), Value::Str("caf\u{e9} \u{e9}".into()));
        assert_eq!(parse_bytes(b"G?\xf8\x00\x00\x00\x00\x00\x00."), Value::Float(1.5));
        assert_eq!(parse_bytes(b"I01\n."), Value::Bool(true));
    }

    #[test]
    fn malformed_pickles_are_errors() {
        for (bytes, want) in [
            (&b""[..], "before STOP"),
            (b"(.", "stack underflow"),
            (b"a.", "stack underflow"),
            (b"g5\n.", "never stored"),
            (b"S'unterminated\n.", "malformed quoted STRING"),
            (b"\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00.", "64 bits"),
            (b"Iabc\n.", "bad INT"),
            (b"]K\x01s.", "stack underflow"),
            (b"}K\x01K\x02K\x03u.", "no MARK"),
            (b"\x80\x07.", "protocol 7"),
        ] {
            let err = parse(Path::new("t.pkl"), bytes).unwrap_err().to_string();
            assert!(err.contains(want), "{bytes:?}: {err}");
        }
    }
}
