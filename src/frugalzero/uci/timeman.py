"""How long to think about a move under a clock, and when to stop sooner or later.

A move gets a *soft* budget, its fair share of the clock (the remaining time over the moves
still to play, plus most of the increment), and a *hard* limit it never passes (a few shares, at
most a fifth of the clock). Between the two the search decides, as strong engines do:

* it stops at the soft budget once the best move has held for the last part of the search,
  and goes on towards the hard limit while the best move keeps changing (an unsettled position
  is where time buys the most);
* it stops at any moment when the best move cannot change any more: its lead in visits over
  the runner-up is more than the search can add in the time left (Leela's "smart pruning").

A fixed ``movetime`` is a hard limit with no management, and so is no clock at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import chess

MOVES_TO_GO = 20
"""Moves still to play assumed when the GUI does not say (``movestogo``). With 30, games of
40-50 moves a side against the ladder's engines ended with a third of a 10+0.1 clock unused."""
HARD_SHARES = 3.0
"""The hard limit, in soft budgets."""
CLOCK_SHARE = 0.2
"""The most of the remaining clock one move may take."""
SETTLED_SHARE = 0.5
"""Beyond the soft budget, the search stops once the best move held for this share of it."""


@dataclass(frozen=True)
class TimeBudget:
    """Seconds for one move: stop near ``soft`` when settled, never beyond ``hard``."""

    soft: float
    hard: float
    managed: bool
    """True under a clock (the stops above apply); False for a fixed movetime."""

    def spent(self, seconds: float) -> TimeBudget:
        """What is left after ``seconds`` went by before the search could start."""
        return TimeBudget(
            max(0.01, self.soft - seconds), max(0.01, self.hard - seconds), self.managed
        )


def plan(
    remaining_ms: int | None,
    increment_ms: int,
    movestogo: int | None,
    movetime_ms: int | None,
    overhead_ms: int,
) -> TimeBudget | None:
    """The budget of one move from the side to move's clock (None: no time limit)."""
    if movetime_ms is not None:
        seconds = max(0.01, (movetime_ms - overhead_ms) / 1000)
        return TimeBudget(seconds, seconds, managed=False)
    if remaining_ms is None:
        return None
    usable = max(remaining_ms - overhead_ms, 10)
    soft = remaining_ms / (movestogo or MOVES_TO_GO) + 0.75 * increment_ms
    hard = min(HARD_SHARES * soft, CLOCK_SHARE * remaining_ms + increment_ms, usable)
    soft = min(soft, hard)
    return TimeBudget(max(0.01, soft / 1000), max(0.01, hard / 1000), managed=True)


def side_clock(
    turn: chess.Color, wtime: int | None, btime: int | None, winc: int, binc: int
) -> tuple[int | None, int]:
    """(remaining, increment) in milliseconds of the side to move."""
    if turn == chess.WHITE:
        return wtime, winc
    return btime, binc


class MoveTimer:
    """Follows one search: call ``should_stop`` after each batch with the search's state."""

    def __init__(self, budget: TimeBudget) -> None:
        self.budget = budget
        self.best: chess.Move | None = None
        self.settled_since = 0.0  # when the current best move became best (seconds)

    def should_stop(
        self,
        elapsed: float,
        best: chess.Move | None,
        lead: float,
        simulations_per_s: float,
    ) -> bool:
        """``lead``: the best move's visits minus the runner-up's; ``simulations_per_s``: the
        search's speed so far."""
        budget = self.budget
        if elapsed >= budget.hard:
            return True
        if not budget.managed:
            return False
        if best != self.best:
            self.best, self.settled_since = best, elapsed
        if lead > simulations_per_s * (budget.hard - elapsed):
            return True  # nothing the time left can add would change the move
        settled = elapsed - self.settled_since >= SETTLED_SHARE * elapsed
        return elapsed >= budget.soft and settled
