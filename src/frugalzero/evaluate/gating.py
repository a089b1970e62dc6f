"""Gating: does a freshly trained net replace the best one?

Three rules from the literature: AlphaGo Zero kept a new net only if it scored at least 55%
against the best (``threshold``); AlphaZero dropped the gate and always used the latest net
(``always``); ``sprt`` accepts it once a sequential test says it is ``elo1`` stronger rather
than ``elo0`` (and rejects it when the test says H0, or when the games run out undecided).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from frugalzero.config import check
from frugalzero.errors import UserError
from frugalzero.evaluate.sprt import SprtConfig, sprt

GateMode = Literal["threshold", "sprt", "always"]
MODES: tuple[str, ...] = get_args(GateMode)


@dataclass
class GateConfig:
    """How a candidate net is judged against the current best."""

    mode: GateMode = "threshold"
    """'threshold' (AlphaGo Zero: score >= ``threshold``), 'sprt' or 'always' (AlphaZero)."""
    threshold: float = 0.55
    """Score the candidate needs in 'threshold' mode."""
    games: int = 100
    """Games of the gating match (the most an SPRT gate may play)."""
    sprt: SprtConfig = field(default_factory=lambda: SprtConfig(elo0=0.0, elo1=20.0))
    """Hypotheses of the 'sprt' mode."""

    def __post_init__(self) -> None:
        checks = [
            (0 <= self.threshold <= 1, "threshold must be in [0, 1]"),
            (self.games >= 1, "games must be at least 1"),
        ]
        check(self, "gate", checks)


def gate(
    mode: str,
    wins: int,
    draws: int,
    losses: int,
    threshold: float = 0.55,
    sprt_config: SprtConfig | None = None,
    pentanomial: Sequence[int] | None = None,
) -> bool:
    """True when the candidate (whose wins/draws/losses these are) replaces the best net."""
    if mode == "always":
        return True
    games = wins + draws + losses
    if mode == "threshold":
        return games > 0 and (wins + 0.5 * draws) / games >= threshold
    if mode == "sprt":
        return sprt(wins, draws, losses, sprt_config, pentanomial).decision == "H1"
    raise UserError(f"gating mode {mode!r} is not one of {', '.join(MODES)}")


def gate_match(candidate: str, best: str, config: GateConfig, match=None):
    """Play the gating match (``config.games`` games; an SPRT gate stops as soon as it
    decides) and judge it: ``(replace, MatchResult | None)``. 'always' plays no games."""
    from dataclasses import replace

    from frugalzero.evaluate.match import MatchConfig, play_match

    if config.mode == "always":
        return True, None
    match = replace(match or MatchConfig(), games=config.games)
    if config.mode == "sprt":
        match = replace(match, sprt=config.sprt)
    result = play_match(candidate, best, match)
    if config.mode == "sprt":  # the match's own test, on complete pairs, decided (or not)
        return result.sprt is not None and result.sprt.decision == "H1", result
    t = result.tally
    return gate("threshold", t.wins, t.draws, t.losses, config.threshold), result
