#!/usr/bin/env bash
# The GPU measurements, for a session that is lent a GPU machine (one H100 or H200 with 16
# cores): the CUDA tests and the whole suite with CUDA as every test's `auto` device, the
# evaluator's, training's, self-play's and the UCI engine's speed on the GPU (each against the
# card's matmul peak or the bare net, measured in the same run), then each data method for one
# GPU-hour and its ladder rating.
#
#   benchmarks/gpu.sh [STEP...]      steps: build test bench hours ladder (default: all)
#   benchmarks/gpu.sh build games strength   issue 46 in one lease: the recipe's next parts of
#                                    Stockfish's games made there on its cores, then a net
#                                    trained on them on the GPU and its raw policy on the
#                                    held-out suite (not in the default)
#   benchmarks/gpu.sh wheels engine openings   here, before the lease: what `build` installs
#                                    there (wheels, Stockfish) and the books `games` and
#                                    `table` play from
#   benchmarks/gpu.sh shards DIR...  here, before the lease: shards for `strength` to train on
#   benchmarks/gpu.sh slim | unslim  here, around the calls: the records out of the way
#
# The machine has no network and its own Python (with PyTorch), so `build` installs the pure-
# Python wheels `wheels` put in .dev/wheels (carry .dev) and builds the native core there with
# its CMake, ninja and compiler: `pip install --no-build-isolation -e .`.
# A lease is short and its machine has no network: PY names an interpreter that already has
# the dependencies (default .venv/bin/python), SUITE_S caps the whole suite (default 600 s; it
# runs on WORKERS pytest-xdist workers, default 14, when pytest-xdist is there) and BENCH_S each
# benchmark (default 150 s). Records go to GPU_OUT (default benchmarks/results/gpu): env.txt,
# cuda-tests.log, suite.log, bench.jsonl (one line per benchmark: its command and JSON), and
# the hours' experiment record as compare.sh keeps it. The hours and the ladder resume; test and bench
# run again.
# `games` makes parts of benchmarks/train_default.sh's runs/big recipe (5,000 games each, part i
# from seed 4600 + i, the 2-move book plus 2 random plies, 400 nodes) from part G_FIRST (11:
# net:default was trained on 0-10) with G_WORKERS engines (0: every core) for G_S seconds (300),
# in the background while the next steps run; a part cut by the clock has no JSON, so nothing
# counts it (`parts_made`) and a later `games` makes it again from scratch. A part is a
# function of its seed, so a part made there is the part this machine would make: the data
# never travels, only Stockfish (`engine`, here: the Debian binary, xz-packed, ~21 MB of the
# 64 MiB a call carries; `build` unpacks it) and the book (`openings`). Its log and each part's
# JSON go to $GPU_OUT/games, with each part's fingerprint (its PGN's SHA-256 without the Date
# lines), compared with those `digests` kept here in benchmarks/results/data/big-pgn.sha256:
# the check that a part made there is the part made here. (G_PART: another part size, for a
# rehearsal here; not the recipe's.)
# `strength` trains on the parts `games` made (waiting for it; run alone, it makes them first)
# and takes S_ARCH (medium; `large` and `attention` are the sizes to compare it with), S_EPOCHS
# (1.5), S_BATCH (1024), S_LR (0.2) and S_DEVICE (cuda), and writes to $GPU_OUT/strength: the
# training's JSON, the net, heldout.json. The data stays on the machine (runs/big): a lease's
# files come back only under $OUT.
# S_DATA names shard folders carried there instead (no games are made), S_INIT a net to go on
# from (a file or a shipped name) instead of a fresh S_ARCH, S_NAME the net's file name,
# S_LAMBDA the value target's share of Stockfish's evaluation (1), S_HELDOUT=0 skips the held-
# out suite. S_STOP (seconds, 0 = none) stops training cleanly (SIGINT: a checkpoint) before
# the lease ends; the run directory then comes back in pieces of 15 MB
# ($GPU_OUT/strength/run.tar.part-*): `cat run.tar.part-* | tar -x -C runs/gpu-strength` and
# the same command resumes it there or on any machine, exactly.
# `cuda` writes env.txt and runs the CUDA tests alone (the `test` step's first half).
# `table` plays the clocked head to head of issue 46 there: `net:medium` against `net:small`
# at 10+0.1 through `frugalzero uci`, T_GAMES (40) at T_CONC (4) at once, on the 20 openings of
# the CPU's table (`openings`, here, writes them to .dev/openings/clock.epd), cut at T_S (500)
# seconds; $GPU_OUT/table/gpu-10+0.1.{pgn,json} (the PGN keeps the games a cut run finished).
# `shards DIR...`, here: copies the shards (*.fzs, not the PGN) of each DIR to .dev/data/NAME
# for S_DATA. What travels is capped at 64 MiB and the tracked tree alone is ~83 MB, most of it
# benchmarks/results: `slim`, here, moves that folder's records (all but epd/) out of the
# checkout to SLIM_DIR (default ../gpu-slim) and prints what would travel; `unslim` brings
# them back after the calls. With the tree at ~20 MB, ~44 MB of shards travel (~6 million
# positions).
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

GAMES_PID=
parts_made() {  # the parts `games` finished, as folders
    local json
    for json in runs/big/data/part-*.json; do
        [ -s "$json" ] && echo "${json%.json}"
    done
}
DIGESTS=benchmarks/results/data/big-pgn.sha256  # parts made on other machines
digests() {  # each finished part's PGN hashed, its Date lines aside: a part's fingerprint
    local part sum
    for part in $(parts_made); do
        sum=$(cat "$part"/*.pgn | grep -v '^\[Date ' | sha256sum | cut -c1-64)
        echo "$sum $(basename "$part")"
    done
}

for step in "${STEPS[@]}"; do
    case $step in
        digests)  # here: the fingerprints of the parts made on this machine, kept in $DIGESTS
            mkdir -p "$(dirname "$DIGESTS")"
            { cat "$DIGESTS" 2>/dev/null; digests; } | sort -u -k2,2 -V > "$DIGESTS.tmp"
            mv "$DIGESTS.tmp" "$DIGESTS" && cat "$DIGESTS" ;;
        engine)  # here, before the lease: Stockfish for `games`, packed to travel
            mkdir -p .dev/bin
            xz -6 -T0 -c "${ENGINE:-/usr/games/stockfish}" > .dev/bin/stockfish.xz.tmp \
                && mv .dev/bin/stockfish.xz.tmp .dev/bin/stockfish.xz
            ls -la .dev/bin ;;
        games)
            mkdir -p "$OUT/games"
            [ -x runs/bin/stockfish ] || { echo "games: no runs/bin/stockfish: build" >&2; exit 1; }
            (
                timeout "${G_S:-300}" env FZ="$PY -m frugalzero" ENGINE=runs/bin/stockfish \
                    OPENINGS=.dev/openings/2moves_v1.epd BOOK_PLIES=2 GAMES=300000 SEED=4600 \
                    PART="${G_PART:-5000}" FIRST="${G_FIRST:-11}" WORKERS="${G_WORKERS:-0}" \
                    STAGES=data benchmarks/train_default.sh runs/big
                cp runs/big/data/part-*.json "$OUT/games/" 2>/dev/null
                echo "games: $(parts_made | wc -l) parts made"
                kept=$DIGESTS
                [ -n "${G_PART:-}" ] && kept=/dev/null  # other part sizes: other parts
                digests | tee "$OUT/games/pgn.sha256" | while read -r sum part; do
                    known=$(grep " $part\$" "$kept" 2>/dev/null | cut -c1-64)
                    [ -z "$known" ] || echo "$part: $([ "$known" = "$sum" ] \
                        && echo the same games as made before || echo DIFFERENT games)"
                done
            ) > "$OUT/games/games.log" 2>&1 &
            GAMES_PID=$! ;;
        wheels)
            mkdir -p .dev/wheels
            "$PY" -m pip download -q --only-binary=:all: --no-deps -d .dev/wheels "${WHEELS[@]}"
            ls .dev/wheels ;;
        shards)
            [ "${STEPS[0]}" = shards ] || { echo "usage: gpu.sh shards DIR..." >&2; exit 2; }
            for dir in "${STEPS[@]:1}"; do  # `shards DIR...`: the folders
                mkdir -p ".dev/data/$(basename "$dir")"
                cp "$dir"/*.fzs ".dev/data/$(basename "$dir")/"
            done
            du -sh .dev/data
            break ;;
        slim)
            slim=${SLIM_DIR:-../gpu-slim}
            mkdir -p "$slim"
            for d in benchmarks/results/*; do
                [ "$d" = benchmarks/results/epd ] || [ "$d" = "$OUT" ] || mv "$d" "$slim/"
            done
            echo "travels: $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) bytes tracked + $(du -sb .dev 2>/dev/null | cut -f1) in .dev (64 MiB = 67108864)"
            echo "bring the records back with: benchmarks/gpu.sh unslim" ;;
        unslim)
            slim=${SLIM_DIR:-../gpu-slim}
            for d in "$slim"/*; do [ -e "$d" ] && mv "$d" benchmarks/results/; done
            rmdir "$slim" && git status --short benchmarks/results | head ;;
        build)
            "$PY" -m pip install -q --no-index --find-links .dev/wheels "${WHEELS[@]}"
            "$PY" -m pip install -q --no-index --no-build-isolation --no-deps -e . \
                || { echo "the native core did not build" >&2; exit 1; }
            "$PY" -c "import frugalzero._native" || exit 1
            if [ -s .dev/bin/stockfish.xz ] && [ ! -x runs/bin/stockfish ]; then
                mkdir -p runs/bin  # outside .dev, which is what a call carries
                sf=runs/bin/stockfish
                unpack='import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())'
                "$PY" -c "$unpack" .dev/bin/stockfish.xz "$sf.tmp" && chmod 755 "$sf.tmp" \
                    && mv "$sf.tmp" "$sf"
                echo uci | "$sf" | grep "^id name"
            fi ;;
        test|cuda)
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
            [ "$step" = cuda ] && continue
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
            bench selfplay --arch small --device cuda --rounds 2 --seconds 5
            bench selfplay --arch small --device cuda --rounds 2 --seconds 5 --workers 1,2,4
            bench uci --net medium --rounds 2 --positions 8
            bench uci --net small --rounds 2 --positions 8
            bench movegen
            ;;
        hours)  # the five methods, one GPU-hour each, from nothing (an experiment spec)
            benchmarks/compare.sh methods-gpu runs/gpu-1h ;;
        ladder)
            for method in sfgames eps-explore selfplay contempt gumbel; do
                # the final net is the run's (records keep its digest, not the net)
                [ -f "runs/gpu-1h/arms/$method/seed-0/state.json" ] || continue
                net=$("$PY" -m frugalzero run --dir "runs/gpu-1h/arms/$method/seed-0" --json \
                    | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["final_net"])')
                json=benchmarks/results/60min-gpu/$method/ladder.json
                [ -f "$net" ] && [ ! -s "$json" ] || continue
                "$PY" -m frugalzero ladder "net:$net?nodes=400" \
                    --pgn "benchmarks/results/60min-gpu/$method/ladder.pgn" --resume --json \
                    > "$json.tmp" && mv "$json.tmp" "$json"
            done ;;
        openings)  # here, before the lease: the CPU table's 20 openings, as FEN, for `table`,
            mkdir -p .dev/openings  # and the book of the recipe's parts, for `games`
            install -m 644 ../shared/openings/2moves_v1.epd .dev/openings/
            "$PY" - ../shared/openings/8moves_v3.pgn benchmarks/results/net-choice/cpu-10+0.1-ft.pgn \
                > .dev/openings/clock.epd <<'EOF'
import re
import sys

from frugalzero.chess.positions import load_book

book, played = sys.argv[1:]
names = set(re.findall(r'\[Opening "([^"]+)"\]', open(played).read()))  # e.g. 8moves_v3.pgn#228
print("\n".join(o.board().fen() for o in load_book(book) if o.name in names))
EOF
            wc -l .dev/openings/clock.epd ;;
        table)  # the CPU's clocked head to head of the shipped nets, played on this machine
            mkdir -p "$OUT/table"
            timeout "${T_S:-500}" "$PY" -m frugalzero match "net:medium?tc=10+0.1" \
                "net:small?tc=10+0.1" --games "${T_GAMES:-40}" --concurrency "${T_CONC:-4}" \
                --openings "${T_BOOK:-.dev/openings/clock.epd}" --seed 28 \
                --pgn "$OUT/table/gpu-10+0.1.pgn" --json > "$OUT/table/gpu-10+0.1.json"
            tail -c 400 "$OUT/table/gpu-10+0.1.json" ;;
        strength)
            "$PY" -c "import frugalzero._native" 2>/dev/null || {
                echo "strength: frugalzero's native core does not import with $PY: run the" \
                    "build step first (and leave PYTHONPATH alone: src/ has no extension)" >&2
                exit 1
            }
            dir="$OUT/strength" name=${S_NAME:-${S_ARCH:-medium}}
            mkdir -p "$dir"
            if [ -n "${S_DATA:-}" ]; then
                read -r -a shards <<< "$S_DATA"
            else
                if [ -z "$GAMES_PID" ] && [ -z "$(parts_made)" ]; then
                    "$0" games || exit 1  # no parts yet: make them first
                fi
                [ -n "$GAMES_PID" ] && wait "$GAMES_PID"
                GAMES_PID=
                mapfile -t shards < <(parts_made)
                [ "${#shards[@]}" -gt 0 ] || { echo "strength: no parts were made" >&2; exit 1; }
                echo "strength: ${#shards[@]} parts: ${shards[*]}"
            fi
            start=(--arch "${S_ARCH:-medium}")
            [ -n "${S_INIT:-}" ] && start=(--net "$S_INIT")
            stop=()
            [ "${S_STOP:-0}" -gt 0 ] && stop=(timeout -s INT "$S_STOP")
            "${stop[@]}" "$PY" -m frugalzero train --data "${shards[@]}" "${start[@]}" \
                --out "$dir/$name.safetensors" --run-dir "runs/gpu-strength/$name.run" \
                --epochs "${S_EPOCHS:-1.5}" --lr "${S_LR:-0.2}" --batch-size "${S_BATCH:-1024}" \
                --device "${S_DEVICE:-cuda}" --swa-cycles 0 --checkpoint-minutes 2 \
                --set value_lambda="${S_LAMBDA:-1}" --json > "$dir/train.json"
            cp "runs/gpu-strength/$name.run/metrics.jsonl" "$dir/" 2>/dev/null
            if [ ! -s "$dir/$name.safetensors" ]; then  # cut short: bring the checkpoint back
                echo "training stopped before its end; packing its run directory"
                tar -C runs/gpu-strength --exclude tensorboard -cf - "$name.run" \
                    | split -b 15M - "$dir/run.tar.part-"
                ls -la "$dir"
            else
                tail -c 600 "$dir/train.json"
                [ "${S_HELDOUT:-1}" = 0 ] || "$PY" -m frugalzero eval-epd \
                    benchmarks/results/epd/heldout-sf12.epd \
                    --engine "net:$dir/$name.safetensors?nodes=1" --json | tee "$dir/heldout.json"
            fi ;;
        *) echo "unknown step $step (wheels engine digests shards openings slim unslim build" \
                "test cuda bench hours ladder games strength table)" >&2; exit 2 ;;
    esac
done
if [ -n "$GAMES_PID" ]; then  # the games end with the command that started them
    wait "$GAMES_PID"
    tail -n 3 "$OUT/games/games.log"
fi
