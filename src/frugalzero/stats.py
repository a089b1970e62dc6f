"""The statistics every measurement shares, in one place: Elo <-> expected score, the interval of
a match's score (per game, or per colour-swapped pair of games: the pentanomial model), Wilson's
interval of a proportion, the head-to-head estimate of two players from their game pairs, and
Student's t on paired differences with the smallest effect such a design finds.

The Elo model is the logistic one every rating list uses: a player ``d`` Elo stronger expects
the score ``1 / (1 + 10^(-d/400))``, and a draw counts as half a win and half a loss. A match's
interval is the normal one of its mean score, mapped through the logistic curve (so it is
asymmetric like the curve); when its games were played in colour-swapped pairs on one opening,
the variance is that of the pairs' scores, smaller because the opening's bias cancels (fishtest's
and fastchess's pentanomial statistics). Distributions are scipy's (scipy.special, what
scipy.stats calls), imported when first needed, so a module that only counts games does not pay
for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
C = math.log(10) / 400  # d(logit of the expected score) / d(Elo)


# ---------------------------------------------------------------- distributions (scipy)


def _special() -> Any:
    """scipy.special: the functions behind scipy.stats' t, normal and noncentral t, without
    scipy.stats' per-call argument handling (a microsecond a call rather than a hundred)."""
    from scipy import special

    return special


def normal_cdf(x: float) -> float:
    """P(Z <= x) for a standard normal Z."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (the normal's at
    df = inf): scipy.stats.t.ppf."""
    special = _special()
    if math.isinf(df):
        return float(special.ndtri(p))
    return float(special.stdtrit(df, p))


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom: scipy.stats.t.sf."""
    return float(_special().stdtr(df, -t))


def nct_sf(t: float, df: float, nc: float) -> float:
    """P(T > t) for the noncentral t with noncentrality ``nc``: scipy.stats.nct.sf."""
    return float(1.0 - _special().nctdtr(df, nc, t))


def two_sided(confidence: float, df: float = math.inf) -> float:
    """The quantile whose +- interval holds ``confidence`` of t with ``df`` (normal: inf)."""
    return t_quantile(1.0 - (1.0 - confidence) / 2.0, df)


# ---------------------------------------------------------------- proportions


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (well behaved at 0 and 1, unlike the normal
    approximation)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# ---------------------------------------------------------------- Elo of a match


def score_from_elo(diff: float) -> float:
    """Expected score of the player ``diff`` Elo stronger."""
    return 1.0 / (1.0 + 10.0 ** (-diff / 400.0))


def elo_from_score(score: float) -> float:
    """Elo difference that makes ``score`` the expected score (+-inf at 1 and 0)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0) + 0.0  # + 0.0: no "-0.0" at 50%


def elo_sd(games: int, score: float = 0.5, draw_rate: float = 0.0) -> float:
    """The standard error of the Elo measured by ``games`` independent games at ``score`` with
    ``draw_rate`` draws (delta method: the score's s.e. over the logistic's slope). 347/sqrt(n)
    at an even score without draws; more as the score leaves 1/2, less with draws."""
    if games <= 0 or not 0.0 < score < 1.0:
        return math.inf
    var = score * (1.0 - score) - draw_rate / 4.0  # per game: E[x^2] - score^2
    return math.sqrt(max(var, 0.0) / games) / (C * score * (1.0 - score))


def los(wins: float, losses: float) -> float:
    """Likelihood of superiority: probability that the winner of more games is the stronger,
    from the decisive games alone (draws say nothing about which is stronger)."""
    if wins + losses == 0:
        return 0.5
    return normal_cdf((wins - losses) / math.sqrt(wins + losses))


def pair_scores(pentanomial: Sequence[int]) -> tuple[float, ...]:
    """Score of a pair (two games, one opening) for each pentanomial bin, per game."""
    return tuple(i / (len(pentanomial) - 1) for i in range(len(pentanomial)))


def _pair_moments(pentanomial: Sequence[int]) -> tuple[int, float, float]:
    """(pairs, mean score a game, variance of one pair's score a game)."""
    pairs = sum(pentanomial)
    values = pair_scores(pentanomial)
    mean = sum(c * v for c, v in zip(pentanomial, values)) / pairs
    var = sum(c * (v - mean) ** 2 for c, v in zip(pentanomial, values)) / pairs
    return pairs, mean, var


def _bounded(mean: float, se: float, games: int, z: float) -> tuple[float, float, float, float]:
    """(mean, low, high, se) of a score: Wald, with Wilson's half-width (as ``z`` s.e.) when the
    observed variance is zero (every game or pair ended alike), where the truth is not known."""
    if se == 0.0:
        se = wilson(0, games, z)[1] / z
    return mean, max(0.0, mean - z * se), min(1.0, mean + z * se), se


def score_interval(
    wins: int,
    draws: int,
    losses: int,
    pentanomial: Sequence[int] | None = None,
    z: float = Z95,
) -> tuple[float, float, float]:
    """Mean score and its ``z``-sigma interval (Wald; Wilson's bound when every game ended the
    same way, where the observed variance is zero but the truth is not known)."""
    n = wins + draws + losses
    if n == 0:
        return 0.5, 0.0, 1.0
    mean = (wins + 0.5 * draws) / n
    if pentanomial is not None and sum(pentanomial) > 0:
        pairs, _, var = _pair_moments(pentanomial)
        se = math.sqrt(var / pairs)
    else:
        var = (wins * (1 - mean) ** 2 + draws * (0.5 - mean) ** 2 + losses * mean**2) / n
        se = math.sqrt(var / n)
    return _bounded(mean, se, n, z)[:3]


def elo_interval(
    wins: int,
    draws: int,
    losses: int,
    pentanomial: Sequence[int] | None = None,
    z: float = Z95,
) -> tuple[float, float, float]:
    """Elo difference and its interval (95% by default) from one player's results."""
    mean, lo, hi = score_interval(wins, draws, losses, pentanomial, z)
    return elo_from_score(mean), elo_from_score(lo), elo_from_score(hi)


@dataclass(frozen=True)
class HeadToHead:
    """Two players measured against each other in colour-swapped game pairs."""

    pairs: int
    score: float
    """Mean score a game of the first player."""
    elo: float
    """Its Elo over the second (+-inf for a perfect score)."""
    sigma: float
    """Standard error of ``elo`` (the score's over the logistic's slope; inf at 0 or 1)."""
    low: float
    high: float
    """The interval at the given confidence: the score's, mapped to Elo (asymmetric)."""
    los: float
    """Probability that the first is the stronger (normal on the mean pair score)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs,
            "score": round(self.score, 4),
            "elo": round(self.elo, 1),
            "sigma": round(self.sigma, 1),
            "interval": [round(self.low, 1), round(self.high, 1)],
            "los": round(self.los, 4),
        }


def head_to_head(pentanomial: Sequence[int], confidence: float = 0.95) -> HeadToHead:
    """The Elo difference of two players from their game pairs: ``pentanomial[i]`` pairs (one
    opening, colours swapped) in which the first scored i/2 points (LL, LD, WL+DD, WD, WW).

    The statistics of fishtest (``stat_util.get_elo``) and fastchess (``EloPentanomial``): the
    mean score a game, its standard error from the spread of the pairs' scores (which keeps the
    openings' bias out), the interval of the score mapped to Elo, LOS = Phi((score - 1/2) / s.e.).
    """
    if len(pentanomial) != 5 or min(pentanomial) < 0:
        raise ValueError(f"pentanomial counts are 5 non-negative numbers, not {pentanomial!r}")
    pairs = int(sum(pentanomial))
    if pairs == 0:
        return HeadToHead(0, 0.5, 0.0, math.inf, -math.inf, math.inf, 0.5)
    _, mean, var = _pair_moments(pentanomial)
    mean, lo, hi, se = _bounded(mean, math.sqrt(var / pairs), 2 * pairs, two_sided(confidence))
    slope = C * mean * (1.0 - mean)
    return HeadToHead(
        pairs,
        mean,
        elo_from_score(mean),
        se / slope if slope > 0 else math.inf,
        elo_from_score(lo),
        elo_from_score(hi),
        normal_cdf((mean - 0.5) / se),
    )


# ---------------------------------------------------------------- paired differences (t)


def paired_t(
    differences: np.ndarray | Sequence[float], confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) of Student's t interval on the last axis of ``differences`` (each row
    one experiment's paired differences, at least two): mean +- t_{n-1} * s / sqrt(n)."""
    d = np.asarray(differences, dtype=float)
    n = d.shape[-1]
    if n < 2:
        raise ValueError("a t interval needs at least two differences")
    mean = d.mean(axis=-1)
    half = two_sided(confidence, n - 1) * d.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean, mean - half, mean + half


def paired_t_p_value(differences: Sequence[float]) -> float | None:
    """Two-sided p of Student's t that the differences' true mean is 0 (None when fewer than
    two, or when they do not vary)."""
    n = len(differences)
    if n < 2:
        return None
    d = np.asarray(differences, dtype=float)
    spread = float(d.std(ddof=1))
    if spread == 0:
        return None
    t = abs(float(d.mean())) / (spread / math.sqrt(n))
    return 2 * t_sf(t, n - 1)


def paired_t_power(effect: float, pairs: int, sd: float, confidence: float) -> float:
    """Probability that the two-sided paired t interval at ``confidence`` on ``pairs``
    differences of s.d. ``sd`` lies above 0 when their true mean is ``effect`` (noncentral t:
    exact for normal differences)."""
    if pairs < 2:
        raise ValueError("a t test needs at least two pairs")
    df = pairs - 1
    return nct_sf(two_sided(confidence, df), df, effect * math.sqrt(pairs) / sd)


@lru_cache(maxsize=256)  # pure, and a root of the noncentral t costs milliseconds
def minimum_detectable_effect(pairs: int, sd: float, confidence: float, power: float):
    """The smallest true mean difference the paired t interval at ``confidence`` finds above 0
    with probability ``power``, from ``pairs`` differences of s.d. ``sd`` (solved on the
    noncentral t, not the large-sample (t + t) * sd / sqrt(n), which overstates the power of
    a few pairs); None below two pairs."""
    if pairs < 2:
        return None
    if sd == 0:
        return 0.0
    from scipy.optimize import brentq

    df = pairs - 1
    crit = two_sided(confidence, df)
    high = 1.0
    while nct_sf(crit, df, high) < power:
        high *= 2
    nc = brentq(lambda x: nct_sf(crit, df, x) - power, 0.0, high, xtol=1e-10)
    return nc * sd / math.sqrt(pairs)


def pairs_for_effect(effect: float, sd: float, confidence: float, power: float) -> int | None:
    """The fewest pairs (at least two) whose paired t at ``confidence`` finds a true mean
    difference ``effect`` above 0 with probability ``power``, for differences of s.d. ``sd``:
    how a pilot's measured spread sizes its follow-up. None where no count up to a million
    does (a zero or negative effect)."""
    if effect <= 0:
        return None
    if sd == 0:
        return 2
    low, high = 1, 2  # power rises with the pairs: double, then bisect (one pair has no t)
    while paired_t_power(effect, high, sd, confidence) < power:
        low, high = high, high * 2
        if high > 1_000_000:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        if paired_t_power(effect, middle, sd, confidence) >= power:
            high = middle
        else:
            low = middle
    return high
