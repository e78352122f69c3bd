//! Fuzzes the C ABI op entry points with hostile tensors and enums.
//!
//! A small valid graph is built from the input; then one op is called with
//! fuzzer-chosen enum values (valid or not) and DLTensors whose ndim, shape,
//! strides, dtype, device, byte_offset and NULL-ness are the fuzzer's, and
//! whose outputs may alias inputs. Memory always covers what a well-formed
//! shape describes (the C contract; an aliasing tensor is never larger than
//! the buffer it aliases). Invariants: no panic status, and on error no
//! output byte changed.
#![no_main]

use arbitrary::Arbitrary;
use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLTensor};
use gnnkern::capi::enums::{RawOp, RawReduce, RawTarget};
use gnnkern::capi::graph::{gk_graph, gk_graph_destroy, gk_graph_from_coo_i32};
use gnnkern::capi::ops::{gk_edge_softmax, gk_gsddmm, gk_gspmm};
use gnnkern::capi::status::gk_status;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug, Clone)]
struct TensorSpec {
    null: bool,
    ndim: i8,
    dims: [i8; 4],
    huge_dim: bool,
    strides: Option<[i8; 4]>,
    dtype: u8,
    device: u8,
    byte_offset: u8,
    /// Point this tensor at the output buffer (aliasing).
    alias_out: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    nodes: u8,
    edges: Vec<(u8, u8)>,
    kind: u8,
    op: i8,
    reduce: i8,
    lhs_target: i8,
    rhs_target: i8,
    lhs: TensorSpec,
    rhs: TensorSpec,
    out: TensorSpec,
    fill: u8,
}

/// Owned memory and metadata behind one DLTensor.
struct Owned {
    buf: Vec<u64>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    spec: TensorSpec,
    ndim: i32,
}

const SLACK_WORDS: usize = 8;

impl Owned {
    fn new(spec: &TensorSpec, seed: u8) -> Owned {
        let ndim = i32::from(spec.ndim.rem_euclid(6)) - 1; // -1..=4
        let dims = ndim.clamp(0, 4) as usize;
        let mut shape: Vec<i64> = spec.dims[..dims].iter().map(|&d| i64::from(d % 12)).collect();
        if spec.huge_dim && dims > 0 {
            shape[0] = i64::MAX / 3;
        }
        // Memory for what a well-formed shape describes (8-byte elements
        // cover every dtype), plus slack for byte_offset.
        let numel = shape.iter().try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) });
        let words = match numel {
            Some(n) if n <= 1 << 14 => n as usize,
            _ => 0,
        };
        let buf = (0..words + SLACK_WORDS).map(|i| u64::from(seed).wrapping_mul(0x9e37_79b9) ^ i as u64).collect();
        let strides = spec.strides.map(|s| s[..dims].iter().map(|&v| i64::from(v)).collect());
        Owned { buf, shape, strides, spec: spec.clone(), ndim }
    }

    /// Whether the memory covers the described tensor (else the call would
    /// be outside the C contract and is skipped).
    fn in_contract(&self) -> bool {
        let Some(numel) = self.shape.iter().try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) }) else {
            return true; // rejected before any read
        };
        numel <= 1 << 14 || self.ndim < 1
    }

    fn dl(&mut self, out_buf: Option<(*mut u64, usize)>) -> DLTensor {
        let dtype = match self.spec.dtype % 5 {
            0 | 1 => DLDataType { code: DLDataTypeCode::FLOAT, bits: 32, lanes: 1 },
            2 => DLDataType { code: DLDataTypeCode::FLOAT, bits: 64, lanes: 1 },
            3 => DLDataType { code: DLDataTypeCode::INT, bits: 32, lanes: 1 },
            _ => DLDataType { code: DLDataTypeCode::FLOAT, bits: 32, lanes: 2 },
        };
        let device_type = if self.spec.device % 4 == 3 { DLDeviceType::CUDA } else { DLDeviceType::CPU };
        let data = match out_buf {
            Some((p, len)) if self.spec.alias_out && self.buf.len() <= len => p,
            _ => self.buf.as_mut_ptr(),
        };
        DLTensor {
            data: data.cast(),
            device: DLDevice { device_type, device_id: 0 },
            ndim: self.ndim,
            dtype,
            shape: self.shape.as_mut_ptr(),
            strides: self.strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: u64::from(self.spec.byte_offset % 16),
        }
    }
}

fuzz_target!(|input: Input| {
    let n = i64::from(input.nodes % 9);
    let (src, dst): (Vec<i32>, Vec<i32>) = if n == 0 {
        (vec![], vec![])
    } else {
        input.edges.iter().take(64).map(|&(u, v)| (i32::from(u) % n as i32, i32::from(v) % n as i32)).unzip()
    };
    let mut g = gk_graph { id: 0 };
    // SAFETY: arrays hold `src.len()` ids; `g` is writable.
    let s = unsafe { gk_graph_from_coo_i32(n, n, src.len() as i64, src.as_ptr(), dst.as_ptr(), &mut g) };
    assert_eq!(s, gk_status::GK_OK);

    let mut out = Owned::new(&input.out, input.fill);
    let mut lhs = Owned::new(&input.lhs, input.fill.wrapping_add(1));
    let mut rhs = Owned::new(&input.rhs, input.fill.wrapping_add(2));
    if ![&out, &lhs, &rhs].iter().all(|o| o.in_contract()) {
        assert_eq!(gk_graph_destroy(g), gk_status::GK_OK);
        return;
    }
    let out_ptr = (out.buf.as_mut_ptr(), out.buf.len());
    let mut t_out = out.dl(None);
    let mut t_lhs = lhs.dl(Some(out_ptr));
    let mut t_rhs = rhs.dl(Some(out_ptr));
    let ptr = |spec: &TensorSpec, t: &mut DLTensor| if spec.null { std::ptr::null_mut() } else { t as *mut DLTensor };
    let (p_out, p_lhs, p_rhs) = (ptr(&input.out, &mut t_out), ptr(&input.lhs, &mut t_lhs), ptr(&input.rhs, &mut t_rhs));
    let before = out.buf.clone();
    let (op, reduce) = (RawOp(i32::from(input.op % 9)), RawReduce(i32::from(input.reduce % 6)));
    let (lt, rt) = (RawTarget(i32::from(input.lhs_target % 4)), RawTarget(i32::from(input.rhs_target % 4)));
    // SAFETY: every tensor's memory covers its well-formed shape (checked by
    // `in_contract`) plus slack for byte_offset; aliasing is the library's to reject.
    let status = unsafe {
        match input.kind % 3 {
            0 => gk_gspmm(g, op, lt, rt, reduce, p_lhs, p_rhs, p_out, std::ptr::null_mut(), std::ptr::null_mut()),
            1 => gk_gsddmm(g, op, lt, rt, p_lhs, p_rhs, p_out),
            _ => gk_edge_softmax(g, p_lhs, p_out),
        }
    };
    assert_ne!(status, gk_status::GK_ERROR_PANIC, "{}", unsafe {
        // SAFETY: the message is a valid C string owned by this thread.
        std::ffi::CStr::from_ptr(gnnkern::capi::status::gk_last_error_message()).to_string_lossy()
    });
    if status != gk_status::GK_OK {
        assert!(out.buf == before, "a failed call ({status:?}) changed its output");
    }
    assert_eq!(gk_graph_destroy(g), gk_status::GK_OK);
});
