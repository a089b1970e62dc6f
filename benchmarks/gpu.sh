#!/usr/bin/env bash
# The GPU measurements, ready for a session that is lent a GPU machine (one H100 or H200 with
# 16 cores): the test suite on CUDA, self-play with 1, 4 and 15 workers on one inference
# process, training speed, then each data method for one GPU-hour and its ladder rating.
# Everything goes to benchmarks/results/gpu/ (JSON per bench; each hour's record as compare.sh
# keeps it). Resumable: a finished step's output is kept and the step skipped.
#
#   benchmarks/gpu.sh [STEP...]      steps: test bench hours ladder (default: all, in order)
set -euo pipefail
cd "$(dirname "$0")/.."
FZ=.venv/bin/frugalzero
OUT=benchmarks/results/gpu
mkdir -p "$OUT"
STEPS=("${@:-test bench hours ladder}")
read -r -a STEPS <<< "${STEPS[*]}"

once() {  # FILE COMMAND...: run COMMAND into FILE unless FILE is there already
    local file=$1
    shift
    [ -s "$file" ] && return 0
    "$@" > "$file.tmp" && mv "$file.tmp" "$file"
}

for step in "${STEPS[@]}"; do
    case $step in
        test)
            nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/device.txt"
            once "$OUT/test.txt" make test ;;
        bench)
            once "$OUT/bench-nn.json" $FZ bench nn --arch small --batch 1024 --json
            once "$OUT/bench-nn-medium.json" $FZ bench nn --arch medium --batch 1024 --json
            once "$OUT/bench-selfplay-workers.json" \
                $FZ bench selfplay --arch small --sims 64 --workers 1,4,15 --json
            once "$OUT/bench-train.json" $FZ bench train --arch small --json
            once "$OUT/bench-train-medium.json" $FZ bench train --arch medium --json ;;
        hours)  # the five methods, one GPU-hour each, from nothing
            PRESET=gpu-1h benchmarks/compare.sh 60 runs/gpu-1h ;;
        ladder)
            for method in sfgames eps-explore selfplay contempt gumbel; do
                net=benchmarks/results/60min-gpu/$method/final.safetensors
                [ -f "$net" ] || continue
                once "benchmarks/results/60min-gpu/$method/ladder.json" $FZ ladder \
                    "net:$net?nodes=400" --pgn "benchmarks/results/60min-gpu/$method/ladder.pgn" \
                    --resume --json
            done ;;
        *) echo "unknown step $step (test bench hours ladder)" >&2; exit 2 ;;
    esac
done
