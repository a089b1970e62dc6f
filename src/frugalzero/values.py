"""Every conversion between a value, centipawns, win/draw/loss and mate scores.

A *value* is the expected game result for the side to move, in [-1, 1]: what the network's
value head predicts and what the search backs up. Two mappings to centipawns are used, on
purpose, in opposite directions:

* **centipawns -> value** (``cp_to_value``) makes training labels from Stockfish's scores. It is
  the Elo model's expected-score logistic with ``VALUE_SCALE`` in place of 400,
  ``v = 2 / (1 + 10 ** (-cp / scale)) - 1``, fitted to the results of Stockfish's own games
  (docs/expert.md has the figures).
* **value -> centipawns** (``value_to_cp``) is what our nets *say*: the score in UCI ``info``
  lines and the score matches adjudicate on. It is Leela's mapping, so a net resigns and agrees
  draws at the same points as the engines it plays (its 1000 cp resignation is a value of
  0.945; the logistic's inverse would wait for 0.9985).

Mate distances are counted in plies inside the search (``mate_in``: positive when the side to
move mates) and in moves in UCI (``mate 1``: the engine mates with its next move; ``mate -1``:
it is mated after its next move).
"""

from __future__ import annotations

import math
from typing import Any

import chess.engine

VALUE_SCALE = 320.0
"""Centipawns at which the side to move's expected score is 10/11 (value 0.82)."""

MATE_CP = 100_000
"""Centipawns standing for a mate (minus its distance in moves), as python-chess reports it."""


def cp_to_value(cp: float, scale: float = VALUE_SCALE) -> float:
    """Expected result in [-1, 1] of a centipawn score (side to move's view): the label map."""
    return math.tanh(cp * math.log(10.0) / (2.0 * scale))


def value_to_cp(value: float) -> int:
    """A value in [-1, 1] as centipawns (Leela's mapping), so nets adjudicate like engines."""
    value = max(-0.999, min(0.999, value))
    return int(round(90.0 * math.tan(1.5637541897 * value)))


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


def mate_moves(plies: int) -> int:
    """UCI's ``mate N`` of a mate ``plies`` away (positive: the side to move mates).

    Mating in 1 is 1 ply, being mated after one's own move is 2 plies: both are ``±1``.
    """
    moves = (abs(plies) + 1) // 2
    return moves if plies > 0 else -moves


def search_score(value: float, mate_plies: int | None = None) -> chess.engine.Score:
    """A search's verdict as a python-chess ``Score``: the mate when proven, else centipawns."""
    if mate_plies:
        return chess.engine.Mate(mate_moves(mate_plies))
    return chess.engine.Cp(value_to_cp(value))


def score_cp(score: chess.engine.Score) -> int:
    """Centipawns of a score, mates as ``±(MATE_CP - moves)``: what adjudication compares."""
    return int(score.score(mate_score=MATE_CP))


def uci_score(score: chess.engine.Score) -> str:
    """The ``score`` field of a UCI ``info`` line: ``cp 35`` or ``mate -1``."""
    mate = score.mate()
    return f"mate {mate}" if mate is not None else f"cp {score.score()}"


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


def value_to_wdl(value: Any) -> tuple[Any, Any, Any]:
    """The least decisive (win, draw, loss) with expectation ``value``: draws take what
    decisive results do not need. Works on floats, NumPy arrays and torch tensors alike."""
    v = value.clip(-1.0, 1.0) if hasattr(value, "clip") else max(-1.0, min(1.0, value))
    decided = abs(v)
    return (decided + v) / 2, 1.0 - decided, (decided - v) / 2


def wdl_permille(value: float, draw: float | None = None) -> tuple[int, int, int]:
    """UCI's ``wdl W D L`` of a value: whole per mille summing to 1000. Win minus loss is
    ``value``; the draws are ``draw`` (a WDL head's draw probability) as far as the value
    leaves room for them, or without it the least decisive split (``value_to_wdl``)."""
    v = max(-1.0, min(1.0, value))
    if draw is None:
        draw = value_to_wdl(v)[1]
    draw = max(0.0, min(draw, 1.0 - abs(v)))
    win = round(500 * (1.0 - draw + v))
    loss = min(round(500 * (1.0 - draw - v)), 1000 - win)
    return win, 1000 - win - loss, loss


def value_to_winrate(value: Any) -> Any:
    """The side to move's expected score in percent (draws half), of a value or an array:
    KataGo's winrate, in which its backend tests count their errors (``nn.compare``)."""
    return (value + 1.0) * 50.0


def wdl_to_value(win: Any, loss: Any) -> Any:
    """Expected result of win/draw/loss probabilities (a draw counts zero)."""
    return win - loss
