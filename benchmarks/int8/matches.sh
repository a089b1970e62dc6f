#!/usr/bin/env bash
# int8 against the precision `auto` picks (bf16 on a CPU with native bf16, else fp32), in games
# (issue 71): at 400 nodes for a net, or under a clock with each engine on one thread. Colours
# paired on each opening of the 2-move book, every game's PGN and the match's JSON (pentanomial
# interval and LOS) in benchmarks/results/int8/. Run again, it goes on from the games in the PGN.
#   benchmarks/int8/matches.sh nodes small|default [GAMES]
#   benchmarks/int8/matches.sh clock small [GAMES] [TC]      (TC default 5+0.05)
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p runs/logs
KIND=${1:?nodes or clock}; NET=${2:?small or default}; GAMES=${3:-200}; TC=${4:-5+0.05}
OUT=benchmarks/results/int8
case $KIND in
  nodes) LIMIT="nodes=400"; NAME=match-$NET-400 ;;
  clock) LIMIT="tc=$TC&threads=1"; NAME=match-$NET-tc$TC ;;
  *) echo "usage: $0 nodes|clock NET [GAMES] [TC]" >&2; exit 2 ;;
esac
{ date -Is; uptime; lscpu | grep 'Model name'
  grep -q avx512_bf16 /proc/cpuinfo && echo "bf16: native (avx512_bf16)" || echo "bf16: none"
  grep -q avx512_vnni /proc/cpuinfo && echo "vnni: avx512_vnni" || echo "vnni: none"; } \
    >> "$OUT/$NAME.machine.txt"
.venv/bin/frugalzero match "net:$NET?$LIMIT&precision=int8" "net:$NET?$LIMIT" \
    --games "$GAMES" --openings ../shared/openings/2moves_v1.epd --seed 71 \
    --pgn "$OUT/$NAME.pgn" --event "int8 vs auto, $NET, $LIMIT" --resume --json \
    > "runs/logs/$NAME.json.partial"
mv "runs/logs/$NAME.json.partial" "$OUT/$NAME.json"
uptime >> "$OUT/$NAME.machine.txt"
