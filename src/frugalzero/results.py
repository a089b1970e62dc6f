"""Game results, written once: PGN's result codes and what each means from White's side.

A record keeps White's value (1 win, 0 draw, -1 loss; None unfinished), a match and a PGN file
the code ("1-0", "1/2-1/2", "0-1", "*"), Elo White's score (1, 0.5, 0). Every conversion between
them is here, so data, evaluation and the benchmarks cannot disagree.
"""

from __future__ import annotations

import chess

WHITE_WINS = "1-0"
DRAW = "1/2-1/2"
BLACK_WINS = "0-1"
UNFINISHED = "*"

VALUE = {WHITE_WINS: 1.0, DRAW: 0.0, BLACK_WINS: -1.0}
"""White's value of each finished game's code."""
SCORE = {code: (value + 1) / 2 for code, value in VALUE.items()}
"""White's score (Elo's 1, 0.5, 0) of each finished game's code."""
_CODE = {value: code for code, value in VALUE.items()}


def result_code(value: float | None) -> str:
    """The PGN code of White's value (1.0 and 1 alike); ``*`` for None (unfinished)."""
    return _CODE.get(value, UNFINISHED)


def loss_for(side: chess.Color) -> str:
    """The code of a game ``side`` loses (resignation, a fallen flag, a crash)."""
    return BLACK_WINS if side == chess.WHITE else WHITE_WINS
