//! Device-level API checks that need an adapter but not the core crate.
//! Without an adapter they print a loud SKIPPED line, unless `CI=true` or
//! `GNNKERN_REQUIRE_GPU=1` makes that a failure. The op-by-op comparisons
//! against the reference live in the root crate's `tests/gpu_backend.rs`.

use gnnkern_gpu::{GpuContext, GpuError, GpuGraph};
use gnnkern_simd::layout::CsrView;

fn context() -> Option<GpuContext> {
    match GpuContext::from_env() {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            let required = std::env::var("CI").is_ok_and(|v| v == "true")
                || std::env::var("GNNKERN_REQUIRE_GPU").is_ok_and(|v| v == "1");
            assert!(!required, "CI=true / GNNKERN_REQUIRE_GPU=1 but no GPU adapter: {e}");
            eprintln!("\n*** SKIPPED: no GPU adapter, gnnkern-gpu device tests did not run: {e} ***\n");
            None
        }
    }
}

#[test]
fn ids_at_or_beyond_2_pow_31_are_unsupported() {
    let Some(ctx) = context() else { return };
    let big = 1i64 << 31;
    let (indptr, indices, eids) = ([0i64, 1], [big], [0i64]);
    // SAFETY: one row with one entry; its column is below num_cols = 2^31 + 1,
    // the edge ids are the permutation [0] and a one-entry row is sorted.
    let csr = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, big as usize + 1) };
    match GpuGraph::upload(&ctx, csr, &[big], &[0]) {
        Err(GpuError::Unsupported(what)) => assert!(what.contains("2^31"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn upload_download_round_trip_and_adapter_summary() {
    let Some(ctx) = context() else { return };
    let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 7.0).collect();
    let t = ctx.upload(&data).unwrap();
    assert_eq!(t.len(), 1000);
    assert_eq!(ctx.download(&t).unwrap(), data);
    assert!(!ctx.adapter().name.is_empty());
    let empty = ctx.upload(&[]).unwrap();
    assert!(ctx.download(&empty).unwrap().is_empty());
}
