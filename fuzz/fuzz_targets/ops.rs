//! Fuzzes the C ABI op entry points with hostile tensors, enums and handles.
//!
//! A small valid graph (int32 or int64 ids) is built from the input; its
//! handle may then be destroyed or replaced by an invented id. One entry
//! point is called — g-SpMM (with arg outputs), g-SDDMM, edge softmax, the
//! three gradients, or a segment reduction and its gradient — with
//! fuzzer-chosen enum values (valid or not) and up to six DLTensors whose
//! ndim, shape, strides, dtype, device, byte_offset, contents and NULL-ness
//! are the fuzzer's, and which may alias one another. Memory always covers
//! what a well-formed shape describes (the C contract; an aliasing tensor is
//! never larger than the buffer it aliases). Invariants: no panic status,
//! and on error no output byte changed.
#![no_main]

use arbitrary::Arbitrary;
use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLTensor};
use gnnkern::capi::enums::{RawOp, RawReduce, RawSegments, RawTarget};
use gnnkern::capi::graph::{gk_graph, gk_graph_destroy, gk_graph_from_coo_i32, gk_graph_from_coo_i64};
use gnnkern::capi::ops::{
    gk_edge_softmax, gk_edge_softmax_backward, gk_gsddmm, gk_gsddmm_backward, gk_gspmm, gk_gspmm_backward,
};
use gnnkern::capi::segment::{gk_segment_reduce, gk_segment_reduce_backward};
use gnnkern::capi::status::gk_status;
use libfuzzer_sys::fuzz_target;

const TENSORS: usize = 6;

#[derive(Arbitrary, Debug, Clone)]
struct TensorSpec {
    null: bool,
    ndim: i8,
    dims: [i8; 4],
    huge_dim: bool,
    null_shape: bool,
    strides: Option<[i8; 4]>,
    dtype: u8,
    device: u8,
    byte_offset: u8,
    /// Small integers (ids, offsets, lengths in -1..=5) instead of floats.
    small_ints: bool,
    /// Point this tensor at another one's buffer (index mod TENSORS).
    alias: Option<u8>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    nodes: u8,
    edges: Vec<(u8, u8)>,
    wide: bool,
    /// 0, 1: live handle; 2: destroyed before the call; 3: never created.
    handle: u8,
    kind: u8,
    op: i8,
    reduce: i8,
    lhs_target: i8,
    rhs_target: i8,
    tensors: [TensorSpec; TENSORS],
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
const MAX_WORDS: i64 = 1 << 14;

fn numel(shape: &[i64]) -> Option<i64> {
    shape.iter().try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) })
}

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
        let words = match numel(&shape) {
            Some(n) if n <= MAX_WORDS => n as usize,
            _ => 0,
        };
        let buf = (0..words + SLACK_WORDS)
            .map(|i| {
                if spec.small_ints {
                    // -1..=5 as int64; as int32 pairs: (value, 0) or (-1, -1).
                    ((i as i64 + i64::from(seed)) % 7 - 1) as u64
                } else {
                    let a = f32::from(seed) * 0.25 - (i % 13) as f32;
                    let b = (i % 5) as f32 - 2.5;
                    u64::from(a.to_bits()) | (u64::from(b.to_bits()) << 32)
                }
            })
            .collect();
        let strides = spec.strides.map(|s| s[..dims].iter().map(|&v| i64::from(v)).collect());
        Owned { buf, shape, strides, spec: spec.clone(), ndim }
    }

    /// Whether the memory covers the described tensor (else the call would
    /// be outside the C contract and is skipped). A tensor the library must
    /// reject before reading (negative extent, element count or byte size
    /// overflowing) is in contract whatever its memory.
    fn in_contract(&self) -> bool {
        match numel(&self.shape) {
            None => true,
            Some(n) => n <= MAX_WORDS || self.ndim < 1 || self.spec.null_shape || n > isize::MAX as i64 / 8,
        }
    }

    fn dl(&mut self, alias: Option<(*mut u64, usize)>) -> DLTensor {
        let dtype = match self.spec.dtype % 7 {
            0 | 1 => DLDataType { code: DLDataTypeCode::FLOAT, bits: 32, lanes: 1 },
            2 => DLDataType { code: DLDataTypeCode::FLOAT, bits: 64, lanes: 1 },
            3 => DLDataType { code: DLDataTypeCode::INT, bits: 32, lanes: 1 },
            4 => DLDataType { code: DLDataTypeCode::INT, bits: 64, lanes: 1 },
            5 => DLDataType { code: DLDataTypeCode::UINT, bits: 32, lanes: 1 },
            _ => DLDataType { code: DLDataTypeCode::FLOAT, bits: 32, lanes: 2 },
        };
        let device_type = if self.spec.device % 4 == 3 { DLDeviceType::CUDA } else { DLDeviceType::CPU };
        let data = match alias {
            Some((p, len)) if self.buf.len() <= len => p,
            _ => self.buf.as_mut_ptr(),
        };
        DLTensor {
            data: data.cast(),
            device: DLDevice { device_type, device_id: 0 },
            ndim: self.ndim,
            dtype,
            shape: if self.spec.null_shape { std::ptr::null_mut() } else { self.shape.as_mut_ptr() },
            strides: self.strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: u64::from(self.spec.byte_offset % 16),
        }
    }
}

/// Builds the input's graph (ids reduced modulo the node count, so valid).
fn graph(input: &Input) -> gk_graph {
    let n = i64::from(input.nodes % 9);
    let (src, dst): (Vec<i64>, Vec<i64>) = if n == 0 {
        (vec![], vec![])
    } else {
        input.edges.iter().take(64).map(|&(u, v)| (i64::from(u) % n, i64::from(v) % n)).unzip()
    };
    let mut g = gk_graph { id: 0 };
    // SAFETY: arrays hold `src.len()` ids; `g` is writable.
    let s = unsafe {
        if input.wide {
            gk_graph_from_coo_i64(n, n, src.len() as i64, src.as_ptr(), dst.as_ptr(), &mut g)
        } else {
            let narrow = |v: &[i64]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
            let (s32, d32) = (narrow(&src), narrow(&dst));
            gk_graph_from_coo_i32(n, n, src.len() as i64, s32.as_ptr(), d32.as_ptr(), &mut g)
        }
    };
    assert_eq!(s, gk_status::GK_OK);
    g
}

fuzz_target!(|input: Input| {
    let live = graph(&input);
    let g = match input.handle % 4 {
        2 => {
            assert_eq!(gk_graph_destroy(live), gk_status::GK_OK);
            live
        }
        3 => gk_graph { id: u64::MAX - u64::from(input.fill) },
        _ => live,
    };
    let destroy = || {
        if input.handle % 4 != 2 {
            assert_eq!(gk_graph_destroy(live), gk_status::GK_OK);
        }
    };

    let mut owned: Vec<Owned> =
        input.tensors.iter().enumerate().map(|(i, s)| Owned::new(s, input.fill.wrapping_add(i as u8))).collect();
    if !owned.iter().all(Owned::in_contract) {
        destroy();
        return;
    }
    let bufs: Vec<(*mut u64, usize)> = owned.iter_mut().map(|o| (o.buf.as_mut_ptr(), o.buf.len())).collect();
    let mut dl: Vec<DLTensor> = owned
        .iter_mut()
        .enumerate()
        .map(|(i, o)| {
            let alias = o.spec.alias.map(|a| usize::from(a) % TENSORS).filter(|&a| a != i).map(|a| bufs[a]);
            o.dl(alias)
        })
        .collect();
    let ptrs: Vec<*mut DLTensor> = dl
        .iter_mut()
        .zip(&input.tensors)
        .map(|(t, spec)| if spec.null { std::ptr::null_mut() } else { t as *mut DLTensor })
        .collect();
    let before: Vec<Vec<u64>> = owned.iter().map(|o| o.buf.clone()).collect();
    let (op, reduce) = (RawOp(i32::from(input.op % 9)), RawReduce(i32::from(input.reduce % 6)));
    let (lt, rt) = (RawTarget(i32::from(input.lhs_target % 4)), RawTarget(i32::from(input.rhs_target % 4)));
    let segments = RawSegments(i32::from(input.lhs_target % 3));
    let [t0, t1, t2, t3, t4, t5] = [ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5]];
    // SAFETY: every tensor's memory covers its well-formed shape (checked by
    // `in_contract`) plus slack for byte_offset; aliasing is the library's
    // to reject. Outputs: gspmm t2..=t4, gsddmm t2, softmax t1, gradients
    // t3/t4 (softmax t2), segment t2/t3 (backward t2).
    let status = unsafe {
        match input.kind % 8 {
            0 => gk_gspmm(g, op, lt, rt, reduce, t0, t1, t2, t3, t4),
            1 => gk_gsddmm(g, op, lt, rt, t0, t1, t2),
            2 => gk_edge_softmax(g, t0, t1),
            3 => gk_gspmm_backward(g, op, lt, rt, reduce, t0, t1, t2, t5, t3, t4),
            4 => gk_gsddmm_backward(g, op, lt, rt, t0, t1, t2, t3, t4),
            5 => gk_edge_softmax_backward(g, t0, t1, t2),
            6 => gk_segment_reduce(reduce, segments, t0, t1, t2, t3),
            _ => gk_segment_reduce_backward(reduce, segments, t0, t1, t3, t2),
        }
    };
    assert_ne!(status, gk_status::GK_ERROR_PANIC, "{}", unsafe {
        // SAFETY: the message is a valid C string owned by this thread.
        std::ffi::CStr::from_ptr(gnnkern::capi::status::gk_last_error_message()).to_string_lossy()
    });
    if input.handle % 4 >= 2 && input.kind % 8 < 6 {
        assert_eq!(status, gk_status::GK_ERROR_INVALID_HANDLE, "a dead handle was accepted");
    }
    if status != gk_status::GK_OK {
        // Inputs are never written either, so every buffer must be intact.
        for (i, (o, b)) in owned.iter().zip(&before).enumerate() {
            assert!(o.buf == *b, "a failed call ({status:?}) changed the buffer of tensor {i}");
        }
    }
    destroy();
});
