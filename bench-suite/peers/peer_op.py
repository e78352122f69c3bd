#!/usr/bin/env python3
"""Time one gnnkern benchmark op on a peer library and print gnnkern's JSON schema.

Peers:
  dgl           DGL 2.1 CPU kernels: dgl.ops.<name> (gspmm/gsddmm), dgl.ops.edge_softmax.
  pyg           PyG-style gather-scatter: torch.index_select to gather operand rows per
                edge, the message in torch, torch_geometric.utils.scatter to reduce;
                torch_geometric.utils.softmax for edge_softmax.
  torch_sparse  torch.sparse.mm on a CSR matrix (MKL): copy_u_sum/mean and u_mul_e_sum/mean
                with a scalar edge weight only.

Gradient ops (`<forward>_backward`, e.g. copy_u_max_backward) run the peer's forward once,
untimed, with autograd on, and time `torch.autograd.grad` of its output against the seeded output
gradient: the peer's own backward kernels (DGL's gspmm/gsddmm backward, PyG's scatter backward).
The output is every operand gradient, flattened and concatenated lhs first, as gnnkern writes it
(torch_sparse: through torch.sparse.mm's autograd, for the ops its forward covers).
DGL 2.1's max/min backward sends the gradient of a destination without in-edges to source node 0
(its arg output's default); the DGL peer zeroes those output-gradient rows so checksums compare.

Usage (the same flags as `gnnkern-bench op`):
  peer_op.py --peer dgl --graph DIR_OR_SPEC --op u_mul_e_sum --dim 128 [--heads 4] \
             --threads 2 --reps 10 --json
  peer_op.py --peer dgl --serve --threads 2         (used by `gnnkern-bench suite --peers`)

With --serve the script reads one JSON request per line on stdin, answers each with one JSON
line, and exits at end of input:
  CASE ({graph, graph_name, op, dim, heads, threads, reps, warmup})  times the case whole: warmup
      calls, then reps timed ones; answers the result.
  {"prepare": CASE}               makes the case's inputs and function, runs its warmup calls;
                                  answers {"prepared": KEY}. It replaces any prepared case.
  {"calls": N, "untimed": U, "warm_ms": W}
                                  untimed calls of the prepared case, at least U and more until
                                  W ms have passed, then N timed ones; answers {"times_ms": [...]}.
  {"finish": true}                answers the result over every timed call and drops the case.
`gnnkern-bench suite --peers` prepares a case on gnnkern and on each peer, then alternates slices
of calls between them. Torch is imported once and the last graph stays loaded. --threads sets
OMP_NUM_THREADS (the most any case asks for). Any request may be answered with a skip (below).

The graph is a directory in gnnkern's dataset format (meta.json, src.bin, dst.bin; a sampled
block carries num_dst in meta.json); a generator spec is first written with
`gnnkern-bench gen` (binary from GNNKERN_BENCH_BIN, PATH, or target/release).
Operands follow gnnkern's layout and seeded streams (bench-suite/src/opspec.rs and rng.rs), so
checksums are comparable with gnnkern's: `seeded_uniform` reproduces rng.rs bit for bit.
FLOPs and model bytes use the formulas of bench-suite/src/model.rs (docs/BENCHMARKS.md); the
suite recomputes them in Rust for the run file. An op a peer has no form of prints
{"case": KEY, "skipped": REASON} and exits 3 (single mode) or continues (--serve).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
REDUCERS = ("sum", "max", "min", "mean")
BINARY_OPS = ("add", "sub", "mul", "div", "dot")
LHS_SEED, RHS_SEED, GRAD_SEED = 1, 2, 3
MEMORY_SHARE = 0.6


class Unsupported(Exception):
    """The peer has no form of this op."""


# ---------------------------------------------------------------- inputs (mirror of rng.rs)

def seeded_uniform(seed, n, lo, hi):
    """Element i = lo + (hi - lo) * (splitmix64(seed + (i + 1) * GOLDEN) >> 40) * 2^-24, in f32."""
    out = np.empty(n, dtype=np.float32)
    lo32, span = np.float32(lo), np.float32(hi) - np.float32(lo)
    chunk = 1 << 22
    with np.errstate(over="ignore"):
        for start in range(0, n, chunk):
            i = np.arange(start + 1, min(n, start + chunk) + 1, dtype=np.uint64)
            z = np.uint64(seed) + i * GOLDEN
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            unit = (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
            out[start:start + len(i)] = lo32 + span * unit
    return out


# ---------------------------------------------------------------- op names and shapes (mirror of opspec.rs)

def gradient_of(name):
    """The forward op of a g-SpMM/g-SDDMM gradient op `<forward>_backward`, else None."""
    if name.endswith("_backward") and name != "edge_softmax_backward":
        return name[: -len("_backward")]
    return None


def parse_op(name):
    """-> (family, op, lhs, rhs, reduce); family in spmm, sddmm, edge_softmax, edge_softmax_backward,
    spmm_backward, sddmm_backward (a gradient op carries its forward's op, targets and reducer)."""
    if name in ("edge_softmax", "edge_softmax_backward"):
        return name, None, None, None, None
    forward = gradient_of(name)
    if forward is not None:
        family, op, lhs, rhs, reduce = parse_op(forward)
        if family in ("spmm", "sddmm"):
            return family + "_backward", op, lhs, rhs, reduce
        raise SystemExit(f"error: unknown op `{name}`")
    parts = name.split("_")

    def message(p):
        if len(p) == 2 and p[0] == "copy" and p[1] in "uev":
            return "copy", p[1], None
        if len(p) == 3 and p[0] in "uev" and p[2] in "uev" and p[1] in BINARY_OPS:
            return p[1], p[0], p[2]
        return None

    if parts[-1] in REDUCERS and message(parts[:-1]):
        op, lhs, rhs = message(parts[:-1])
        return "spmm", op, lhs, rhs, parts[-1]
    if message(parts):
        op, lhs, rhs = message(parts)
        return "sddmm", op, lhs, rhs, None
    raise SystemExit(f"error: unknown op `{name}`")


def shapes(name, n_src, n_dst, n_e, dim, heads):
    """Operand and output shapes of gnnkern's benchmark layout (see opspec.rs)."""
    forward = gradient_of(name)
    if forward is not None:
        s = shapes(forward, n_src, n_dst, n_e, dim, heads)
        grads = sum(int(np.prod(x[1])) for x in (s["lhs"], s["rhs"]) if x)
        return dict(lhs=s["lhs"], rhs=s["rhs"], grad_out=(None, s["out"], (-1.0, 1.0)), out=[grads], k=s["k"])
    family, op, lt, rt, _ = parse_op(name)
    node = [heads, dim // heads] if heads else [dim]
    rows = {"u": n_src, "v": n_dst, "e": n_e}
    if family.startswith("edge_softmax"):
        feat = [heads, 1] if heads else [dim]
        both = family == "edge_softmax_backward"
        return dict(lhs=("e", [n_e] + feat, (-1.0, 1.0)),
                    rhs=("e", [n_e] + feat, (-1.0, 1.0)) if both else None,
                    out=[n_e] + feat, k=1)

    def feat(t, other):
        if t in "uv":
            return node
        if heads:
            return [heads, 1]
        if other in ("u", "v") and op != "dot":
            return [1]
        return [dim]

    if op == "copy":
        lf, rf = feat(lt, None), None
    else:
        lf, rf = feat(lt, rt), feat(rt, lt)
    out_feat, k = broadcast(lf, rf, op == "dot")
    out_rows = n_dst if family == "spmm" else n_e
    return dict(lhs=(lt, [rows[lt]] + lf, (-1.0, 1.0)),
                rhs=(rt, [rows[rt]] + rf, (0.5, 1.5) if op == "div" else (-1.0, 1.0)) if rf else None,
                out=[out_rows] + out_feat, k=k)


def broadcast(a, b, dot):
    if b is None:
        return list(a), 1
    n = max(len(a), len(b))
    a2, b2 = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a2, b2):
        if x != y and 1 not in (x, y):
            raise SystemExit(f"error: cannot broadcast {a} with {b}")
        out.append(max(x, y))
    if dot:
        return out[:-1] + [1], out[-1]
    return out, 1


def cost(name, n_src, n_dst, n_e, s, idx_bytes=4):
    """(flops, model_bytes) as in model.rs."""
    family, op, lt, rt, reduce = parse_op(name)
    if family in ("spmm_backward", "sddmm_backward"):
        grads = sum(1 for x in (s["lhs"], s["rhs"]) if x)
        o_fwd = int(np.prod(s["grad_out"][1][1:]))
        phi = 0 if op == "copy" else (2 * s["k"] * o_fwd if op == "dot" else o_fwd)
        operands = sum(4 * int(np.prod(x[1])) for x in (s["lhs"], s["rhs"]) if x)
        grad_out = 4 * int(np.prod(s["grad_out"][1]))
        n = max(n_src, n_dst)
        return (grads * n_e * (phi + o_fwd),
                grads * (n + 1 + 2 * n_e) * idx_bytes + operands + grad_out + 4 * int(np.prod(s["out"])))
    o = int(np.prod(s["out"][1:]))
    operands = sum(4 * int(np.prod(x[1])) for x in (s["lhs"], s["rhs"]) if x)
    out_bytes = 4 * int(np.prod(s["out"]))
    phi = 0 if op == "copy" else (2 * s["k"] * o if op == "dot" else o)
    targets = [x[0] for x in (s["lhs"], s["rhs"]) if x]
    if family == "spmm":
        flops = n_e * (phi + o) + (n_dst * o if reduce == "mean" else 0)
        edge_ids = n_e * idx_bytes if "e" in targets else 0
        return flops, (n_dst + 1 + n_e) * idx_bytes + edge_ids + operands + out_bytes
    if family == "sddmm":
        node_targets = []
        for t in targets:
            if t != "e" and (not node_targets or node_targets[-1] != t):
                node_targets.append(t)
        return n_e * phi, len(node_targets) * n_e * idx_bytes + operands + out_bytes
    per = 5 if family == "edge_softmax" else 4
    return per * n_e * o, (n_dst + 1 + n_e) * idx_bytes + operands + out_bytes


# ---------------------------------------------------------------- graphs

def find_bench_binary():
    for cand in (os.environ.get("GNNKERN_BENCH_BIN"), shutil.which("gnnkern-bench")):
        if cand and os.path.exists(cand):
            return cand
    here = os.path.dirname(os.path.abspath(__file__))
    for target in (os.environ.get("CARGO_TARGET_DIR"), os.path.join(here, "..", "..", "target")):
        if target:
            cand = os.path.join(target, "release", "gnnkern-bench")
            if os.path.exists(cand):
                return cand
    raise SystemExit("error: a spec graph needs the gnnkern-bench binary (set GNNKERN_BENCH_BIN)")


def graph_dir(graph):
    if os.path.isdir(graph):
        return graph
    out = os.path.join(tempfile.gettempdir(), "gnnkern-peer-" + re.sub(r"[^A-Za-z0-9.-]", "_", graph))
    if not os.path.exists(os.path.join(out, "meta.json")):
        subprocess.run([find_bench_binary(), "gen", graph, "--out", out], check=True, stdout=subprocess.DEVNULL)
    return out


def load_graph(path):
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    dtype = np.int64 if str(meta.get("index_dtype", "int32")).startswith("int64") else np.int32
    src = np.fromfile(os.path.join(path, "src.bin"), dtype=dtype).astype(np.int64)
    dst = np.fromfile(os.path.join(path, "dst.bin"), dtype=dtype).astype(np.int64)
    n = int(meta["num_nodes"])
    if len(src) != int(meta["num_edges"]) or len(dst) != len(src):
        raise SystemExit(f"error: {path}: src.bin/dst.bin do not hold num_edges = {meta['num_edges']} ids")
    return n, int(meta.get("num_dst", n)), src, dst


# ---------------------------------------------------------------- machine (mirror of machine.rs)

def machine():
    cpu, vendor = "unknown", "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() == "model name" and cpu == "unknown":
                    cpu = val.strip()
                if key.strip() == "vendor_id" and vendor == "unknown":
                    vendor = val.strip()
    except OSError:
        pass
    return {"cpu": cpu, "vendor": vendor, "cores": len(os.sched_getaffinity(0))}


def slug(cpu, cores):
    cleaned = cpu.replace("(R)", "").replace("(TM)", "").replace("(tm)", "").split("@")[0]
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]", cleaned) if w and w.lower() not in ("cpu", "processor")]
    return ("-".join(words) or "unknown") + f"-{cores}c"


def triad_gbps(threads, m):
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "perf-reports", "machines", slug(m["cpu"], m["cores"]) + ".json")
    try:
        with open(path) as f:
            points = json.load(f)["triad"]
        return min(points, key=lambda p: abs(p["threads"] - threads))["gbps"]
    except (OSError, KeyError, ValueError):
        return None


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


# ---------------------------------------------------------------- peers

class Ctx:
    """A graph as torch tensors, with peer-specific structures built lazily (untimed)."""

    def __init__(self, torch, n_src, n_dst, src, dst):
        self.torch = torch
        self.n_src, self.n_dst, self.n_e = n_src, n_dst, len(src)
        self.src = torch.from_numpy(src)
        self.dst = torch.from_numpy(dst)
        self._dgl = None
        self._csr = None

    def dgl_graph(self):
        if self._dgl is None:
            import dgl
            if self.n_src == self.n_dst:
                g = dgl.graph((self.src, self.dst), num_nodes=self.n_src)
            else:
                g = dgl.create_block((self.src, self.dst), num_src_nodes=self.n_src, num_dst_nodes=self.n_dst)
            g.create_formats_()  # build COO/CSR/CSC now, not inside the first timed call
            self._dgl = g
        return self._dgl

    def csr(self):
        """(crow, col, perm): the graph as an n_dst x n_src CSR, perm = edge ids in CSR order."""
        if self._csr is None:
            torch = self.torch
            key = self.dst * max(self.n_src, 1) + self.src
            perm = torch.argsort(key, stable=True)
            counts = torch.bincount(self.dst, minlength=self.n_dst)
            crow = torch.zeros(self.n_dst + 1, dtype=torch.int64)
            crow[1:] = torch.cumsum(counts, 0)
            self._csr = (crow, self.src[perm], perm)
        return self._csr


def dgl_fn(ctx, name, lhs, rhs):
    import dgl
    family = parse_op(name)[0]
    g = ctx.dgl_graph()
    if family == "edge_softmax":
        return lambda: dgl.ops.edge_softmax(g, lhs)
    if family == "edge_softmax_backward":
        # DGL's EdgeSoftmax.backward: sds = out * grad; grad_in = sds - out * sum_in(sds).
        def backward():
            sds = lhs * rhs
            accum = dgl.ops.copy_e_sum(g, sds)
            return sds - dgl.ops.e_mul_v(g, lhs, accum)
        return backward
    fn = getattr(dgl.ops, name, None)
    if fn is None:
        raise Unsupported(f"dgl.ops has no {name}")
    args = [a for a in (lhs, rhs) if a is not None]
    return lambda: fn(g, *args)


def pyg_fn(ctx, name, lhs, rhs):
    torch = ctx.torch
    from torch_geometric.utils import scatter, softmax
    family, op, lt, rt, reduce = parse_op(name)
    src, dst = ctx.src, ctx.dst
    if family == "edge_softmax":
        return lambda: softmax(lhs, dst, num_nodes=ctx.n_dst)
    if family == "edge_softmax_backward":
        def backward():
            sds = lhs * rhs
            accum = scatter(sds, dst, dim=0, dim_size=ctx.n_dst, reduce="sum")
            return sds - lhs * accum.index_select(0, dst)
        return backward

    def gather(x, t):
        if t == "u":
            return x.index_select(0, src)
        if t == "v":
            return x.index_select(0, dst)
        return x

    def message():
        a = gather(lhs, lt)
        if op == "copy":
            return a
        b = gather(rhs, rt)
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return a / b
        return (a * b).sum(-1, keepdim=True)

    if family == "sddmm":
        return message
    return lambda: scatter(message(), dst, dim=0, dim_size=ctx.n_dst, reduce=reduce)


def autograd_backward(torch, forward, lhs, rhs, grad_out):
    """Times a peer's backward alone: `forward(lhs, rhs)` (a function of the operands returning the
    peer's op as a thunk) runs once here with autograd on; the returned thunk computes every
    operand gradient for `grad_out`, concatenated lhs first."""
    lhs, rhs = (None if x is None else x.detach().requires_grad_() for x in (lhs, rhs))
    with torch.enable_grad():
        out = forward(lhs, rhs)()
    wrt = [x for x in (lhs, rhs) if x is not None]
    g = grad_out.reshape(out.shape)

    def backward():
        grads = torch.autograd.grad(out, wrt, g, retain_graph=True)
        return torch.cat([x.reshape(-1) for x in grads])
    return backward


def torch_sparse_fn(ctx, name, lhs, rhs, heads):
    torch = ctx.torch
    family, op, lt, rt, reduce = parse_op(name)
    ok = family == "spmm" and reduce in ("sum", "mean") and lt == "u" and (
        op == "copy" or (op == "mul" and rt == "e" and not heads))
    if not ok:
        raise Unsupported("torch.sparse.mm covers copy_u_{sum,mean} and u_mul_e_{sum,mean} with a scalar edge weight")
    crow, col, perm = ctx.csr()
    if op == "copy":
        values = torch.ones(ctx.n_e, dtype=torch.float32)
    else:
        values = rhs.reshape(-1)[perm].contiguous()
    a = torch.sparse_csr_tensor(crow, col, values, size=(ctx.n_dst, ctx.n_src))
    x = lhs.reshape(ctx.n_src, -1)
    out_shape = (ctx.n_dst,) + tuple(lhs.shape[1:])
    if reduce == "mean":
        deg = (crow[1:] - crow[:-1]).clamp(min=1).to(torch.float32).unsqueeze(1)
        return lambda: (torch.sparse.mm(a, x) / deg).reshape(out_shape)
    return lambda: torch.sparse.mm(a, x).reshape(out_shape)


def versions(peer, torch):
    if peer == "dgl":
        import dgl
        return f"dgl {dgl.__version__}, torch {torch.__version__}"
    if peer == "pyg":
        import torch_geometric
        return f"torch_geometric {torch_geometric.__version__}, torch {torch.__version__}"
    return f"torch {torch.__version__} (MKL {torch.backends.mkl.is_available()})"


def case_key(graph, op, dim, heads, threads):
    return f"{graph}|{op}|d{dim}|h{heads or 0}|t{threads}"


class Prepared:
    """A case made ready to time: inputs made, the peer's function built, `warmup` calls run.

    `calls(untimed, timed, warm_ms)` runs a slice of calls and returns the timed ones' times
    (ms); `result()` summarizes every timed call in gnnkern's schema. The suite alternates
    slices of gnnkern and of each peer so that the tools' calls share a shared machine's fast
    and slow stretches (bench-suite/src/suite/run.rs).
    """

    def __init__(self, torch, peer, ctx, case, m):
        name, dim, heads, threads = case["op"], case["dim"], case.get("heads"), case["threads"]
        self.torch, self.peer, self.ctx, self.case, self.m = torch, peer, ctx, case, m
        self.name, self.dim, self.heads, self.threads = name, dim, heads, threads
        torch.set_num_threads(threads)
        forward = gradient_of(name)
        s = shapes(name, ctx.n_src, ctx.n_dst, ctx.n_e, dim, heads)
        self.s = s
        # Peers materialise E x d messages (pyg) and temporaries: budget three edge-sized tensors.
        planned = 4 * (sum(int(np.prod(x[1])) for x in (s["lhs"], s["rhs"]) if x) + 3 * int(np.prod(s["out"])))
        if peer == "pyg":
            planned += 3 * 4 * ctx.n_e * int(np.prod(s["lhs"][1][1:]))
        avail = mem_available()
        if avail and planned > MEMORY_SHARE * avail:
            raise Unsupported(f"needs about {planned / 2**30:.1f} GiB, more than {MEMORY_SHARE:.0%} of the "
                              f"{avail / 2**30:.1f} GiB available")

        def tensor(spec, seed):
            if spec is None:
                return None
            _, shape, (lo, hi) = spec
            return torch.from_numpy(seeded_uniform(seed, int(np.prod(shape)), lo, hi)).reshape(shape)

        lhs, rhs = tensor(s["lhs"], LHS_SEED), tensor(s["rhs"], RHS_SEED)
        peer_fn = dict(dgl=dgl_fn, pyg=pyg_fn,
                       torch_sparse=lambda ctx, name, l, r: torch_sparse_fn(ctx, name, l, r, heads))
        if forward is not None:
            grad_out = tensor(s["grad_out"], GRAD_SEED)
            if peer == "dgl" and parse_op(name)[4] in ("max", "min"):
                # DGL 2.1 leaves arg = 0 in rows without in-edges, so its max/min backward adds those
                # rows' gradients to source node 0; gnnkern and PyG send them nowhere (no message won).
                # Zero them for DGL (same work) so that the checksums compare the same mathematics.
                grad_out[torch.bincount(ctx.dst, minlength=ctx.n_dst) == 0] = 0.0
            self.fn = autograd_backward(torch, lambda l, r: peer_fn[peer](ctx, forward, l, r), lhs, rhs, grad_out)
        else:
            self.fn = peer_fn[peer](ctx, name, lhs, rhs)
        reset_peak_rss()
        self.times, self.out = [], None
        self.calls(case.get("warmup", 1), 0)

    def calls(self, untimed, timed, warm_ms=0.0):
        """Untimed calls (at least `untimed`, more until `warm_ms` have passed), then `timed` timed
        ones; returns the timed calls' times (ms)."""
        self.torch.set_num_threads(self.threads)
        times = []
        with self.torch.no_grad():
            warm_start, done = time.perf_counter(), 0
            while done < untimed or (time.perf_counter() - warm_start) * 1e3 < warm_ms:
                self.out = None
                self.out = self.fn()
                done += 1
            for _ in range(timed):
                self.out = None
                t = time.perf_counter()
                self.out = self.fn()
                times.append((time.perf_counter() - t) * 1e3)
        self.times.extend(times)
        return times

    def result(self):
        """Every timed call so far, in gnnkern's result schema."""
        torch, ctx, s, times = self.torch, self.ctx, self.s, self.times
        if not times:
            raise RuntimeError("no call was timed")
        out = self.out.reshape(s["out"])
        flops, model_bytes = cost(self.name, ctx.n_src, ctx.n_dst, ctx.n_e, s)
        med = float(np.median(times))
        gbps = model_bytes / (med / 1e3) / 1e9
        triad = triad_gbps(self.threads, self.m)
        # DGL 2.1 leaves -inf/+inf in max/min rows without in-edges where gnnkern's contract (and
        # PyG's) writes 0: count non-finite values as 0 in the checksum so the outputs stay comparable.
        o64 = torch.nan_to_num(out.double(), nan=float("nan"), posinf=0.0, neginf=0.0)
        return {
            "tool": self.peer, "op": self.name, "graph": self.case["graph_name"], "nodes": ctx.n_src,
            "dst_nodes": ctx.n_dst, "edges": ctx.n_e, "dim": self.dim, "heads": self.heads,
            "threads": self.threads, "backend": self.peer, "isa": versions(self.peer, torch),
            "reps": len(times), "median_ms": med, "min_ms": float(min(times)), "max_ms": float(max(times)),
            "flops": flops, "gflops": flops / (med / 1e3) / 1e9, "model_bytes": model_bytes, "gbps": gbps,
            "pct_of_triad": 100.0 * gbps / triad if triad else None, "peak_rss_mb": peak_rss_mb(),
            "out_shape": list(out.shape), "checksum": float(o64.sum()), "checksum_abs": float(o64.abs().sum()),
            "machine": self.m,
        }


def run_case(torch, peer, ctx, case, m):
    """Times a whole case in one slice: `warmup` calls, then `reps` timed ones."""
    p = Prepared(torch, peer, ctx, case, m)
    p.calls(0, case.get("reps", 10))
    return p.result()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, choices=["dgl", "pyg", "torch_sparse"])
    ap.add_argument("--graph")
    ap.add_argument("--op")
    ap.add_argument("--dim", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--serve", action="store_true",
                    help="read one JSON request per line on stdin (a case, or prepare / calls / finish: see "
                         "above); answer each with one JSON line")
    ap.add_argument("--json", action="store_true", help="print JSON (always on; accepted for symmetry with gnnkern-bench)")
    args = ap.parse_args()

    if args.serve:
        requests = (json.loads(line) for line in sys.stdin if line.strip())
    else:
        if not (args.graph and args.op and args.dim):
            ap.error("--graph, --op and --dim are required without --serve")
        d = graph_dir(args.graph)
        requests = [{"graph": d, "graph_name": args.graph.rstrip("/").split("/")[-1] if os.path.isdir(args.graph) else args.graph,
                  "op": args.op, "dim": args.dim, "heads": args.heads, "threads": args.threads,
                  "reps": args.reps, "warmup": args.warmup}]
    # OpenMP reads OMP_NUM_THREADS once, when torch/dgl load; each case then uses torch.set_num_threads.
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch
    m = machine()
    status = 0
    loaded = {}
    prepared, prepared_key = None, None
    for request in requests:
        # A slice of the prepared case's calls, or its summary.
        if "calls" in request or "finish" in request:
            key = prepared_key or "no case"
            try:
                if prepared is None:
                    raise RuntimeError("no case is prepared")
                if "calls" in request:
                    line = {"times_ms": prepared.calls(request.get("untimed", 0), request["calls"],
                                                                request.get("warm_ms", 0.0))}
                else:
                    line, prepared, prepared_key = prepared.result(), None, None
            except RuntimeError as e:  # e.g. out of memory inside torch: report, go on serving
                line, status, prepared, prepared_key = {"case": key, "skipped": f"{type(e).__name__}: {e}"}, 4, None, None
            print(json.dumps(line), flush=True)
            continue
        # A case: {"prepare": CASE} makes it ready and answers {"prepared": KEY}; a bare CASE is
        # timed whole (warmup, then reps calls) and answered with its result.
        case = request.get("prepare", request)
        prepared, prepared_key = None, None
        key = case_key(case["graph_name"], case["op"], case["dim"], case.get("heads"), case["threads"])
        if case["graph"] not in loaded:
            loaded.clear()
            loaded[case["graph"]] = Ctx(torch, *load_graph(case["graph"]))
        ctx = loaded[case["graph"]]
        try:
            if "prepare" in request:
                prepared, prepared_key = Prepared(torch, args.peer, ctx, case, m), key
                line = {"prepared": key}
            else:
                line = run_case(torch, args.peer, ctx, case, m)
        except Unsupported as e:
            line, status = {"case": key, "skipped": str(e)}, 3
        except RuntimeError as e:  # e.g. out of memory inside torch: report, go on serving
            line, status = {"case": key, "skipped": f"{type(e).__name__}: {e}"}, 4
        print(json.dumps(line), flush=True)
    return status if not args.serve else 0


if __name__ == "__main__":
    sys.exit(main())
