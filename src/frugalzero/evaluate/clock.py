"""Time controls and the clocks of one game: the one place of the ``tc=`` grammar and of the
clock arithmetic, so the spec parser, the match runner and the PGN agree.

``BASE+INC`` (seconds: ``10+0.1``; ``BASE`` alone means no increment) is sudden death with an
increment; ``MOVES/BASE+INC`` (``40/60+0``) gives a side ``BASE`` again after every ``MOVES``
of its moves, and the engine is told the moves to go. The match measures each move on the
wall clock (the pipe included, as a GUI does); a move that overruns the clock by more than the
tolerance loses on time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import chess
import chess.engine

from frugalzero.results import DRAW, loss_for

FLAG_TOLERANCE = 0.05
"""Seconds a move may overrun its clock before the flag falls: pipe and scheduler jitter
should not decide games (the match's ``time_margin`` adds to it)."""

_SECONDS = r"(?:\d+(?:\.\d*)?|\.\d+)"
_TC = re.compile(rf"(?:(?P<moves>\d+)/)?(?P<base>{_SECONDS})(?:\+(?P<inc>{_SECONDS}))?")


@dataclass(frozen=True)
class TimeControl:
    """A clock: ``base`` seconds, ``increment`` seconds after each move, and with ``moves`` > 0
    ``base`` again after every ``moves`` moves."""

    base: float
    increment: float = 0.0
    moves: int = 0

    def text(self) -> str:
        """The canonical spelling (``10+0.1``, ``40/60+0``): in spec names and PGN headers."""
        period = f"{self.moves}/" if self.moves else ""
        return f"{period}{self.base:g}+{self.increment:g}"


def parse_time_control(text: str) -> TimeControl:
    """``[MOVES/]BASE[+INC]`` in seconds; ValueError says what is wrong."""
    found = _TC.fullmatch(text.strip())
    if found is None:
        raise ValueError(
            f"tc={text!r} is not BASE+INC or MOVES/BASE+INC in seconds (e.g. 10+0.1, 40/60+0)"
        )
    tc = TimeControl(float(found["base"]), float(found["inc"] or 0.0), int(found["moves"] or 0))
    if tc.base <= 0 or (found["moves"] is not None and tc.moves < 1):
        raise ValueError(f"tc={text!r}: the base time and the moves must be positive")
    return tc


def spend(
    tc: TimeControl, remaining: float, moves_made: int, used: float, tolerance: float
) -> float | None:
    """The clock after a side's ``moves_made``-th move (counting this one), which took ``used``
    of its ``remaining`` seconds: the increment added, and ``base`` again at the end of a
    period; None when the move overran the clock by more than ``tolerance`` (the flag fell).
    An overrun within the tolerance leaves the clock at zero, not below."""
    if used > remaining + tolerance:
        return None
    left = max(0.0, remaining - used) + tc.increment
    if tc.moves and moves_made % tc.moves == 0:
        left += tc.base
    return left


class GameClocks:
    """Both clocks of one game. A side without a time control has no clock and never loses
    on time; its opponent is told its own clock as the opponent's (a symmetric game)."""

    def __init__(
        self, white: TimeControl | None, black: TimeControl | None, tolerance: float
    ) -> None:
        self.controls = {chess.WHITE: white, chess.BLACK: black}
        self.left = {side: tc.base for side, tc in self.controls.items() if tc is not None}
        self.moves = {chess.WHITE: 0, chess.BLACK: 0}
        self.tolerance = tolerance

    def limit(self, side: chess.Color) -> chess.engine.Limit | None:
        """The ``go wtime … btime … winc … binc … [movestogo …]`` of ``side``'s move, or None
        when it plays without a clock."""
        own = self.controls[side]
        if own is None:
            return None
        other = self.controls[not side]
        mine = (self.left[side], own.increment)
        theirs = (self.left[not side], other.increment) if other is not None else mine
        white, black = (mine, theirs) if side == chess.WHITE else (theirs, mine)
        to_go = own.moves - self.moves[side] % own.moves if own.moves else None
        return chess.engine.Limit(
            white_clock=white[0],
            black_clock=black[0],
            white_inc=white[1],
            black_inc=black[1],
            remaining_moves=to_go,
        )

    def own_clock(self, side: chess.Color) -> float | None:
        """Seconds left on ``side``'s clock, None without one."""
        return self.left.get(side)

    def spend(self, side: chess.Color, used: float) -> bool:
        """Charge ``side``'s move of ``used`` seconds; False when its flag fell."""
        tc = self.controls[side]
        if tc is None:
            return True
        self.moves[side] += 1
        left = spend(tc, self.left[side], self.moves[side], used, self.tolerance)
        if left is None:
            self.left[side] = 0.0
            return False
        self.left[side] = left
        return True


def time_control_tag(white: TimeControl | None, black: TimeControl | None) -> str:
    """The PGN ``TimeControl``: the clock of the side(s) that have one, ``-`` when neither does,
    ``?`` when they differ (``WhiteLimit``/``BlackLimit`` then name each)."""
    texts = {tc.text() for tc in (white, black) if tc is not None}
    if not texts:
        return "-"
    return texts.pop() if len(texts) == 1 else "?"


def flag_verdict(board: chess.Board, side: chess.Color) -> tuple[str, str]:
    """Result and reason when ``side``'s flag fell at ``board``: a loss, or a draw when the
    opponent has too little material to ever mate (the FIDE rule)."""
    name, other = ("White", "Black") if side == chess.WHITE else ("Black", "White")
    if board.has_insufficient_material(not side):
        return DRAW, f"{name} out of time, {other} cannot mate"
    return loss_for(side), f"{name} loses on time"
