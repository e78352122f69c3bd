"""Times DGL 2.1's CPU kernels on a graph dumped by `kernel_bench --dump DIR`.

    /work/venvs/peers/bin/python perf-reports/ablation/dgl_side_by_side.py DIR --d 32,128 --reps 7

Prints TSV lines (graph dir, op, d, variant, median ms) matching the cases of
simd/examples/kernel_bench.rs: the same edges, the same feature sizes, 2 threads.
"""
import argparse
import statistics
import sys
import time

import numpy as np
import torch
import dgl
import dgl.ops as F
from dgl.nn.functional import edge_softmax

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--d", default="32,128")
p.add_argument("--reps", type=int, default=7)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--ops", default="spmm,sddmm,softmax")
p.add_argument("--only", default="", help="comma list of op names to time (default: all)")
a = p.parse_args()
torch.set_num_threads(a.threads)

src = torch.from_numpy(np.fromfile(f"{a.dir}/src.bin", dtype=np.int32).astype(np.int64))
dst = torch.from_numpy(np.fromfile(f"{a.dir}/dst.bin", dtype=np.int32).astype(np.int64))
n = int(max(src.max(), dst.max())) + 1
n = 1 << (n - 1).bit_length()
g = dgl.graph((src, dst), num_nodes=n)
g = g.formats(["coo", "csr", "csc"])
g.create_formats_()
e = g.num_edges()


def bench(op, d, variant, f):
    """Median wall ms and process CPU ms (the machine is oversubscribed)."""
    if a.only and op not in a.only.split(","):
        return
    f()
    ts, cs = [], []
    for _ in range(a.reps):
        t, c = time.perf_counter(), time.process_time()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
        cs.append((time.process_time() - c) * 1e3)
    print(f"{a.dir}\t{op}\t{d}\t{variant}\t{statistics.median(ts):.2f}\t{statistics.median(cs):.2f}", flush=True)


gen = torch.Generator().manual_seed(7)
w = torch.rand(e, 4, generator=gen)
for d in [int(x) for x in a.d.split(",")]:
    x = torch.rand(n, d, generator=gen) - 0.5
    if "spmm" in a.ops:
        bench("copy_u_sum", d, "dgl", lambda: F.copy_u_sum(g, x))
        bench("copy_u_mean", d, "dgl", lambda: F.copy_u_mean(g, x))
        bench("copy_u_max", d, "dgl", lambda: F.copy_u_max(g, x))
        w1 = w[:, :1].contiguous()
        bench("u_mul_e_sum", d, "w[E,1]", lambda: F.u_mul_e_sum(g, x, w1))
        xh = x.view(n, 4, d // 4)
        wh = w.view(e, 4, 1)
        bench("u_mul_e_sum", d, "4 heads", lambda: F.u_mul_e_sum(g, xh, wh))
        if d == 32:
            idx = torch.stack([dst, src])
            adj = torch.sparse_coo_tensor(idx, torch.ones(e), (n, n)).coalesce().to_sparse_csr()
            bench("copy_u_sum", d, "torch.sparse.mm", lambda: torch.sparse.mm(adj, x))
    if "sddmm" in a.ops:
        bench("u_dot_v", d, "dgl", lambda: F.u_dot_v(g, x, x))
        if d <= 32:
            bench("u_add_v", d, "dgl", lambda: F.u_add_v(g, x, x))
    del x
if "softmax" in a.ops:
    l1 = (w[:, :1] * 8).contiguous()
    bench("edge_softmax", 1, "dgl", lambda: edge_softmax(g, l1))
    l4 = (w * 8).contiguous()
    bench("edge_softmax", 4, "dgl", lambda: edge_softmax(g, l4))
