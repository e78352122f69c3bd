"""DGL peer of `gnnkern-bench train --model lgnn`: DGL's LGNN example
(examples/pytorch/line_graph: GNNModule / GNN, the permutation-invariant loss
and the overlap score) with the same settings as the gnnkern side
(`LgnnConfig::default()`): n = 1000, 2 communities, average degree 3, 20 layers
of 16 features, radius 3, Adam lr 0.005, 20 training and 20 test graphs, one
step per graph per epoch.

The graphs: with `--graphs DIR`, exactly the graphs gnnkern trained and tested
on, written by `gnnkern-bench train --model lgnn ... --save-graphs DIR`
(DIR/train/NNN and DIR/test/NNN in the ../shared/datasets format, labels =
communities). Without it, DGL's own SBMMixtureDataset (the same Appendix-C
distribution, different draws).

    gnnkern-bench train --model lgnn --graph sbm-mixture:1000:2:3 --epochs 20 --threads 2 \
        --save-graphs /tmp/sbm-mixture --json
    /work/venvs/peers/bin/python bench-suite/peers/models/lgnn_dgl.py --graphs /tmp/sbm-mixture \
        --epochs 20 --threads 2 --json

Batch norm: as in DGL's example (which never calls `model.eval()`) and on the
gnnkern side, test graphs are normalised with their own batch statistics;
`--eval-mode` uses the running statistics instead (on the 2026-11-23 run the
test overlap then collapses to about 0 on both sides, see
perf-reports/models/README.md).
"""

import argparse
import json
import os
import statistics
import sys
import time
from itertools import permutations

p = argparse.ArgumentParser()
p.add_argument("--nodes", type=int, default=1000)
p.add_argument("--communities", type=int, default=2)
p.add_argument("--avg-degree", type=float, default=3.0)
p.add_argument("--layers", type=int, default=20)
p.add_argument("--feats", type=int, default=16)
p.add_argument("--radius", type=int, default=3)
p.add_argument("--lr", type=float, default=0.005)
p.add_argument("--epochs", type=int, default=20)
p.add_argument("--train-graphs", type=int, default=20)
p.add_argument("--test-graphs", type=int, default=20)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--graphs", help="directory of train/ and test/ graphs written by gnnkern's --save-graphs")
p.add_argument("--eval-mode", action="store_true", help="test with batch norm's running statistics")
p.add_argument("--json", action="store_true")
args = p.parse_args()
os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

import numpy as np  # noqa: E402
import torch as th  # noqa: E402

th.set_num_threads(args.threads)
import dgl  # noqa: E402
import dgl.function as fn  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from dgl.data import SBMMixtureDataset  # noqa: E402


class GNNModule(nn.Module):
    """DGL example's GNNModule."""

    def __init__(self, in_feats, out_feats, radius):
        super().__init__()
        self.out_feats, self.radius = out_feats, radius
        lin = lambda: nn.Linear(in_feats, out_feats)
        self.theta_x, self.theta_deg, self.theta_y = lin(), lin(), lin()
        self.theta_list = nn.ModuleList([lin() for _ in range(radius)])
        self.gamma_y, self.gamma_deg, self.gamma_x = lin(), lin(), lin()
        self.gamma_list = nn.ModuleList([lin() for _ in range(radius)])
        self.bn_x, self.bn_y = nn.BatchNorm1d(out_feats), nn.BatchNorm1d(out_feats)

    def aggregate(self, g, z):
        zs = []
        g.ndata["z"] = z
        g.update_all(fn.copy_u("z", "m"), fn.sum("m", "z"))
        zs.append(g.ndata["z"])
        for i in range(self.radius - 1):
            for _ in range(2**i):
                g.update_all(fn.copy_u("z", "m"), fn.sum("m", "z"))
            zs.append(g.ndata["z"])
        return zs

    def forward(self, g, lg, x, y, deg_g, deg_lg, pm_pd):
        pmpd_x = F.embedding(pm_pd, x)
        sum_x = sum(t(z) for t, z in zip(self.theta_list, self.aggregate(g, x)))
        g.edata["y"] = y
        g.update_all(fn.copy_e("y", "m"), fn.sum("m", "pmpd_y"))
        pmpd_y = g.ndata.pop("pmpd_y")
        x = self.theta_x(x) + self.theta_deg(deg_g * x) + sum_x + self.theta_y(pmpd_y)
        n = self.out_feats // 2
        x = self.bn_x(th.cat([x[:, :n], F.relu(x[:, n:])], 1))
        sum_y = sum(gm(z) for gm, z in zip(self.gamma_list, self.aggregate(lg, y)))
        y = self.gamma_y(y) + self.gamma_deg(deg_lg * y) + sum_y + self.gamma_x(pmpd_x)
        y = self.bn_y(th.cat([y[:, :n], F.relu(y[:, n:])], 1))
        return x, y


class GNN(nn.Module):
    def __init__(self, feats, radius, n_classes):
        super().__init__()
        self.linear = nn.Linear(feats[-1], n_classes)
        self.module_list = nn.ModuleList([GNNModule(m, n, radius) for m, n in zip(feats[:-1], feats[1:])])

    def forward(self, g, lg, deg_g, deg_lg, pm_pd):
        x, y = deg_g, deg_lg
        for module in self.module_list:
            x, y = module(g, lg, x, y, deg_g, deg_lg, pm_pd)
        return self.linear(x)


def main():
    th.manual_seed(args.seed)
    np.random.seed(args.seed)
    import random

    random.seed(args.seed)
    K, n = args.communities, args.nodes

    def prepare(g, labels):
        """The example's per-graph inputs: line graph, degrees, edge sources."""
        lg = dgl.line_graph(g, backtracking=False)
        deg = lambda h: h.in_degrees().float().unsqueeze(1)
        return g, lg, deg(g), deg(lg), g.edges()[0], labels

    def load_dir(path):
        rd = lambda name: th.from_numpy(np.fromfile(os.path.join(path, name), dtype=np.int32).astype(np.int64))
        meta = json.load(open(os.path.join(path, "meta.json")))
        g = dgl.graph((rd("src.bin"), rd("dst.bin")), num_nodes=int(meta["num_nodes"]))
        return prepare(g, rd("labels.bin"))

    def load(split, count):
        if args.graphs:
            root = os.path.join(args.graphs, split)
            names = sorted(os.listdir(root))
            if len(names) != count:
                sys.exit(f"{root} holds {len(names)} graphs, expected {count}")
            return [load_dir(os.path.join(root, d)) for d in names]
        ds = SBMMixtureDataset(count, n, K, avg_deg=args.avg_degree)
        # DGL's SBM puts node v in block v // (n / K).
        labels = th.arange(n) // (n // K)
        col = lambda d: th.as_tensor(d).float().unsqueeze(1)
        return [(g, lg, col(dg), col(dlg), th.as_tensor(pmpd).long(), labels)
                for g, lg, dg, dlg, pmpd in (ds[i] for i in range(count))]

    train, test = load("train", args.train_graphs), load("test", args.test_graphs)
    perms = [th.tensor(p) for p in permutations(range(K))]
    model = GNN([1] + [args.feats] * args.layers + [K], args.radius, K)
    opt = th.optim.Adam(model.parameters(), lr=args.lr)

    def overlap(z, labels):
        pred = z.argmax(1)
        acc = max(int((pred == p[labels]).sum()) for p in perms) / len(labels)
        return (acc - 1 / K) / (1 - 1 / K)

    times = []
    for _ in range(args.epochs):
        t = time.perf_counter()
        loss_sum = ov_sum = 0.0
        for g, lg, dg, dlg, pmpd, labels in train:
            z = model(g, lg, dg, dlg, pmpd)
            loss = min(F.cross_entropy(z, p[labels]) for p in perms)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += float(loss)
            ov_sum += overlap(z.detach(), labels)
        times.append((time.perf_counter() - t) * 1e3)
    if args.eval_mode:
        model.eval()
    t = time.perf_counter()
    with th.no_grad():
        test_ov = sum(overlap(model(*s[:5]), s[5]) for s in test) / len(test)
    infer_ms = (time.perf_counter() - t) * 1e3 / len(test)
    out = {
        "framework": "dgl", "dgl": dgl.__version__, "torch": th.__version__, "model": "lgnn",
        "graph": args.graphs or f"sbm-mixture:{n}:{K}:{args.avg_degree}", "num_nodes": n, "layers": args.layers,
        "feats": args.feats, "radius": args.radius, "train_graphs": args.train_graphs,
        "test_graphs": args.test_graphs, "epochs": args.epochs, "threads": th.get_num_threads(),
        "epoch_ms": statistics.median(times), "infer_ms": infer_ms,
        "final_loss": loss_sum / len(train), "train_overlap": ov_sum / len(train), "test_overlap": test_ov,
    }
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
