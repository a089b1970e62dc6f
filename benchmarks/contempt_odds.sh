#!/usr/bin/env bash
# search-contempt in odds chess (Joshi 2025, Tables 1-3) with the shipped net: the net gives
# queen or knight odds to a fixed opponent, searching with plain PUCT or with the hybrid at
# N_scl, at three node counts; then the hybrid against PUCT at equal noise and temperature,
# colours swapped (the paper's +70 Elo match had PUCT always White).
#
#   benchmarks/contempt_odds.sh [GAMES] [NSCL] [NODES...]     (defaults: 100 28 50 200 800)
#
# NET names the net (default: default; the records were played by the stage-1 net, see
# CONTEMPT.md).
# The opponent is chosen once and kept in benchmarks/results/contempt/odds/opponent.txt: the
# first of CANDIDATES (weakest first, ladder rungs) against which PUCT at the middle node count,
# giving queen odds, scores at most 40% over 10 games (the strongest if none does; each probe
# is printed). Resumable: one PGN per pairing, its
# finished games counted, the missing ones played with the count as seed. Recount with
#   frugalzero games benchmarks/results/contempt/odds/queen-hybrid-200.pgn --player 'NET' --json
set -euo pipefail
cd "$(dirname "$0")/.."

GAMES=${1:-100}
NSCL=${2:-28}
NET=${NET:-default}
if [ $# -gt 2 ]; then NODES=("${@:3}"); else NODES=(50 200 800); fi
PY="$PWD/.venv/bin/python"
OUT=benchmarks/results/contempt/odds
CANDIDATES=("fairy?nodes=10000&skill=-5" "fairy?nodes=10000&skill=-4" "fairy?nodes=10000&skill=-3"
    "fairy?nodes=10000&skill=-1" "fairy?nodes=10000&skill=0" "stockfish?elo=1350&nodes=20000")
# odds games are played out: the side giving odds starts about -900 cp down, so resignation
# adjudication (1000 cp for 5 moves, both sides agreeing) would end the very games in which a
# search could still swindle, which is what the hybrid is for
PLAY_OUT="--adjudication.resign-score 0"
# 8 games at once, each tree walking 8 leaves a batch: the trees search exactly as with the
# default 2 games (16 // 2 leaves each), and the network gets batches of 64 instead of 16.
# The priors are the network's policy as it is (temperature 1), as in the paper and as these
# records were played: our nets' play default is flatter (search.config.PLAY_POLICY_TEMPERATURE)
SEATS="--concurrency 8"
WIDE="leaves_per_gather=8&policy_temperature=1"
mkdir -p "$OUT"

played() {  # finished games in a PGN file
    if [ -f "$1" ]; then grep -c '^\[Result ' "$1" || true; else echo 0; fi
}

match() {  # PGN GAMES A B [match options...]: play the games still missing from PGN
    local pgn=$1 want=$2 a=$3 b=$4
    shift 4
    local have
    have=$(played "$pgn")
    if [ "$have" -lt "$want" ]; then
        echo "$(basename "$pgn" .pgn): $have of $want games"
        "$PY" -m frugalzero match "$a" "$b" --games $(( (want - have + 1) / 2 * 2 )) \
            --seed "$have" --pgn "$pgn" "$@" > /dev/null
    fi
}

middle=${NODES[$(( ${#NODES[@]} / 2 ))]}
if [ ! -s "$OUT/opponent.txt" ]; then
    for candidate in "${CANDIDATES[@]}"; do
        score=$("$PY" -m frugalzero match "net:$NET?nodes=$middle&policy_temperature=1" \
            "$candidate" --games 10 \
            --odds queen --odds-giver first $PLAY_OUT --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["score"])')
        echo "probe: PUCT at $middle nodes, queen odds, against $candidate: $score" \
            | tee -a "$OUT/probes.txt"
        if "$PY" -c "import sys; sys.exit(0 if $score <= 0.4 else 1)"; then
            echo "$candidate" > "$OUT/opponent.txt"
            break
        fi
    done
    if [ ! -s "$OUT/opponent.txt" ]; then  # the net beats them all at these odds: the strongest
        echo "no candidate held PUCT to 40%; taking the strongest"
        echo "${CANDIDATES[-1]}" > "$OUT/opponent.txt"
    fi
fi
opponent=$(cat "$OUT/opponent.txt")
echo "opponent: $opponent"

odds_tables() {  # ODDS: PUCT and the hybrid at every node count
    local odds=$1 nodes
    for nodes in "${NODES[@]}"; do
        # shellcheck disable=SC2086
        match "$OUT/$odds-puct-$nodes.pgn" "$GAMES" "net:$NET?nodes=$nodes&$WIDE" \
            "$opponent" --odds "$odds" --odds-giver first $PLAY_OUT $SEATS
        # shellcheck disable=SC2086
        match "$OUT/$odds-hybrid-$nodes.pgn" "$GAMES" \
            "net:$NET?nodes=$nodes&nscl=$NSCL&$WIDE" "$opponent" \
            --odds "$odds" --odds-giver first $PLAY_OUT $SEATS
    done
}

odds_tables queen

# equal noise and temperature (the paper's tau 1 schedule with its noise), colours swapped
SAME="temperature=0.7&temperature_decay_plies=10&final_temperature=0.1&temperature_plies=100000"
SAME="$SAME&root_noise=true&dirichlet_epsilon=0.1&dirichlet_alpha=0.12&$WIDE"
# shellcheck disable=SC2086
match "$OUT/hybrid5-vs-puct-400.pgn" "$GAMES" "net:$NET?nodes=400&nscl=5&$SAME" \
    "net:$NET?nodes=400&$SAME" $SEATS

odds_tables knight

# how much N_scl matters here: the hybrid at queen odds and the middle node count, at N_scl
# 10 and 100 beside the tables' NSCL
for nscl in 10 100; do
    # shellcheck disable=SC2086
    match "$OUT/tune-queen-nscl$nscl-$middle.pgn" "$GAMES" \
        "net:$NET?nodes=$middle&nscl=$nscl&$WIDE" "$opponent" \
        --odds queen --odds-giver first $PLAY_OUT $SEATS
done

for pgn in "$OUT"/*.pgn; do  # the tallies: frugalzero games PGN --player NAME
    echo "$(basename "$pgn" .pgn): $(played "$pgn") games"
done
