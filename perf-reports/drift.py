#!/usr/bin/env python3
"""How much a case's numbers moved from one suite run to the next.

Usage: python3 perf-reports/drift.py RUN1.json RUN2.json [RUN3.json ...]

For each consecutive pair of run files and each peer, over the forward cases
on the 2^24-edge graphs (rmat_16m, uniform_16m) that both runs timed on
gnnkern and on the peer: the median and the largest factor by which
  - the speed-up (peer median ms / gnnkern median ms) changed,
  - the peer's median time changed,
  - gnnkern's median time changed.
A factor is max(a/b, b/a), so 1.00x means no change. On a quiet machine all
three stay near 1; where the speed-up moves much more than either time, the
two sides were measured in different states of the machine.
"""
import json
import math
import statistics
import sys

GRAPHS = {"rmat_16m", "uniform_16m"}
PEERS = ("dgl", "torch_sparse")


def medians(path):
    """{(tool, op, graph, dim, heads): median ms} of a run's forward results."""
    with open(path) as f:
        run = json.load(f)
    return {
        (r["tool"], r["op"], r["graph"], r["dim"], r.get("heads") or 0): r["median_ms"]
        for r in run["results"]
        if r["graph"] in GRAPHS and not r["op"].endswith("_backward")
    }


def factor(a, b):
    return math.exp(abs(math.log(a / b)))


def drift(a, b, peer):
    """[(speed-up factor, peer factor, gnnkern factor)] over the cases both runs hold."""
    out = []
    for key, ours_a in a.items():
        if key[0] != "gnnkern":
            continue
        theirs = (peer,) + key[1:]
        if key in b and theirs in a and theirs in b:
            out.append((factor(a[theirs] / ours_a, b[theirs] / b[key]),
                        factor(a[theirs], b[theirs]), factor(ours_a, b[key])))
    return out


def main(paths):
    if len(paths) < 2:
        sys.exit(__doc__)
    runs = [(p, medians(p)) for p in paths]
    for (pa, a), (pb, b) in zip(runs, runs[1:]):
        print(f"{pa} -> {pb}")
        for peer in PEERS:
            rows = drift(a, b, peer)
            if not rows:
                continue
            cols = ["speed-up", peer, "gnnkern"]
            parts = [f"{c} median {statistics.median(x[i] for x in rows):.2f}x max {max(x[i] for x in rows):.2f}x"
                     for i, c in enumerate(cols)]
            print(f"  vs {peer} ({len(rows)} cases): " + "; ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1:])
