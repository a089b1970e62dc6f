#!/usr/bin/env bash
# The shipped nets (net:default, net:small): Stockfish's games at 400 nodes from random 8-ply
# openings, a net trained on them, its raw policy's agreement with Stockfish on the held-out
# suite, then its ladder rating at 400 nodes per move.
#
#   benchmarks/train_default.sh [OUT]          (default: runs/strong)
#
# net:small took three runs of this script (benchmarks/RESULTS.md): stage 1 with the
# defaults (a fresh net on 22,000 games: 44 + 53 + 21 minutes on the 2-core machine), then
# stages 2 and 3 going on from the last stage's net with 66,000 and 40,000 more games, one pass:
#   INIT=runs/strong/small.safetensors GAMES=66000 EPOCHS=1 SEED=3026 benchmarks/train_default.sh runs/stage2
#   INIT=runs/stage2/small.safetensors GAMES=40000 EPOCHS=1 SEED=3100 benchmarks/train_default.sh runs/stage3
# (the shipped stage 2 ran with SEED=2026, whose first part repeats stage 1's first 2,000
# openings: give stage 2 a seed of its own). net:default is a `medium` net trained from
# nothing on stages 2 and 3's shards on a GPU machine (6.6 min of an H200), then rated here:
#   GAMES=0 ARCH=medium LR=0.2 EPOCHS=1 LAMBDA=1 DATA="runs/stage2/data runs/stage3/data" \
#       TRAIN="--batch-size 1024 --device cuda" benchmarks/train_default.sh runs/medium
# Since 2026-11-27 it is that net after one more pass on a GPU (3.6 min of an H100) over the
# first 55,000 games (parts 0-10) of runs/big, the recipe of 300,000 games in parts of 5,000:
#   OPENINGS=../shared/openings/2moves_v1.epd BOOK_PLIES=2 GAMES=300000 PART=5000 SEED=4600 \
#       STAGES=data nice -n 10 benchmarks/train_default.sh runs/big
#   GAMES=0 ARCH=medium INIT=default LR=0.1 EPOCHS=1 LAMBDA=1 \
#       DATA="$(echo runs/big/data/part-{0..10})" TRAIN="--batch-size 1024 --device cuda" \
#       benchmarks/train_default.sh runs/medium-ft
# A GPU lease makes the next parts (11, 12, ...) itself, on the machine's cores, and trains on
# them: `benchmarks/gpu.sh build games strength` (benchmarks/RESULTS.md, "On a GPU").
# The recipe's knobs are environment variables:
#   GAMES=22000   Stockfish games, made in parts of PART=2000 (part i has seed SEED+i, SEED=2026)
#   MULTIPV=1     Stockfish lines per position (>1: a soft policy target over them)
#   OPENINGS=     an opening book (EPD or PGN, e.g. ../shared/openings/8moves_v3.pgn) instead of
#                 8 random plies from the start; BOOK_PLIES=2 random plies after each line
#   ARCH=small    the net (small, medium, ...); HEAD=scalar or wdl (its value head)
#   INIT=         start from this net instead of a fresh ARCH one (a file, or a shipped net's
#                 name: default, small), so a later session goes on from a shipped net with
#                 fresh games (give those a new SEED)
#   LR=0          peak learning rate (0: the optimiser's default, 0.05 for SGD)
#   EPOCHS=1.5    passes over the positions; LAMBDA=0.5: value target = LAMBDA x Stockfish's
#                 evaluation + (1 - LAMBDA) x the result
#   RUNGS=...     extra ladder flags (e.g. "--games-per-rung 60")
#   DATA=         more shard folders to train on (space-separated), beside the games made
#                 here in OUT/data; with GAMES=0 none are made, so a GPU machine can train on
#                 shards made elsewhere
#   TRAIN=...     extra training flags (e.g. "--batch-size 1024 --device cuda")
#   FZ=...        the command (default .venv/bin/frugalzero)
#   ENGINE=       the Stockfish executable (default: `stockfish` on PATH or in /usr/games);
#                 WORKERS=0 engines at once (0: one per core)
#   FIRST=0       the first part to make: parts before it were made (and trained on) elsewhere
#   STAGES="data train heldout ladder"   the stages to run (a GPU machine: data, then train)
#
# A part is a function of its seed (games written in number order, each engine cleared per
# game): made again anywhere with the same Stockfish build, it holds the same games in the same
# order (the shards' data byte for byte), so the data need not be kept or carried, only its
# recipe: a GPU lease makes the parts it trains on with the machine's own cores (gpu.sh).
#
# Resumable at every stage, across sessions: a part is done when its JSON is there (a part cut
# short is made again from scratch), training resumes from its run directory, and the ladder
# goes on from its PGN. Run the same command again to continue.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/strong}
GAMES=${GAMES:-22000}
PART=${PART:-2000}
SEED=${SEED:-2026}
MULTIPV=${MULTIPV:-1}
OPENINGS=${OPENINGS:-}
BOOK_PLIES=${BOOK_PLIES:-2}
ARCH=${ARCH:-small}
HEAD=${HEAD:-scalar}
EPOCHS=${EPOCHS:-1.5}
LAMBDA=${LAMBDA:-0.5}
INIT=${INIT:-}
LR=${LR:-0}
RUNGS=${RUNGS:-}
DATA=${DATA:-}
TRAIN=${TRAIN:-}
FZ=${FZ:-.venv/bin/frugalzero}  # "python -m frugalzero" where there is no venv
ENGINE=${ENGINE:-}
WORKERS=${WORKERS:-0}
FIRST=${FIRST:-0}
STAGES=" ${STAGES:-data train heldout ladder} "
stage() { [[ $STAGES == *" $1 "* ]]; }
mkdir -p "$OUT/data"

starts=(--random-plies 8)
if [ -n "$OPENINGS" ]; then
    starts=(--openings "$OPENINGS" --book-random-plies "$BOOK_PLIES")
fi
engines=(--workers "$WORKERS")
[ -n "$ENGINE" ] && engines+=(--engine "$ENGINE")
parts=$(((GAMES + PART - 1) / PART))
stage data || parts=0
for ((i = FIRST; i < parts; i++)); do
    json="$OUT/data/part-$i.json"
    [ -s "$json" ] && continue
    games=$((i == parts - 1 ? GAMES - i * PART : PART))
    rm -rf "$OUT/data/part-$i"
    echo "part $((i + 1))/$parts: $games games"
    $FZ sfgames --games "$games" --nodes 400 "${starts[@]}" "${engines[@]}" \
        --seed $((SEED + i)) --set engine.multipv="$MULTIPV" --out "$OUT/data/part-$i" --json \
        > "$json.tmp"
    mv "$json.tmp" "$json"
done

net="$OUT/$ARCH.safetensors"
if [ -n "$INIT" ]; then
    start=(--net "$INIT")
else
    start=(--arch "$ARCH" --value-head "$HEAD")
fi
if stage train && [ ! -s "$OUT/train.json" ]; then
    # shellcheck disable=SC2086  # DATA and TRAIN are words on purpose
    $FZ train --data "$OUT/data" $DATA "${start[@]}" --out "$net" --epochs "$EPOCHS" --lr "$LR" \
        --swa-cycles 0 --set value_lambda="$LAMBDA" $TRAIN --json > "$OUT/train.json.tmp"
    mv "$OUT/train.json.tmp" "$OUT/train.json"
fi
# the raw policy (1 node) on the held-out suite, the issue's best-move agreement
if stage heldout && [ ! -s "$OUT/heldout.json" ]; then
    $FZ eval-epd benchmarks/results/epd/heldout-sf12.epd --engine "net:$net?nodes=1" --json \
        > "$OUT/heldout.json.tmp"
    mv "$OUT/heldout.json.tmp" "$OUT/heldout.json"
fi
stage ladder || exit 0
# shellcheck disable=SC2086  # RUNGS is words on purpose
$FZ ladder "net:$net?nodes=400" --pgn "$OUT/ladder.pgn" --resume $RUNGS --json \
    | tee "$OUT/ladder.json"
