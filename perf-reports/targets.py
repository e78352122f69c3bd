#!/usr/bin/env python3
"""Checks suite run files against the speed targets of issue #3.

Usage: python3 perf-reports/targets.py perf-reports/runs/RUN.json [...]

Per run: the smallest speed-up in each target group on the 2^24-edge
graphs (rmat_16m, uniform_16m) and the sampled block, and every case below
its target. Speed-up = peer median ms / gnnkern median ms, as in LATEST.md.
The bandwidth target (>= 50 % of triad) is not checked here: LATEST.md
lists %triad per case.
"""
import collections
import json
import sys

# (group, ops, peer, target), for the 2^24-edge graphs.
GROUPS = [
    ("copy-reduce vs DGL", {"copy_u_sum", "copy_u_mean", "copy_u_max"}, "dgl", 1.5),
    ("copy_u_sum/mean vs torch.sparse.mm", {"copy_u_sum", "copy_u_mean"}, "torch_sparse", 3.0),
    ("u_mul_e, u_dot_v, u_add_v, softmax vs DGL", {"u_mul_e_sum", "u_dot_v", "u_add_v", "edge_softmax"}, "dgl", 5.0),
]
BLOCK = ("sampled block vs DGL", "dgl", 1.0)


def check(path):
    run = json.load(open(path))
    times = collections.defaultdict(dict)
    for r in run["results"]:
        times[(r["graph"], r["op"], r["dim"], r["heads"] or 0)][r["tool"]] = r["median_ms"]
    smallest, misses = {}, []

    def consider(group, case, peer, target):
        t = times[case]
        if "gnnkern" in t and peer in t:
            ratio = t[peer] / t["gnnkern"]
            smallest[group] = min(smallest.get(group, ratio), ratio)
            if ratio < target:
                misses.append(f"{'|'.join(map(str, case))} vs {peer}: {ratio:.2f}x (< {target}x)")

    for case in sorted(times):
        graph, op = case[0], case[1]
        if graph.endswith("_16m"):
            for group, ops, peer, target in GROUPS:
                if op in ops:
                    consider(group, case, peer, target)
        elif graph.startswith("block_"):
            consider(BLOCK[0], case, BLOCK[1], BLOCK[2])
    print(f"{path} (git {run['git_rev']}, {run['started']})")
    for group, ratio in smallest.items():
        print(f"  {group}: smallest {ratio:.2f}x")
    print("  misses: " + ("; ".join(misses) if misses else "none"))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        check(p)
