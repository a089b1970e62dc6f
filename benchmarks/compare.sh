#!/usr/bin/env bash
# Every data method from nothing on the same wall-clock budget (cpu-1h preset, its minutes
# overridden), one after the other on this machine; then the Elo-against-compute plot.
#   benchmarks/compare.sh [MINUTES] [OUT] [--set key=value ...]   (defaults: 60, runs/compare)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-60}
OUT=${2:-runs/compare}
FZ=.venv/bin/frugalzero
common=(--preset cpu-1h --set "budget.minutes=$MINUTES" "${@:3}")
# self-play methods: a small search so that an iteration fits the budget several times over
selfplay=(--set selfplay.search.simulations=32 --set generate.games=48)
$FZ run "${common[@]}" --method sfgames --dir "$OUT/sfgames"
$FZ run "${common[@]}" --method eps-explore --set generate.steps=300 \
    --set explore.engine.nodes=400 --dir "$OUT/eps-explore"
$FZ run "${common[@]}" --method selfplay "${selfplay[@]}" --dir "$OUT/selfplay"
$FZ run "${common[@]}" --method contempt "${selfplay[@]}" --set generate.nscl_raise=2 \
    --dir "$OUT/contempt"
$FZ run "${common[@]}" --method gumbel "${selfplay[@]}" --set selfplay.search.simulations=16 \
    --dir "$OUT/gumbel"
.venv/bin/python benchmarks/plot_elo.py "$OUT" benchmarks/elo_vs_compute.png
