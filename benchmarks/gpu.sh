#!/usr/bin/env bash
# The GPU measurements, for a session that is lent a GPU machine (one H100 or H200 with 16
# cores): the CUDA tests and the whole suite with CUDA as every test's `auto` device, the
# evaluator's, training's, self-play's and the UCI engine's speed on the GPU (each against the
# card's matmul peak or the bare net, measured in the same run), then each data method for one
# GPU-hour and its ladder rating.
#
#   benchmarks/gpu.sh [STEP...]      steps: build test bench hours ladder (default: all)
#   benchmarks/gpu.sh build strength issue 46 in one lease: Stockfish's games made there on
#                                    every core, then a net trained on them on the GPU and
#                                    its raw policy on the held-out suite (not in the default)
#   benchmarks/gpu.sh wheels         here, before the lease: the wheels `build` installs there
#
# The machine has no network and its own Python (with PyTorch), so `build` installs the pure-
# Python wheels `wheels` put in .dev/wheels (carry .dev) and builds the native core there with
# its CMake, ninja and compiler: `pip install --no-build-isolation -e .`.
# A lease is short and its machine has no network: PY names an interpreter that already has
# the dependencies (default .venv/bin/python), SUITE_S caps the whole suite (default 600 s; it
# runs on WORKERS pytest-xdist workers, default 14, when pytest-xdist is there) and BENCH_S each
# benchmark (default 150 s). Records go to GPU_OUT (default benchmarks/results/gpu): env.txt,
# cuda-tests.log, suite.log, bench.jsonl (one line per benchmark: its command and JSON), and
# each hour's record as compare.sh keeps it. The hours and the ladder resume; test and bench
# run again. `strength` takes S_GAMES (40000: ~4 minutes on 15 cores at 400 nodes), S_ARCH
# (medium; `large` and `attention` are the sizes to compare it with), S_EPOCHS (1.5), S_BATCH
# (1024), S_LR (0.2) and S_DEVICE (cuda), and writes to
# $GPU_OUT/strength: the data's and the training's JSON, the net, heldout.json. The data stays
# on the machine (runs/gpu-strength): a lease's files come back only under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${GPU_OUT:-benchmarks/results/gpu}
SUITE_S=${SUITE_S:-600}
BENCH_S=${BENCH_S:-150}
WORKERS=${WORKERS:-14}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
STEPS=("${@:-build test bench hours ladder}")
read -r -a STEPS <<< "${STEPS[*]}"

bench() {  # one `frugalzero bench` into bench.jsonl, with its command
    echo "== bench $*"
    local line
    line=$(timeout "$BENCH_S" "$PY" -m frugalzero bench "$@" --json 2>>"$OUT/bench.err")
    echo "$line"
    "$PY" -c 'import json, sys; print(json.dumps({"command": sys.argv[1], "result": json.loads(sys.argv[2])}))' \
        "frugalzero bench $*" "${line:-null}" >> "$OUT/bench.jsonl"
}

WHEELS=(scikit-build-core nanobind packaging pathspec chess rich markdown-it-py mdurl pygments)

for step in "${STEPS[@]}"; do
    case $step in
        wheels)
            mkdir -p .dev/wheels
            "$PY" -m pip download -q --only-binary=:all: --no-deps -d .dev/wheels "${WHEELS[@]}"
            ls .dev/wheels ;;
        build)
            "$PY" -m pip install -q --no-index --find-links .dev/wheels "${WHEELS[@]}"
            "$PY" -m pip install -q --no-index --no-build-isolation --no-deps -e . \
                || { echo "the native core did not build" >&2; exit 1; }
            "$PY" -c "import frugalzero._native" ;;
        test)
            {
                date -u
                nvidia-smi -L
                "$PY" -c "import torch, chess; print('torch', torch.__version__, 'cuda', \
torch.version.cuda, torch.cuda.get_device_name(0), 'python-chess', chess.__version__)"
                echo "cores $(nproc)"
            } > "$OUT/env.txt" 2>&1
            cat "$OUT/env.txt"
            "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_planes.py 2>&1 \
                | tee "$OUT/cuda-tests.log" | tail -3
            xdist=()
            "$PY" -c "import xdist" 2>/dev/null && xdist=(-n "$WORKERS")
            timeout "$SUITE_S" "$PY" -m pytest -v -rf --tb=short -p no:cacheprovider \
                "${xdist[@]}" 2>&1 | tee "$OUT/suite.log" | grep -E "FAILED|ERROR|passed|failed"
            ;;
        bench)
            : > "$OUT/bench.jsonl"
            bench nn --arch small --device cuda --rounds 5
            bench nn --arch medium --device cuda --rounds 5 --batch 1024
            bench train --arch small --device cuda --rounds 3 --seconds 3
            bench train --arch medium --device cuda --rounds 3 --seconds 3 --batch 1024
            bench selfplay --arch small --device cuda --rounds 2 --seconds 5 --core native,python
            bench selfplay --arch small --device cuda --rounds 2 --seconds 5 --workers 1,2,4
            bench uci --net medium --rounds 2 --positions 8
            bench uci --net small --rounds 2 --positions 8
            bench movegen
            ;;
        hours)  # the five methods, one GPU-hour each, from nothing
            PRESET=gpu-1h benchmarks/compare.sh 60 runs/gpu-1h ;;
        ladder)
            for method in sfgames eps-explore selfplay contempt gumbel; do
                net=benchmarks/results/60min-gpu/$method/final.safetensors
                json=benchmarks/results/60min-gpu/$method/ladder.json
                [ -f "$net" ] && [ ! -s "$json" ] || continue
                "$PY" -m frugalzero ladder "net:$net?nodes=400" \
                    --pgn "benchmarks/results/60min-gpu/$method/ladder.pgn" --resume --json \
                    > "$json.tmp" && mv "$json.tmp" "$json"
            done ;;
        strength)
            dir="$OUT/strength" data=runs/gpu-strength/data
            mkdir -p "$dir"
            if [ ! -s "$dir/data.json" ]; then
                rm -rf "$data"
                "$PY" -m frugalzero sfgames --games "${S_GAMES:-40000}" --nodes 400 \
                    --max-plies 300 --seed 4600 --out "$data" --json > "$dir/data.json.tmp" \
                    && mv "$dir/data.json.tmp" "$dir/data.json"
            fi
            cat "$dir/data.json"
            "$PY" -m frugalzero train --data "$data" --arch "${S_ARCH:-medium}" \
                --out "$dir/${S_ARCH:-medium}.safetensors" --epochs "${S_EPOCHS:-1.5}" \
                --lr "${S_LR:-0.2}" --batch-size "${S_BATCH:-1024}" --device "${S_DEVICE:-cuda}" \
                --swa-cycles 0 --set value_lambda=1 --json > "$dir/train.json" \
                && tail -c 600 "$dir/train.json"
            "$PY" -m frugalzero eval-epd benchmarks/results/epd/heldout-sf12.epd \
                --engine "net:$dir/${S_ARCH:-medium}.safetensors?nodes=1" --json \
                | tee "$dir/heldout.json" ;;
        *) echo "unknown step $step (wheels build test bench hours ladder strength)" >&2; exit 2 ;;
    esac
done
