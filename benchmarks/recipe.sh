#!/usr/bin/env bash
# The strength recipe, compared at equal CPU: what to label Stockfish's games with, and how to
# train on them. Each recipe labels games, trains a fresh net, and is scored by its raw
# policy's best-move rate on the held-out suite (benchmarks/results/epd/heldout-sf12.epd: never
# trained on) and by its validation losses.
#
#   benchmarks/recipe.sh [GAMES] [STEPS] [RECIPE...]     (defaults: 3000 4000, every recipe)
#
# Equal CPU: MultiPV labels cost more per position (measured, docs/expert.md: 1464 positions/s
# at k 1, 936 at k 4, 838 at k 8 under the same load), so k 4 labels GAMES x 0.64 games and k 8
# GAMES x 0.57; every recipe trains the same STEPS steps of batch 256, except `medium`, whose
# steps are scaled by the two nets' training speed measured here once (bench train, kept in
# speed.json). Recipes that differ only in training reuse the k 1 games: value lambda 0 / 0.5
# (k1) / 1, and a WDL value head learning Stockfish's own WDL (wdl) or the one derived from
# its score (wdl-derived).
#
# Resumable: every stage writes its JSON under benchmarks/results/recipe/NAME/ (RECIPE_OUT)
# when it is done and is skipped when that JSON is there; data and nets live under runs/recipe/
# (RECIPE_WORK). The table printed at the end is the rows for RESULTS.md. Only the held-out
# column compares across label kinds: the validation losses are each recipe's own targets.
set -euo pipefail
cd "$(dirname "$0")/.."

GAMES=${1:-3000}
STEPS=${2:-4000}
ALL=(k1 k4 k8 lambda0 lambda1 wdl wdl-derived medium)
if [ $# -gt 2 ]; then RECIPES=("${@:3}"); else RECIPES=("${ALL[@]}"); fi
FZ="$PWD/.venv/bin/python -m frugalzero"
OUT=${RECIPE_OUT:-benchmarks/results/recipe}
WORK=${RECIPE_WORK:-runs/recipe}
SUITE=benchmarks/results/epd/heldout-sf12.epd
mkdir -p "$OUT" "$WORK"

# NAME -> "labels (the data folder it uses) | training flags"
declare -A DATA=([k1]=k1 [k4]=k4 [k8]=k8 [lambda0]=k1 [lambda1]=k1 [wdl]=k1 [wdl-derived]=k1
    [medium]=k1)
declare -A TRAIN=(
    [k1]="--set value_lambda=0.5"
    [k4]="--set value_lambda=0.5"
    [k8]="--set value_lambda=0.5"
    [lambda0]="--set value_lambda=0"
    [lambda1]="--set value_lambda=1"
    [wdl]="--value-head wdl --set value_lambda=0.5"
    [wdl-derived]="--value-head wdl --set value_lambda=0.5 --set expert_wdl=false"
    [medium]="--set value_lambda=0.5"
)
declare -A ARCH=([medium]=medium)
declare -A SHARE=([k1]=100 [k4]=64 [k8]=57)  # games per 100 of GAMES at equal labelling CPU

label() {  # the games of a data folder, once
    local name=$1 k=${1#k}
    local json="$OUT/data-$name.json"
    [ -s "$json" ] && return
    local games=$((GAMES * SHARE[$name] / 100))
    echo "label $name: $games games, MultiPV $k"
    # shellcheck disable=SC2086
    $FZ sfgames --games "$games" --nodes 400 --random-plies 8 --seed 2027 \
        --set engine.multipv="$k" --out "$WORK/data-$name" --json > "$json.tmp"
    mv "$json.tmp" "$json"
}

steps_for() {  # training steps of a recipe at equal training CPU
    local arch=${ARCH[$1]:-small}
    if [ "$arch" = small ]; then echo "$STEPS"; return; fi
    if [ ! -s "$OUT/speed.json" ]; then
        small=$($FZ bench train --arch small --rounds 3 --json | "$PWD/.venv/bin/python" -c \
            'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')
        big=$($FZ bench train --arch "$arch" --rounds 3 --json | "$PWD/.venv/bin/python" -c \
            'import json,sys; print(json.load(sys.stdin)["samples_per_s"])')
        echo "{\"small\": $small, \"$arch\": $big}" > "$OUT/speed.json"
    fi
    "$PWD/.venv/bin/python" -c "import json; s=json.load(open('$OUT/speed.json')); \
print(max(1, round($STEPS * s['$arch'] / s['small'])))"
}

for name in "${RECIPES[@]}"; do
    [ -n "${DATA[$name]:-}" ] || { echo "unknown recipe $name (known: ${ALL[*]})" >&2; exit 2; }
    dir="$OUT/$name"
    mkdir -p "$dir"
    label "${DATA[$name]}"
    if [ ! -s "$dir/train.json" ]; then
        steps=$(steps_for "$name")
        echo "train $name: $steps steps"
        # shellcheck disable=SC2086  # the flags are words on purpose
        $FZ train --data "$WORK/data-${DATA[$name]}" --arch "${ARCH[$name]:-small}" \
            --out "$WORK/$name.safetensors" --steps "$steps" --swa-cycles 0 \
            ${TRAIN[$name]} --json > "$dir/train.json.tmp"
        mv "$dir/train.json.tmp" "$dir/train.json"
    fi
    if [ ! -s "$dir/epd.json" ]; then
        echo "score $name"
        $FZ eval-epd "$SUITE" --engine "net:$WORK/$name.safetensors?nodes=1" --json \
            > "$dir/epd.json.tmp"
        mv "$dir/epd.json.tmp" "$dir/epd.json"
    fi
done

"$PWD/.venv/bin/python" - "$OUT" "${RECIPES[@]}" <<'EOF'
import json, sys
from pathlib import Path
out, names = Path(sys.argv[1]), sys.argv[2:]
print("| recipe | training positions | steps | raw policy top-1 (held-out, 95%) "
      "| validation policy loss | validation value loss | validation top-1 |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name in names:
    train = json.loads((out / name / "train.json").read_text())
    pct, lo, hi = json.loads((out / name / "epd.json").read_text())["top1_pct_ci95"]
    print(f"| {name} | {train['positions']:,} | {train['steps']:,} | {pct:.1f}% [{lo:.1f}, {hi:.1f}] "
          f"| {train['traversing_policy_loss']:.3f} | {train['traversing_value_loss']:.3f} "
          f"| {100 * train['traversing_top1']:.1f}% |")
EOF
