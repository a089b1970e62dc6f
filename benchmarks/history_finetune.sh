#!/usr/bin/env bash
# Issue 69's fine-tune: does training with history truncation (train.history_truncation) teach
# a shipped net positions given without their game, at no cost on positions with it? STEPS
# steps of 256 positions (default 1,000) on fresh Stockfish games (the shipped recipe's part 40:
# 2-move book + 2 random plies, 400 nodes, seed 4640, 5,000 games), once per truncation share
# (0 is the control), from the same shipped net, then each measured by
# `benchmarks/history_fill.py measure --nets NET,runs/history-ft/NET-tT.safetensors,...`.
#
#   benchmarks/history_finetune.sh [NET] [TRUNCATIONS]   (default: small "0.25 0")
#
# `medium` (net:default) trained 1,000 steps in 2 h 4 min on the 2-core EPYC at load 8-11 (34
# positions/s; ~300 while the machine was quiet): STEPS=1000 ... default 0.25 (its record:
# benchmarks/notes/history.md); on a GPU, TRAIN="--device cuda".
#
# Resumable: the data is made once, each training resumes from its run directory.
set -euo pipefail
cd "$(dirname "$0")/.."
NET=${1:-small}
STEPS=${STEPS:-1000}
TRAIN=${TRAIN:-}
TRUNCATIONS=${2:-0.25 0}
FZ=${FZ:-.venv/bin/frugalzero}
OUT=runs/history-ft
mkdir -p "$OUT"
if [ ! -s "$OUT/data.json" ]; then
    rm -rf "$OUT/data"
    $FZ sfgames --games 5000 --nodes 400 --openings ../shared/openings/2moves_v1.epd \
        --book-random-plies 2 --seed 4640 --out "$OUT/data" --json > "$OUT/data.json.tmp"
    mv "$OUT/data.json.tmp" "$OUT/data.json"
fi
for t in $TRUNCATIONS; do
    name="$NET-t$t"
    [ -s "$OUT/$name.json" ] && continue
    # shellcheck disable=SC2086  # TRAIN is words on purpose
    $FZ train --data "$OUT/data" --net "$NET" --out "$OUT/$name.safetensors" --steps "$STEPS" \
        --lr 0.01 --swa-cycles 0 --set value_lambda=1 --history-truncation "$t" $TRAIN \
        --run-dir "$OUT/run-$name" --json > "$OUT/$name.json.tmp"
    mv "$OUT/$name.json.tmp" "$OUT/$name.json"
done
