#!/usr/bin/env bash
# Every data method from nothing on the same budget: an experiment spec (docs/experiment.md),
# by default configs/experiments/methods.toml (one wall-clock hour of this machine per method;
# methods-gpu on a GPU, benchmarks/gpu.sh), run or resumed, then its record committed.
#   benchmarks/compare.sh [SPEC] [OUT] [frugalzero experiment options...]
#   (defaults: methods, runs/experiments/SPEC; e.g. --ray HEAD:6379)
# The record, benchmarks/results/experiments/SPEC/ (kept current after every step, so an
# interrupted experiment's record is committed as it stands), is what benchmarks/README.md asks:
# the spec as run, experiment.json (every kept net's id, a digest of its weights, and rating),
# the page, and every rating game (ratings/*.pgn), from which the ratings recompute; no net.
# A spec with several seeds per arm is the same command (its verdict then has an interval from
# the seed pairs); `frugalzero experiment` alone runs any other spec.
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=${1:-methods}
NAME=$(basename "$SPEC" .toml)
OUT=${2:-runs/experiments/$NAME}
.venv/bin/frugalzero experiment "$SPEC" --dir "$OUT" \
    --record "benchmarks/results/experiments/$NAME" "${@:3}"
