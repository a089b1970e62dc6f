"""Stockfish scores as value targets.

Stockfish reports centipawns or "mate in N" from the side to move's view. The network's value
head predicts the expected game result in [-1, 1] for the side to move, so labels convert with an
Elo-style logistic,

    v = 2 / (1 + 10 ** (-cp / scale)) - 1        (= tanh(cp * ln 10 / (2 * scale)))

and a mate for (against) the side to move is +1 (-1). The logistic is the expected-score curve
of the Elo model with ``scale`` in place of 400; ``VALUE_SCALE`` was fitted to the results of
Stockfish's own games at the default node limit (docs/expert.md has the figures).
"""

from __future__ import annotations

import math

import chess.engine

VALUE_SCALE = 320.0
"""Centipawns at which the side to move's expected score is 10/11 (value 0.82)."""


def cp_to_value(cp: float, scale: float = VALUE_SCALE) -> float:
    """Expected result in [-1, 1] of a centipawn score (side to move's view)."""
    return math.tanh(cp * math.log(10.0) / (2.0 * scale))


def mate_to_value(mate: int) -> float:
    """+1 when the side to move mates, -1 when it is mated (``mate`` <= 0 means mated)."""
    return 1.0 if mate > 0 else -1.0


def score_to_value(score: chess.engine.Score, scale: float = VALUE_SCALE) -> float:
    """Value of a python-chess ``Score`` seen from the side to move (``PovScore.relative``)."""
    mate = score.mate()
    if mate is not None:
        return mate_to_value(mate)
    cp = score.score()
    assert cp is not None
    return cp_to_value(cp, scale)


def score_text(score: chess.engine.Score) -> str:
    """Compact text of a score for records' extras: ``35``, ``-120``, ``#3`` or ``#-2``."""
    mate = score.mate()
    if mate is not None:
        return f"#{mate}"
    return str(score.score())


def parse_score_text(text: str) -> chess.engine.Score:
    """Inverse of ``score_text``."""
    if text.startswith("#"):
        return chess.engine.Mate(int(text[1:]))
    return chess.engine.Cp(int(text))
