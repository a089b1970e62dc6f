"""Settings of a self-play run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from frugalzero.config import bounded, check
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.search.config import SearchConfig


@dataclass
class SelfPlayConfig:
    """How many games, from where, how many at once; the search and evaluator settings."""

    games: int = bounded(64, 1, 1 << 30)  # 2**30: bench selfplay's "until the clock stops"
    """Games to play in all (across workers)."""
    concurrent: int = 128
    """Games played at once by one worker; their leaves share evaluator batches (32-256)."""
    groups: int = 2
    """The worker's games are split into this many groups whose batches alternate, so one
    is evaluated while the next is prepared (2 keeps both cores busy)."""
    workers: int = 0
    """Worker processes playing the games. Two or more share one inference process, which
    runs their waiting batches as one; 0 = one per two cores on a CPU (the network needs the
    other half), every core but one with CUDA."""
    openings: str = ""
    """EPD or PGN opening book; empty = the standard start position."""
    openings_limit: int = 0
    """Read only the first N openings of the book (0 = all; a 35,000-game PGN book takes
    python-chess about a minute to read)."""
    odds: Literal["", "knight", "rook", "queen"] = ""
    """Odds chess: remove this piece from the side giving odds ('' = none)."""
    odds_giver: Literal["both", "white", "black"] = "both"
    """Who gives the odds: 'both' alternates from game to game."""
    max_plies: int = 512
    """Plies after which a game is adjudicated a draw (counted from the start position)."""
    seed: int = 0
    """Seeds every random choice (openings, noise, move sampling, resignation share)."""
    games_per_shard: int = 500
    """Games per output shard."""
    full_search_share: float = 1.0
    """Playout-cap randomisation (KataGo, Wu 2019): the share of moves searched in full
    (search.simulations, root noise) and recorded as training targets. The others get a fast
    search of fast_simulations without noise, played at the same move temperature (as KataGo's
    cheap searches are, so openings stay as varied), and no training target at all, as in
    KataGo (a shard holds no value-only target): a game costs fewer simulations while each
    target keeps its full search. Which moves are full is drawn from the game's seed. KataGo:
    0.25, the same strength for 1.37x less compute. 1 = every move (off)."""
    fast_simulations: int = 16
    """Simulations of a fast search (full_search_share < 1): at most search.simulations;
    KataGo used about a sixth of the full search (100 of 600)."""
    search: SearchConfig = field(default_factory=SearchConfig)
    """The search; self-play plays with root noise (or Gumbel noise), the temperature schedule
    and resignation as configured there."""
    evaluator: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    """How the network runs."""

    def __post_init__(self) -> None:
        checks = [
            (self.games >= 1, "games must be at least 1"),
            (self.concurrent >= 1, "concurrent must be at least 1"),
            (self.groups >= 1, "groups must be at least 1"),
            (self.max_plies >= 1, "max_plies must be at least 1"),
            (self.workers >= 0, "workers must be >= 0"),
            (0 < self.full_search_share <= 1, "full_search_share must be in (0, 1]"),
            (self.fast_simulations >= 1, "fast_simulations must be at least 1"),
            (
                self.full_search_share == 1 or self.fast_simulations <= self.search.simulations,
                "fast_simulations must not exceed search.simulations",
            ),
        ]
        check(self, "selfplay", checks)

    @property
    def method(self) -> str:
        """The record method name of this configuration."""
        from frugalzero.data.methods import selfplay_method

        if self.search.gumbel:
            return selfplay_method("gumbel").name
        kind = "contempt" if self.search.nscl != float("inf") else "puct"
        return selfplay_method(kind).name
