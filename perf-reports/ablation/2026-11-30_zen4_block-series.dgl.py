"""DGL 2.1's copy_u_sum / copy_u_mean on the suite's sampled block, 3000 calls per op at 2 threads.

Run from the repository root with the peers venv (bench-suite/peers/setup.sh):
    python perf-reports/ablation/2026-11-30_zen4_block-series.dgl.py          # section B: 100-call window medians
    python perf-reports/ablation/2026-11-30_zen4_block-series.dgl.py 0 100 1000   # section C: a pause (us) before each call
Data: perf-reports/ablation/2026-11-30_zen4_block-reps.tsv.
"""
import sys
import time

import dgl
import numpy as np
import torch

torch.set_num_threads(2)
d = "target/bench-graphs/block_1024x25"
src = np.fromfile(d + "/src.bin", dtype=np.int32)
dst = np.fromfile(d + "/dst.bin", dtype=np.int32)
g = dgl.create_block((torch.from_numpy(src).long(), torch.from_numpy(dst).long()), num_src_nodes=17167, num_dst_nodes=1024)
x = torch.rand(17167, 128)


def series(op, gap_us=0):
    f = getattr(dgl.ops, op)
    t = []
    for _ in range(3000):
        if gap_us:
            time.sleep(gap_us * 1e-6)
        s = time.perf_counter()
        f(g, x)
        t.append((time.perf_counter() - s) * 1e3)
    return t


if len(sys.argv) > 1:
    for gap in map(int, sys.argv[1:]):
        s = np.sort(series("copy_u_sum", gap)[20:])
        print("dgl copy_u_sum gap %5dus p10 %.3f p50 %.3f p90 %.3f" % (gap, s[len(s) // 10], s[len(s) // 2], s[len(s) * 9 // 10]))
else:
    for op in ["copy_u_sum", "copy_u_mean"]:
        t = series(op)
        windows = [np.median(t[i : i + 100]) for i in range(0, 3000, 100)]
        print(op, "median %.3f" % np.median(t[20:]), " ".join("%.3f" % v for v in windows))
