#!/usr/bin/env bash
# Every data method from nothing on the same wall-clock budget (cpu-1h preset, its minutes
# overridden, its per-iteration settings pinned to the comparison's), one after the other on
# this machine; then the Elo-against-compute plot.
#   benchmarks/compare.sh [MINUTES] [OUT] [--set key=value ...]   (defaults: 60, runs/compare)
# METHODS="sfgames eps-explore" runs only those. A method whose directory already holds a run
# is resumed where it stopped (a finished one is left as it is). Each finished run's record
# (config.toml, state.json, elo.csv) is copied to benchmarks/results/MINUTESmin/METHOD/, which
# is committed with the final net's SHA-256 (final.sha256), not the net (benchmarks/README.md):
# the net stays in its run folder on the machine that made it, and the record's config remakes
# it; the plot is drawn from the committed records (a ladder's --json goes there too, as
# ladder.json, with its games in ladder.pgn, from which the rating recomputes).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-60}
OUT=${2:-runs/compare}
METHODS=${METHODS:-sfgames eps-explore selfplay contempt gumbel}
PRESET=${PRESET:-cpu-1h}  # gpu-1h: the GPU hours (benchmarks/gpu.sh), records in ...min-gpu
FZ=.venv/bin/frugalzero
RESULTS=benchmarks/results/${MINUTES}min${PRESET#cpu-1h}
RESULTS=${RESULTS/gpu-1h/-gpu}
# the comparison's settings, pinned: cpu-1h as it was when the methods were compared (300 games
# and 600 steps plus one SWA epoch an iteration, a 400,000-position window); the preset has
# since been tuned for Stockfish's games alone, and 3,000 self-play games would not fit an hour;
# every iteration whole (budget.fit=false), as the budget was checked then
compared=(--set generate.games=300 --set generate.window=400000 --set train.steps=600
    --set train.swa_cycles=1 --set budget.fit=false)
if [[ $PRESET != cpu-1h ]]; then
    compared=()  # the pinned settings are the CPU comparison's
fi
common=(--preset "$PRESET" --set "budget.minutes=$MINUTES" "${compared[@]}" "${@:3}")
# self-play methods: a small search so that an iteration fits the budget several times over
# (Gumbel's sequential halving is built to improve the policy with few simulations)
games="--set generate.games=48"
selfplay="$games --set selfplay.search.simulations=32"
declare -A extra=(
    [sfgames]=""
    [eps-explore]="--set generate.steps=300 --set explore.engine.nodes=400"
    [selfplay]="$selfplay"
    [contempt]="$selfplay --set generate.nscl_raise=2"
    [gumbel]="$games --set selfplay.search.simulations=16"
)
if [[ $PRESET == gpu-1h ]]; then  # the preset's search; iterations of 1,000 self-play games
    games="--set generate.games=1000"
    extra=(
        [sfgames]=""
        [eps-explore]="--set generate.steps=3000 --set explore.engine.nodes=400"
        [selfplay]="$games"
        [contempt]="$games --set generate.nscl_raise=2"
        [gumbel]="$games --set selfplay.search.simulations=32"
    )
fi
for method in $METHODS; do
    if [[ -e "$OUT/$method/config.toml" ]]; then
        $FZ run --dir "$OUT/$method"
    else
        # shellcheck disable=SC2086  # the extra options are words on purpose
        $FZ run "${common[@]}" --method "$method" ${extra[$method]} --dir "$OUT/$method"
    fi
    mkdir -p "$RESULTS/$method"
    cp "$OUT/$method"/{config.toml,state.json,elo.csv} "$RESULTS/$method/"
    # the run's own summary names its final net (a finished run only reports, plays nothing);
    final=$($FZ run --dir "$OUT/$method" --json \
        | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["final_net"])')
    # the net stays in the run directory; the record keeps its digest (benchmarks/README.md)
    sha256sum "$final" | sed "s|  .*|  $method/final.safetensors|" > "$RESULTS/$method/final.sha256"
done
.venv/bin/python benchmarks/plot_elo.py "$RESULTS" "benchmarks/elo_vs_compute-${MINUTES}min.png"
