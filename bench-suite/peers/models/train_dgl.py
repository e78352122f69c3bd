"""DGL 2.1 + PyTorch 2.2.1 peer of `gnnkern-bench train`: the same models,
hyper-parameters, graph directories and JSON report.

    /work/venvs/peers/bin/python bench-suite/peers/models/train_dgl.py \
        --model gcn --graph ../shared/datasets/cora --epochs 200 --threads 2 --json

Graph directories use the format of ../shared/datasets (src.bin, dst.bin,
optional feat.bin, labels.bin, train/val/test.bin). A graph without features
gets seeded N(0,1) features of 128 columns, one without labels or split gets
random labels in 0..16 and a random 60/20/20 split -- the same shapes as the
gnnkern side (the values differ: timing does not depend on them). Loaded
features are row-normalised, as DGL's Planetoid datasets are.

sparse/dense split: one extra epoch runs under torch.profiler; self CPU time of
DGL's sparse ops (GSpMM, GSDDMM, edge softmax, incl. backward) is "sparse",
matrix products and elementwise torch ops "dense", the rest "other" -- scaled
to the median epoch time.
"""

import argparse
import json
import os
import sys
import time

import numpy as np


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, choices=["gcn", "sage", "sage-pool", "sage-minibatch", "gat"])
    p.add_argument("--graph", required=True)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--accuracy", action="store_true", help="accuracy hyper-parameters (hidden 16 / GAT 8x8)")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--gcn-dgl-example", action="store_true",
                   help="GCN as DGL's example (no input dropout, weight decay on every layer) instead of Kipf & Welling's")
    p.add_argument("--json", action="store_true")
    return p.parse_args()


args = parse()
os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
import torch  # noqa: E402

torch.set_num_threads(args.threads)
import dgl  # noqa: E402
import dgl.nn as dglnn  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load(path, seed):
    rd = lambda name, dt: np.fromfile(os.path.join(path, name), dtype=dt)
    meta = json.load(open(os.path.join(path, "meta.json")))
    n = int(meta["num_nodes"])
    src, dst = rd("src.bin", np.int32).astype(np.int64), rd("dst.bin", np.int32).astype(np.int64)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    gen = torch.Generator().manual_seed(seed)
    if os.path.exists(os.path.join(path, "feat.bin")):
        feat = torch.from_numpy(rd("feat.bin", np.float32).reshape(n, -1).copy())
        s = feat.sum(1, keepdim=True)
        feat = torch.where(s != 0, feat / s.clamp(min=1e-12), feat)
    else:
        feat = torch.randn(n, 128, generator=gen)
    has = lambda f: os.path.exists(os.path.join(path, f))
    if has("labels.bin") and has("train.bin") and has("test.bin"):
        labels = torch.from_numpy(rd("labels.bin", np.int32).astype(np.int64))
        split = lambda f: torch.from_numpy(rd(f, np.int32).astype(np.int64)) if has(f) else torch.zeros(0, dtype=torch.int64)
        train, val, test = (x[labels[x] >= 0] for x in (split("train.bin"), split("val.bin"), split("test.bin")))
        real = True
    else:
        labels = torch.randint(0, 16, (n,), generator=gen)
        perm = torch.randperm(n, generator=gen)
        a, b = n * 6 // 10, n * 8 // 10
        train, val, test = perm[:a], perm[a:b], perm[b:]
        real = False
    return meta.get("name", os.path.basename(path)), g, feat, labels, train, val, test, real


class GCN(nn.Module):
    """Kipf & Welling's reference GCN: dropout on the input and the hidden
    layer (DGL's example, `input_dropout=False`, skips the input)."""

    def __init__(s, i, h, c, input_dropout=True):
        super().__init__()
        s.layers = nn.ModuleList([dglnn.GraphConv(i, h, activation=F.relu), dglnn.GraphConv(h, c)])
        s.drop = nn.Dropout(0.5)
        s.input_dropout = input_dropout

    def forward(s, gs, x):
        h = x
        for i, (layer, g) in enumerate(zip(s.layers, gs)):
            if i or s.input_dropout:
                h = s.drop(h)
            h = layer(g, h)
        return h


class SAGE(nn.Module):
    def __init__(s, i, h, c, agg):
        super().__init__()
        s.layers = nn.ModuleList([dglnn.SAGEConv(i, h, agg), dglnn.SAGEConv(h, c, agg)])
        s.drop = nn.Dropout(0.5)

    def forward(s, gs, x):
        h = s.drop(x)
        for i, (layer, g) in enumerate(zip(s.layers, gs)):
            h = layer(g, h)
            if i + 1 < len(s.layers):
                h = s.drop(F.relu(h))
        return h


class GAT(nn.Module):
    def __init__(s, i, h, c, heads):
        super().__init__()
        s.l1 = dglnn.GATConv(i, h, heads, feat_drop=0.6, attn_drop=0.6, activation=F.elu)
        s.l2 = dglnn.GATConv(h * heads, c, 1, feat_drop=0.6, attn_drop=0.6)

    def forward(s, gs, x):
        h = s.l1(gs[0], x).flatten(1)
        return s.l2(gs[1], h).mean(1)


# Seconds of each epoch spent in the mini-batch input pipeline.
input_s = []


def main():
    torch.manual_seed(args.seed)
    name, g, feat, labels, train, val, test, real = load(args.graph, args.seed)
    ncls = int(labels.max()) + 1
    m = args.model
    hidden = 16 if args.accuracy else 128
    if m in ("gcn", "gat"):
        g = dgl.add_self_loop(dgl.remove_self_loop(g))
    if m == "gcn":
        model, lr = GCN(feat.shape[1], hidden, ncls, input_dropout=not args.gcn_dgl_example), 1e-2
    elif m == "gat":
        model, lr = (GAT(feat.shape[1], 8, ncls, 8) if args.accuracy else GAT(feat.shape[1], 32, ncls, 4)), 5e-3
    else:
        agg = "pool" if m == "sage-pool" else "mean"
        model, lr = SAGE(feat.shape[1], hidden, ncls, agg), (3e-3 if m == "sage-minibatch" else 1e-2)
    if m == "gcn" and not args.gcn_dgl_example:
        # Kipf & Welling decay the first layer only (PyG's gcn.py: two groups).
        groups = [dict(params=model.layers[0].parameters(), weight_decay=5e-4),
                  dict(params=model.layers[1].parameters(), weight_decay=0.0)]
        opt = torch.optim.Adam(groups, lr=lr)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)

    if m == "sage-minibatch":
        sampler = dgl.dataloading.NeighborSampler([25, 10])
        loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=1024, shuffle=True, drop_last=False)

        def epoch():
            last = 0.0
            batches = iter(loader)
            while True:
                # Sampling, block construction and feature gathering: the
                # input pipeline (gnnkern's `input_ms`).
                t = time.perf_counter()
                try:
                    _, _, blocks = next(batches)
                except StopIteration:
                    break
                x = feat[blocks[0].srcdata[dgl.NID]]
                y = labels[blocks[-1].dstdata[dgl.NID]]
                input_s[-1] += time.perf_counter() - t
                loss = F.cross_entropy(model(blocks, x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                last = loss.item()
            return last
    else:
        gs = [g, g]

        def epoch():
            loss = F.cross_entropy(model(gs, feat)[train], labels[train])
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.item()

    times = []
    loss = 0.0
    model.train()
    for _ in range(args.epochs):
        input_s.append(0.0)
        t = time.perf_counter()
        loss = epoch()
        times.append((time.perf_counter() - t) * 1e3)
    # The median epoch (the upper one for an even count, as gnnkern reports).
    med = sorted(range(len(times)), key=lambda i: times[i])[len(times) // 2]
    epoch_ms = times[med]

    split = {"sparse_ms": None, "dense_ms": None, "other_ms": None}
    if not args.no_profile:
        from torch.profiler import ProfilerActivity, profile

        input_s.append(0.0)  # the profiled epoch's own entry
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            epoch()
        sparse = dense = 0.0
        sparse_keys = ("gspmm", "gsddmm", "edgesoftmax", "edge_softmax", "segment", "spmm", "sddmm")
        dense_keys = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::mul", "aten::add",
                      "aten::relu", "aten::elu", "aten::leaky_relu", "aten::dropout", "aten::native_dropout",
                      "aten::threshold_backward", "aten::elu_backward", "aten::sum", "aten::div", "aten::_log_softmax",
                      "aten::addcdiv_", "aten::addcmul_", "aten::mul_", "aten::add_", "aten::lerp_", "aten::sqrt")
        total = 0.0
        for e in prof.key_averages():
            t = e.self_cpu_time_total / 1e3
            total += t
            k = e.key.lower()
            if any(s in k for s in sparse_keys):
                sparse += t
            elif any(e.key.startswith(s) for s in dense_keys):
                dense += t
        scale = epoch_ms / max(total, 1e-9)
        split = {"sparse_ms": sparse * scale, "dense_ms": dense * scale,
                 "other_ms": max(epoch_ms - (sparse + dense) * scale, 0.0)}

    model.eval()
    with torch.no_grad():
        t = time.perf_counter()
        logits = model([g, g], feat)
        infer_ms = (time.perf_counter() - t) * 1e3
    acc = lambda idx: float((logits[idx].argmax(1) == labels[idx]).float().mean()) if len(idx) else 0.0
    out = {
        "framework": "dgl",
        "dgl": dgl.__version__,
        "torch": torch.__version__,
        "model": m,
        "graph": name,
        "num_nodes": g.num_nodes(),
        "num_edges": int(len(np.fromfile(os.path.join(args.graph, "src.bin"), dtype=np.int32))),
        "feat_dim": feat.shape[1],
        "epochs": args.epochs,
        "threads": torch.get_num_threads(),
        "epoch_ms": epoch_ms,
        "epoch_times_ms": times,
        **split,
        "input_ms": input_s[med] * 1e3 if m == "sage-minibatch" else None,
        "infer_ms": infer_ms,
        "final_loss": loss,
        "train_acc": acc(train),
        "val_acc": acc(val),
        "test_acc": acc(test) if real else None,
    }
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
