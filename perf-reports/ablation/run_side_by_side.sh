#!/bin/sh
# Side-by-side dev run: gnnkern-simd kernels vs DGL 2.1 on the same generated
# graphs, 2 threads, then the ablations. Usage: run_side_by_side.sh OUTDIR
set -e
OUT=${1:-perf-reports/ablation}
B=${CARGO_TARGET_DIR:-target}/release/examples/kernel_bench
PY=/work/venvs/peers/bin/python
for G in rmat uniform; do
  $B --graph $G --scale 20 --edge-factor 16 --d 32,128 --reps 3 --dump /tmp/gk/$G > $OUT/$G.gnnkern.tsv
  $PY perf-reports/ablation/dgl_side_by_side.py /tmp/gk/$G --d 32,128 --reps 3 2>/dev/null > $OUT/$G.dgl.tsv
done
$B --graph rmat --scale 20 --edge-factor 16 --d 32,128 --reps 3 --ops none --ablate > $OUT/rmat.ablation.tsv 2> $OUT/rmat.ablation.log
