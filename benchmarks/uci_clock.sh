#!/usr/bin/env bash
# The shipped net under a clock on the ladder, played through `frugalzero uci` as a GUI plays it,
# for this checkout's engine and for the engine of an earlier commit, alternating in steps so a
# change in the machine's speed falls on both alike.
#
#   benchmarks/uci_clock.sh [GAMES_PER_RUNG] [BEFORE_COMMIT] [TC]
#
# Resumable: each step counts the games already in the PGN and plays only the missing ones, so
# a killed run (or a later session) goes on where it stopped, and a larger GAMES_PER_RUNG
# narrows a finished rating. Records: benchmarks/results/uci-clock/{after,before}/ladder.{pgn,json}.
# The earlier engine runs from a git worktree under runs/ with this checkout's virtualenv; its
# path is part of its name in the PGN, so a run from another checkout (one kept still while the
# games are played) passes the same ENGINE_DIR to resume.
set -euo pipefail
cd "$(dirname "$0")/.."

GAMES=${1:-30}
BEFORE=${2:-bded210}  # the last commit before the engine's speed work
TC=${3:-10+0.1}
PY="$PWD/.venv/bin/python"
OUT=benchmarks/results/uci-clock
ENGINE_DIR=${ENGINE_DIR:-"$PWD/runs/engine-$BEFORE"}

mkdir -p "$OUT/after" "$OUT/before"
if [ ! -d "$ENGINE_DIR" ]; then
    git worktree add --detach "$ENGINE_DIR" "$BEFORE"
fi
cat > "$ENGINE_DIR/engine.sh" <<EOF
#!/bin/sh
PYTHONPATH="$ENGINE_DIR/src" exec "$PY" -m frugalzero uci --net default
EOF
chmod +x "$ENGINE_DIR/engine.sh"

after="net:default?tc=$TC"
before="uci:$ENGINE_DIR/engine.sh?tc=$TC"
rate() {  # ENGINE FOLDER GAMES
    "$PY" -m frugalzero ladder "$1" --games-per-rung "$3" --pgn "$OUT/$2/ladder.pgn" --resume \
        --json > "$OUT/$2/ladder.json.tmp"
    mv "$OUT/$2/ladder.json.tmp" "$OUT/$2/ladder.json"
}
for step in $(seq 6 6 "$GAMES"); do
    rate "$after" after "$step"
    rate "$before" before "$step"
done
echo "before ($BEFORE): $(cat "$OUT/before/ladder.json")"
echo "after ($(git rev-parse --short HEAD)): $(cat "$OUT/after/ladder.json")"
