#!/usr/bin/env bash
# The shipped net (net:default): Stockfish's games at 400 nodes from random 8-ply openings,
# a fresh `small` net trained on them, then its ladder rating at 400 nodes per move.
# Measured: 44 + 53 + 21 minutes on the 2-core development machine.
#   benchmarks/train_default.sh [OUT]   (default: runs/strong)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/strong}
FZ=.venv/bin/frugalzero
mkdir -p "$OUT"
$FZ sfgames --games 22000 --nodes 400 --random-plies 8 --seed 2026 --out "$OUT/data" --json \
    | tee "$OUT/sfgames.json"
$FZ train --data "$OUT/data" --arch small --out "$OUT/small.safetensors" --epochs 1.5 \
    --swa-cycles 0 --set value_lambda=0.5 --json | tee "$OUT/train.json"
$FZ ladder "net:$OUT/small.safetensors?nodes=400" \
    --pgn "$OUT/ladder.pgn" --json | tee "$OUT/ladder.json"
