"""Sequential probability ratio test: stop a match as soon as the games decide between
"the new engine is ``elo0`` stronger" (H0) and "``elo1`` stronger" (H1).

This is the generalised SPRT fishtest uses (after Michel Van den Bergh): the result
distribution is left free (draw rate and all), and each hypothesis is the most likely
distribution whose mean score equals the hypothesis' expected score. The log-likelihood ratio
of the two is compared with Wald's bounds ``log(beta/(1-alpha))`` and ``log((1-beta)/alpha)``.
Games played in colour-swapped pairs are best tested on the pentanomial model (the five
possible pair scores), which accounts for the correlation within a pair.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from frugalzero.stats import pair_scores, score_from_elo

EPSILON = 1e-3  # stands in for an outcome not seen yet, as fishtest does


@dataclass
class SprtConfig:
    """The hypotheses and error rates of a sequential test."""

    elo0: float = 0.0
    """Elo difference of H0 (the change is no better than this)."""
    elo1: float = 10.0
    """Elo difference of H1 (the change is at least this good)."""
    alpha: float = 0.05
    """Probability of accepting H1 when H0 holds."""
    beta: float = 0.05
    """Probability of accepting H0 when H1 holds."""


@dataclass
class SprtResult:
    llr: float
    lower: float
    upper: float
    decision: str | None
    """'H1' (stronger by elo1), 'H0' (not stronger than elo0) or None (keep playing)."""


def _constrained_mle_shift(probs: Sequence[float], values: Sequence[float], mean: float) -> float:
    """The Lagrange multiplier ``lam`` with sum p_i (a_i - mean) / (1 + lam (a_i - mean)) = 0,
    which makes ``p_i / (1 + lam (a_i - mean))`` the most likely pdf with that mean."""
    dev = [v - mean for v in values]
    lo = -1.0 / max(dev) if max(dev) > 0 else -1e9
    hi = -1.0 / min(dev) if min(dev) < 0 else 1e9

    def f(lam: float) -> float:  # decreasing in lam on (lo, hi)
        return sum(p * d / (1.0 + lam * d) for p, d in zip(probs, dev))

    a, b = lo + 1e-12 * (hi - lo), hi - 1e-12 * (hi - lo)
    for _ in range(200):
        mid = (a + b) / 2
        if f(mid) > 0:
            a = mid
        else:
            b = mid
    return (a + b) / 2


def llr(counts: Sequence[float], values: Sequence[float], elo0: float, elo1: float) -> float:
    """Log-likelihood ratio of H1 against H0 for outcome ``counts`` with scores ``values``."""
    total = sum(counts)
    if total == 0:
        return 0.0
    regular = [c if c > 0 else EPSILON for c in counts]
    n = sum(regular)
    probs = [c / n for c in regular]
    s0, s1 = score_from_elo(elo0), score_from_elo(elo1)
    lam0 = _constrained_mle_shift(probs, values, s0)
    lam1 = _constrained_mle_shift(probs, values, s1)
    out = 0.0
    for p, v in zip(probs, values):
        out += p * (math.log1p(lam0 * (v - s0)) - math.log1p(lam1 * (v - s1)))
    return total * out


def sprt(
    wins: int,
    draws: int,
    losses: int,
    config: SprtConfig | None = None,
    pentanomial: Sequence[int] | None = None,
) -> SprtResult:
    """Where the test stands; pentanomial counts (pairs scoring 0, 1/2, 1, 3/2, 2) when given."""
    cfg = config or SprtConfig()
    if pentanomial is not None:
        value = llr(pentanomial, pair_scores(pentanomial), cfg.elo0, cfg.elo1)
    else:
        value = llr([losses, draws, wins], [0.0, 0.5, 1.0], cfg.elo0, cfg.elo1)
    lower = math.log(cfg.beta / (1 - cfg.alpha))
    upper = math.log((1 - cfg.beta) / cfg.alpha)
    decision = "H1" if value >= upper else "H0" if value <= lower else None
    return SprtResult(value, lower, upper, decision)
