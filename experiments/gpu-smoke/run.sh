#!/usr/bin/env bash
# The GPU smoke run, one command from a fresh GPU node (CUDA; internet for the packages):
#   bash experiments/gpu-smoke/run.sh
# installs the GPU extra, builds a small local model, trains 2 GRPO steps of two arms through
# hscale's agent loop on veRL, imports the validation dumps and prints the report's table.
set -euo pipefail
cd "$(dirname "$0")/../.."
pip install -e ".[gpu]"
hscale doctor
python experiments/gpu-smoke/make_model.py runs/gpu-smoke-model
hscale run experiments/gpu-smoke/smoke.yaml --out runs
hscale report runs/gpu-smoke
cat runs/gpu-smoke/report/tables.md
