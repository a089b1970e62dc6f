"""Statistics of sets of games, shared by self-play and evaluation: W/D/L counts with their
Wilson intervals (``frugalzero.stats``), decisiveness, repeated openings.

The search-contempt paper judges self-play data by how decisive it is, (w + l) / d, and by how
many games repeat another game's opening moves: the share of games identical to another game
up to ply k. ``summary`` gives those counts with 95% intervals for games read back from PGN
(``frugalzero games``); ``frugalzero.selfplay.stats`` counts self-play's records with the same
functions. Neither domain package imports the other for them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from frugalzero.results import BLACK_WINS, DRAW, WHITE_WINS
from frugalzero.stats import wilson

REPEAT_PLIES = 30  # plies over which openings are compared


def repeated_share_by_ply(
    games: Sequence[tuple[str, Sequence[str]]], plies: int = REPEAT_PLIES
) -> list[float]:
    """Entry k-1: share of games whose first k plies (and start position) equal those of at
    least one other game. A game shorter than k plies is compared as a whole."""
    shares = []
    total = len(games)
    for k in range(1, plies + 1):
        prefixes = Counter((fen, tuple(moves[:k])) for fen, moves in games)
        repeated = sum(count for count in prefixes.values() if count > 1)
        shares.append(repeated / total if total else 0.0)
    return shares


def distinct_openings(games: Sequence[tuple[str, Sequence[str]]], plies: int) -> int:
    """Different openings of ``plies`` plies (start position and moves) among the games; a
    game shorter than that is its whole self."""
    return len({(fen, tuple(moves[:plies])) for fen, moves in games})


def duplicate_share(games: Sequence[tuple[str, Sequence[str]]], plies: int) -> float:
    """(games - distinct openings of ``plies`` plies) / games: the share of games that repeat an
    earlier game's opening, the measure of search-contempt's paper (Fig. 4; 1 would be every
    game the same). ``repeated_share_by_ply`` counts the first of each group too."""
    if not games:
        return 0.0
    return (len(games) - distinct_openings(games, plies)) / len(games)


@dataclass(frozen=True)
class Results:
    """Games won by White, drawn, won by Black (unfinished games left out)."""

    white: int
    draws: int
    black: int

    @property
    def games(self) -> int:
        return self.white + self.draws + self.black

    def share(self, count: int) -> tuple[float, float, float]:
        """(share, low, high) of ``count`` among the games, 95% Wilson interval."""
        low, high = wilson(count, self.games)
        return count / max(1, self.games), low, high

    def decisiveness(self) -> tuple[float, float, float]:
        """((w + l) / d, low, high): the odds of a decisive game, its interval from the Wilson
        interval of the decisive share (infinite when no game was drawn)."""
        decisive = self.white + self.black
        low, high = wilson(decisive, self.games)
        return _odds(decisive / max(1, self.games)), _odds(low), _odds(high)


def _odds(p: float) -> float:
    return math.inf if p >= 1.0 else p / (1.0 - p)


def count_results(results: Iterable[str]) -> Results:
    """Tally PGN results ('1-0', '1/2-1/2', '0-1'; others are unfinished and skipped)."""
    tally = Counter(results)
    return Results(tally[WHITE_WINS], tally[DRAW], tally[BLACK_WINS])


def summary(
    games: Sequence[tuple[str, Sequence[str]]], results: Results, plies: int = REPEAT_PLIES
) -> dict[str, Any]:
    """The counts of a set of games, as ``frugalzero games`` prints them: shares in percent
    with 95% intervals, decisiveness, and the repeated-openings share at every ply up to
    ``plies`` (``repeated_by_ply[k - 1]`` is the share after k plies)."""

    def pct(count: int) -> list[float]:
        return [round(100 * x, 1) for x in results.share(count)]

    odds = results.decisiveness()
    curve = repeated_share_by_ply(games, plies)
    return {
        "games": results.games,
        "white_wins": results.white,
        "draws": results.draws,
        "black_wins": results.black,
        "white_pct_ci95": pct(results.white),
        "draw_pct_ci95": pct(results.draws),
        "black_pct_ci95": pct(results.black),
        "decisive_over_draws_ci95": [round(x, 3) for x in odds],  # inf: no game was drawn
        "repeated_after_move": {
            str(move): round(curve[2 * move - 1], 3) for move in (1, 2, 5, 10) if 2 * move <= plies
        },
        "duplicates_after_move": {
            str(move): round(duplicate_share(games, 2 * move), 3)
            for move in (1, 2, 3, 4, 5, 10, 15, 20, 25, 30, 40, 50)
        },
        "repeated_by_ply": [round(x, 3) for x in curve],
    }
