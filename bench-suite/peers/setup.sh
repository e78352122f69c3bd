#!/usr/bin/env bash
# Creates the peers' virtual environment (DGL 2.1, PyG 2.5, torch 2.2 CPU
# with MKL) used by peer_op.py and `gnnkern-bench suite --peers`.
#
#   bench-suite/peers/setup.sh [VENV_DIR]      (default /work/venvs/peers)
#
# Never run by CI (the wheels are several GB). The pins are the versions
# the committed peer results were measured with; numpy must stay below 2
# (torch 2.2 and dgl 2.1 are built against the numpy 1 ABI), which in turn
# bounds scipy and pandas. pandas and pydantic are imported by dgl 2.1.
set -euo pipefail
VENV="${1:-/work/venvs/peers}"
PY="${PYTHON:-python3.11}"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --upgrade pip
"$VENV/bin/pip" install \
  torch==2.2.1 dgl==2.1.0 torchdata==0.7.1 torch_geometric==2.5.3 \
  "numpy<2" "scipy<1.14" "pandas<2.3" "pydantic<3" pyyaml
"$VENV/bin/python" - <<'PY'
import numpy, torch, dgl, torch_geometric
torch.from_numpy(numpy.zeros(1))  # fails if numpy and torch disagree on the ABI
print("peers venv ok: torch", torch.__version__, "dgl", dgl.__version__,
      "pyg", torch_geometric.__version__, "numpy", numpy.__version__)
PY
echo "use it with: GNNKERN_PEERS_PYTHON=$VENV/bin/python gnnkern-bench suite --quick --peers"
