#!/usr/bin/env bash
# The search's settings for play, screened on the held-out suite: how often the shipped net at
# 400 nodes plays Stockfish's depth-12 move with its priors at several policy temperatures (and
# one exploration constant), every setting on the same 1,000 positions, so each is compared
# with the first position by position (moves it finds that the first misses, and the reverse;
# z is the sign test's, McNemar's, of those two counts).
#
#   benchmarks/play_temperature.sh [NET] [OUT]     (net:default, benchmarks/results/play)
#
# Each setting is done when its JSON is there (17 minutes of the 2-core machine beside other
# work). Other settings: SETTINGS="name=&key=value ..." (the first is the base). Every setting
# names its policy temperature: the play default is not 1 (search.config).
set -euo pipefail
cd "$(dirname "$0")/.."
NET=${1:-default}
OUT=${2:-benchmarks/results/play}
SUITE=benchmarks/results/epd/heldout-sf12.epd
# The recorded temperature screen gathered one leaf per batch (16 positions at once, when a
# match gathered 16 // positions-at-once leaves); a match now gathers 8 at any concurrency, so
# the defaults name the 1 to repeat that screen.
L1="&leaves_per_gather=1"
DEFAULT_SETTINGS="pt10=$L1&policy_temperature=1 pt14=$L1&policy_temperature=1.4
    pt18=$L1&policy_temperature=1.8 pt24=$L1&policy_temperature=2.4
    c2=$L1&c_init=2.0&policy_temperature=1"
SETTINGS=${SETTINGS:-$DEFAULT_SETTINGS}
PY="$PWD/.venv/bin/python"
mkdir -p "$OUT"
names=()
for setting in $SETTINGS; do
    name=${setting%%=*}
    params=${setting#*=}
    names+=("$name")
    [ -s "$OUT/$name.json" ] && continue
    "$PY" -m frugalzero eval-epd "$SUITE" --engine "net:$NET?nodes=400$params" --seats 16 \
        --write "$OUT/$name.epd" --json > "$OUT/$name.json.tmp"
    mv "$OUT/$name.json.tmp" "$OUT/$name.json"
done
"$PY" - "$SUITE" "$OUT" "${names[@]}" <<'PYEOF'
import json
import math
import sys
from pathlib import Path

import chess

suite, out, names = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]


def moves(path):
    return [set(chess.Board.from_epd(line)[1].get("bm", [])) for line in open(path) if line.strip()]


answer = moves(suite)
solved = {n: [bool(m & a) for m, a in zip(moves(out / f"{n}.epd"), answer)] for n in names}
base = solved[names[0]]
print(f"{'setting':<8} {'engine':<58} {'top-1':>6} {'gains':>6} {'losses':>6} {'z':>6}")
for name in names:
    engine = json.loads((out / f"{name}.json").read_text())["engine"]
    gains = sum(s and not b for s, b in zip(solved[name], base))
    losses = sum(b and not s for s, b in zip(solved[name], base))
    z = (gains - losses) / math.sqrt(gains + losses) if gains + losses else 0.0
    rate = 100 * sum(solved[name]) / len(solved[name])
    print(f"{name:<8} {engine:<58} {rate:5.1f}% {gains:>6} {losses:>6} {z:>6.2f}")
PYEOF
