#!/usr/bin/env bash
# Epoch-time comparison of the model suite, gnnkern vs DGL 2.1 + PyTorch 2.2.1
# (issue 7): GCN, GraphSAGE (mean), GAT and mini-batch GraphSAGE on one
# generated graph with 128 seeded input features, timing hyper-parameters on
# both sides (2 layers, hidden 128, GAT 4 heads x 32, fanouts 25,10), the same
# graph directory and thread count. Appends one JSON object per run to
# perf-reports/models/<date>-<host>.jsonl, each tagged with the machine and
# the 1-minute load average before the run.
#
#   perf-reports/models/run_epoch_compare.sh                 # rmat:20:16:1, 5 epochs
#   perf-reports/models/run_epoch_compare.sh rmat:14:16:1 3  # a quick check
#
# Environment: MODELS (gcn sage gat sage-minibatch), THREADS (2), PYTHON (/work/venvs/peers/bin/python),
# GRAPH_ROOT (/tmp: the graph directory is written there, never in the
# repository), CARGO_TARGET_DIR (cargo's default: target), GNNKERN_BENCH (a
# built binary: skips the build), OUT (the .jsonl).
# Run it on a quiet machine (load average < 1.2): the numbers are meant to be
# compared with each other.
set -euo pipefail
cd "$(dirname "$0")/../.."

SPEC="${1:-rmat:20:16:1}"
EPOCHS="${2:-5}"
THREADS="${THREADS:-2}"
PYTHON="${PYTHON:-/work/venvs/peers/bin/python}"
GRAPH_DIR="${GRAPH_ROOT:-/tmp}/gnnkern-models-${SPEC//:/-}"
OUT="${OUT:-perf-reports/models/$(date -u +%F)-$(hostname -s).jsonl}"

"$PYTHON" -c 'import dgl, torch' || { echo "no DGL in $PYTHON (set PYTHON)" >&2; exit 1; }
# GNNKERN_BENCH: an already built gnnkern-bench binary (skips the build).
BIN="${GNNKERN_BENCH:-}"
if [ -z "$BIN" ]; then
    cargo build --release -q -p gnnkern-bench
    BIN="${CARGO_TARGET_DIR:-target}/release/gnnkern-bench"
fi
if [ ! -f "$GRAPH_DIR/meta.json" ]; then
    "$BIN" gen "$SPEC" --out "$GRAPH_DIR"
fi

machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cpus"
# Adds the run's context to the JSON object a side printed.
tag() {
    "$PYTHON" -c '
import json, sys
r = json.loads(sys.stdin.read())
r.update(spec=sys.argv[1], machine=sys.argv[2], load_avg_1m=float(sys.argv[3]), date=sys.argv[4])
print(json.dumps(r))' "$SPEC" "$machine" "$1" "$(date -u +%FT%TZ)"
}
load() { cut -d' ' -f1 /proc/loadavg; }

for model in ${MODELS:-gcn sage gat sage-minibatch}; do
    l="$(load)"
    "$BIN" train --model "$model" --graph "$GRAPH_DIR" --epochs "$EPOCHS" --threads "$THREADS" --json | tag "$l" >>"$OUT"
    l="$(load)"
    "$PYTHON" bench-suite/peers/models/train_dgl.py --model "$model" --graph "$GRAPH_DIR" \
        --epochs "$EPOCHS" --threads "$THREADS" --json | tag "$l" >>"$OUT"
    tail -n 2 "$OUT" | "$PYTHON" -c '
import json, sys
for line in sys.stdin:
    print("{framework:8} {model:15} epoch {epoch_ms:10.1f} ms  infer {infer_ms:9.1f} ms  load {load_avg_1m}".format(**json.loads(line)))'
done
echo "appended to $OUT"
