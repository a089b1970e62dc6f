"""Ending games early that are already decided, from the engines' own evaluations.

Weak engines shuffle for hundreds of moves in won or dead-drawn positions; those moves cost CPU
and tell nothing. As in cutechess-cli: a side resigns after ``resign_moves`` of its own moves at
``resign_score`` or worse (with ``resign_twosided`` the opponent must agree it is winning,
when it reports scores at all); a game is drawn once both sides have seen a score within
``draw_score`` of zero for ``draw_moves`` moves each, from move ``draw_after`` on; and any game
reaching ``max_plies`` is drawn. Against a side that reports no score (``random``) only the
length limit applies: one engine's opinion is not enough (measured: Fairy-Stockfish at skill -20
reported mate in one several times and still did not mate the random mover).
"""

from __future__ import annotations

from dataclasses import dataclass

import chess

from frugalzero.config import check
from frugalzero.results import DRAW, loss_for


@dataclass
class AdjudicationConfig:
    """When a game is stopped before the rules end it."""

    resign_score: int = 1000
    """Centipawns against the side to move that count towards resignation; 0 turns it off."""
    resign_moves: int = 5
    """Consecutive own moves at ``resign_score`` or worse before a side resigns."""
    resign_twosided: bool = True
    """The opponent's score must show the same (else one side's view suffices)."""
    draw_after: int = 40
    """First full move number at which a draw may be adjudicated; 0 turns it off."""
    draw_score: int = 10
    """Centipawns around zero that count as a dead draw."""
    draw_moves: int = 8
    """Consecutive moves (each side's) within ``draw_score`` before the draw."""
    max_plies: int = 400
    """Plies after which the game is drawn (a length limit); 0 for none."""

    def __post_init__(self) -> None:
        counts = ("resign_score", "resign_moves", "draw_after", "draw_score", "draw_moves")
        checks = [(getattr(self, n) >= 0, f"{n} must be >= 0") for n in (*counts, "max_plies")]
        check(self, "adjudication", checks)


class Adjudicator:
    """Fed every move's score (mover's view, centipawns, None if unknown); says when to stop."""

    def __init__(self, config: AdjudicationConfig) -> None:
        self.config = config
        self._bad = {chess.WHITE: 0, chess.BLACK: 0}  # own moves at a losing score in a row
        self._last: dict[chess.Color, int | None] = {chess.WHITE: None, chess.BLACK: None}
        self._quiet = 0  # plies with a score near zero in a row

    def update(
        self, board: chess.Board, mover: chess.Color, score: int | None
    ) -> tuple[str, str] | None:
        """After ``mover`` moved (``board`` is the new position): ``(result, reason)`` or None."""
        cfg = self.config
        self._last[mover] = score
        other = not mover
        opponent = self._last[other]
        if cfg.resign_score > 0 and score is not None:
            agrees = not cfg.resign_twosided or (
                opponent is not None and opponent >= cfg.resign_score
            )
            if score <= -cfg.resign_score and agrees:
                self._bad[mover] += 1
            else:
                self._bad[mover] = 0
            if self._bad[mover] >= cfg.resign_moves:
                name = "White" if mover == chess.WHITE else "Black"
                return loss_for(mover), f"{name} resigns"
        if cfg.draw_after > 0 and score is not None and opponent is not None:
            if board.fullmove_number >= cfg.draw_after and abs(score) <= cfg.draw_score:
                self._quiet += 1
            else:
                self._quiet = 0
            if self._quiet >= 2 * cfg.draw_moves:
                return DRAW, "draw by adjudication"
        if cfg.max_plies > 0 and board.ply() >= cfg.max_plies:
            return DRAW, f"length limit ({cfg.max_plies} plies)"
        return None
