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

A clock is planned as a real game's: one beyond the longest a game is played with
(``LONGEST_CLOCK_MS``, and ``LONGEST_INCREMENT_MS`` for the increment) is taken as that, so
``go wtime 10^15`` thinks as long as a move of a long classical game, not a week's twentieth.

Every budget also says the *latest* a move may be answered: nearly the whole clock less the
``MoveOverhead``. The protocol answers by then with the best move seen so far even when the
search has not returned (a machine so busy that the search's own stop comes too late), so a
busy machine costs a worse move, never the game on time.
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
LONGEST_CLOCK_MS = 2 * 3600 * 1000
"""The longest clock planned with (two hours: a classical game's, TCEC's longest control); a
longer one (``wtime 10^15``, clamped to a week by ``frugalzero.uci.limits``) plans as this."""
LONGEST_INCREMENT_MS = 60_000
"""The longest increment planned with (a minute; classical games give 30 s)."""
LAG_DECAY = 0.75
"""Each move, the remembered lateness (``Lag``) fades to this share of itself."""
LAG_MAX = 1.0
"""The most lateness remembered, in seconds: one stall (a swapped-out process) must not make
every later move instant."""
LATEST_OVERHEAD_SHARE = 0.5
"""The latest answer leaves this share of ``MoveOverhead`` on the clock (the rest was the
search's margin to wind down within): the pipe and the GUI's own reading."""


@dataclass(frozen=True)
class TimeBudget:
    """Seconds for one move: stop near ``soft`` when settled, never beyond ``hard``."""

    soft: float
    hard: float
    managed: bool
    """True under a clock (the stops above apply); False for a fixed movetime."""
    latest: float | None = None
    """The last moment to answer whatever the search is doing (None: ``hard``): past it the
    clock itself, less a share of the overhead, would run out."""

    @property
    def answer_by(self) -> float:
        return self.hard if self.latest is None else max(self.latest, self.hard)

    def spent(self, seconds: float) -> TimeBudget:
        """What is left after ``seconds`` went by before the search could start."""
        latest = None if self.latest is None else max(0.01, self.latest - seconds)
        return TimeBudget(
            max(0.01, self.soft - seconds), max(0.01, self.hard - seconds), self.managed, latest
        )


def plan(
    remaining_ms: int | None,
    increment_ms: int,
    movestogo: int | None,
    movetime_ms: int | None,
    overhead_ms: int,
) -> TimeBudget | None:
    """The budget of one move from the side to move's clock (None: no time limit)."""
    keep = LATEST_OVERHEAD_SHARE * overhead_ms
    if movetime_ms is not None:
        seconds = max(0.01, (movetime_ms - overhead_ms) / 1000)
        return TimeBudget(seconds, seconds, False, max(0.01, (movetime_ms - keep) / 1000))
    if remaining_ms is None:
        return None
    latest = max(0.01, (remaining_ms - keep) / 1000)
    remaining_ms = min(remaining_ms, LONGEST_CLOCK_MS)
    increment_ms = min(increment_ms, LONGEST_INCREMENT_MS)
    usable = max(remaining_ms - overhead_ms, 10)
    soft = remaining_ms / (movestogo or MOVES_TO_GO) + 0.75 * increment_ms
    hard = min(HARD_SHARES * soft, CLOCK_SHARE * remaining_ms + increment_ms, usable)
    soft = min(soft, hard)
    return TimeBudget(max(0.01, soft / 1000), max(0.01, hard / 1000), True, latest)


class Lag:
    """How late the engine's timed answers came past their hard limit lately, in seconds: the
    latest overrun, or the earlier ones fading by ``LAG_DECAY`` a move, whichever is more (at
    most ``LAG_MAX``). The protocol adds it to ``MoveOverhead``, so that on a machine busy
    enough to make a search stop late the next moves leave that lateness on the clock."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def observe(self, overrun: float) -> None:
        """A timed answer came ``overrun`` seconds after its hard limit (negative: before)."""
        self.seconds = min(LAG_MAX, max(overrun, LAG_DECAY * self.seconds, 0.0))

    @property
    def ms(self) -> int:
        return round(self.seconds * 1000)


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
