#!/usr/bin/env bash
# A suite of held-out positions labelled by Stockfish at depth 12, for `frugalzero eval-epd`:
# positions from Stockfish's own games played with a seed no shipped net trained on (the
# shipped net's data used seed 2026), one position in every 7 plies past the random opening,
# each labelled with Stockfish's depth-12 move. Deterministic up to Stockfish's threads.
#
#   benchmarks/heldout_suite.sh [POSITIONS]       (default 1000) -> benchmarks/results/epd/
#
# Then:  frugalzero eval-epd benchmarks/results/epd/heldout-sf12.epd --engine "net:default?nodes=1"
set -euo pipefail
cd "$(dirname "$0")/.."
POSITIONS=${1:-1000}
PY="$PWD/.venv/bin/python"
OUT=benchmarks/results/epd
WORK=runs/heldout
mkdir -p "$OUT" "$WORK"
if ! ls "$WORK"/*.pgn > /dev/null 2>&1; then
    "$PY" -m frugalzero sfgames --games $(( POSITIONS / 8 + 1 )) --nodes 400 --random-plies 8 \
        --seed 4242 --out "$WORK" > /dev/null
fi
"$PY" - "$WORK" "$OUT/heldout.epd" "$POSITIONS" <<'PYEOF'
import sys
from pathlib import Path

import chess.pgn

work, out, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
lines = []
for path in sorted(work.glob("*.pgn")):
    with open(path) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for ply, node in enumerate(game.mainline()):
                if ply >= 8 and ply % 7 == 0 and not board.is_game_over():
                    lines.append(board.epd(id=f"{path.stem}#{game.headers['Round']}/{ply}"))
                board.push(node.move)
out.write_text("\n".join(lines[:limit]) + "\n")
print(f"{min(limit, len(lines))} positions")
PYEOF
"$PY" -m frugalzero eval-epd "$OUT/heldout.epd" --engine "stockfish?depth=12" \
    --write "$OUT/heldout-sf12.epd" --json
rm "$OUT/heldout.epd"
