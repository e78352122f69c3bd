#!/usr/bin/env python3
"""How closely gnnkern's output checksums agree with the peers' in suite run files.

Usage: python3 perf-reports/agreement.py [--rtol R] RUN.json [...]
       python3 perf-reports/agreement.py perf-reports/runs/*.json

Pairs every gnnkern result with every peer result of the same case (graph,
op, d, heads, threads) in the same run file, and checks both checksums the
suite records: the sum of the outputs and the sum of their absolute values.
A pair agrees when each differs by at most R times the larger sum of
absolute values (default 1e-4). The suite's own verdict in LATEST.md
(`bench-suite/src/compare.rs`, `CHECKSUM_RTOL`) uses the looser 1e-3; the
default here is stricter, to show how far inside that verdict the runs lie.

Prints the pairs and the pairs that agree per peer, the largest relative
difference seen, and each pair that does not agree. Exits 1 if any does not.
"""
import argparse
import collections
import json
import sys


def case(r):
    return (r["graph"], r["op"], r["dim"], r.get("heads") or 0, r["threads"])


def relative_difference(a, b):
    """The larger of the two checksums' differences, over the larger sum of absolute values."""
    scale = max(a["checksum_abs"], b["checksum_abs"], 1e-30)
    return max(abs(a["checksum"] - b["checksum"]), abs(a["checksum_abs"] - b["checksum_abs"])) / scale


def pairs(path):
    """[(peer, case, relative difference)] of one run file."""
    with open(path) as f:
        results = json.load(f)["results"]
    ours = collections.defaultdict(list)
    for r in results:
        if r["tool"] == "gnnkern":
            ours[case(r)].append(r)
    return [(r["tool"], case(r), relative_difference(o, r))
            for r in results if r["tool"] != "gnnkern"
            for o in ours.get(case(r), [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args()
    total, agree = collections.Counter(), collections.Counter()
    worst, bad = 0.0, []
    for path in args.runs:
        for peer, key, rel in pairs(path):
            total[peer] += 1
            worst = max(worst, rel)
            if rel <= args.rtol:
                agree[peer] += 1
            else:
                bad.append((path, peer, key, rel))
    print(f"{len(args.runs)} run files, {sum(total.values())} gnnkern/peer pairs, rtol {args.rtol:g}")
    for peer in sorted(total):
        print(f"  {peer}: {agree[peer]} of {total[peer]} agree")
    print(f"  largest relative difference: {worst:.2e}")
    for path, peer, key, rel in bad:
        print(f"  differs: {path} {peer} {'|'.join(map(str, key))}: {rel:.2e}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
