#!/usr/bin/env bash
# search-contempt's self-play tables (Joshi 2025, Fig. 2-4) with the shipped net: self-play of
# net:default for N_scl in {1, 5, 10, 32, inf} and plain PUCT with the paper's two temperature
# settings, GAMES games each from the start position, NODES simulations a move.
#
#   benchmarks/contempt.sh [GAMES] [NODES]
#
# NET names the net (default: default; the records were played by the stage-1 net, see
# CONTEMPT.md).
# Resumable: every configuration's games are PGN files of 10 games under
# benchmarks/results/contempt/selfplay-NODES/NAME/ (each written whole); a run counts the games
# there and plays only the missing ones, seeded by that count so they are new games. A killed
# run loses at most the unwritten games of its current batch. Recount any table with
#   frugalzero games benchmarks/results/contempt/selfplay-400/nscl5 --json
#
# The paper's settings (lc0 0.31 configs in the author's repository, amjshl/lc0_v31_sc):
# hybrid runs have no root noise and temperature 0.7 decaying over 5 moves to a floor of 0.1;
# "PUCT tau 1" is that schedule with Dirichlet noise (epsilon 0.1, alpha 0.12); "PUCT tau 2"
# is 0.9 for 20 moves then 0.6 (lc0 decays 0.9 -> 0.63 over moves 20-39; we step at move 20),
# with the same noise. Both sides search with the same settings; neither resigns.
set -euo pipefail
cd "$(dirname "$0")/.."

GAMES=${1:-100}
NODES=${2:-400}
NET=${NET:-default}
PY="$PWD/.venv/bin/python"
OUT=benchmarks/results/contempt/selfplay-$NODES
WORK=runs/contempt/selfplay-$NODES

HYBRID="--set search.root_noise=false --set search.temperature=0.7 \
 --set search.temperature_decay_plies=10 --set search.final_temperature=0.1 \
 --set search.temperature_plies=100000"
NOISE="--set search.root_noise=true --set search.dirichlet_epsilon=0.1 \
 --set search.dirichlet_alpha=0.12"
declare -A CONFIGS=(
    [nscl1]="--nscl 1 $HYBRID"
    [nscl5]="--nscl 5 $HYBRID"
    [nscl10]="--nscl 10 $HYBRID"
    [nscl32]="--nscl 32 $HYBRID"
    [nsclinf]="$HYBRID"
    [puct-tau1]="$HYBRID $NOISE"
    [puct-tau2]="--set search.temperature=0.9 --set search.temperature_plies=40 \
 --set search.final_temperature=0.6 $NOISE"
)
ORDER=(nscl5 nsclinf puct-tau1 puct-tau2 nscl10 nscl32 nscl1)

count() {  # finished games in a folder's PGN files
    cat "$1"/*.pgn 2>/dev/null | grep -c '^\[Result ' || true
}

for name in "${ORDER[@]}"; do
    dir="$OUT/$name"
    mkdir -p "$dir"
    have=$(count "$dir")
    while [ "$have" -lt "$GAMES" ]; do
        echo "$name: $have of $GAMES games"
        # shellcheck disable=SC2086  # the settings are words on purpose
        "$PY" -m frugalzero selfplay --net "$NET" --games $((GAMES - have)) --sims "$NODES" \
            --seed "$have" --out "$WORK/$name" --pgn "$dir" \
            --concurrent $((GAMES - have)) --games-per-shard 10 \
            --set search.resign_threshold=-1 ${CONFIGS[$name]} > /dev/null
        have=$(count "$dir")
    done
    echo "$name: $have games"
done
for name in "${ORDER[@]}"; do
    printf '%-10s ' "$name"
    "$PY" -m frugalzero games "$OUT/$name" --json --plies 20 | "$PY" -c \
        'import json,sys; r=json.load(sys.stdin); print(r["games"], r["white_wins"], r["draws"], r["black_wins"], r["decisive_over_draws_ci95"], r["duplicates_after_move"])'
done
