"""PUCT maths as pure functions: exploration constant, first-play urgency, move choice, noise."""

from __future__ import annotations

import math

import numpy as np


def c_puct(visits: float, c_init: float, c_base: float) -> float:
    """AlphaZero's exploration rate c(s) = c_init + log((N(s) + c_base + 1) / c_base)."""
    return c_init + math.log((visits + c_base + 1.0) / c_base)


def fpu_value(mode: str, value: float, parent_q: float, visited_prior: float) -> float:
    """Q given to unvisited children: an absolute value, or the parent's Q minus a reduction
    that grows with the prior mass already explored (so a node whose likely moves have been
    tried looks at the rest with more suspicion)."""
    if mode == "absolute":
        return value
    return parent_q - value * math.sqrt(max(visited_prior, 0.0))


def puct_scores(
    priors: np.ndarray,
    visits: np.ndarray,
    q: np.ndarray,
    parent_visits: float,
    c_init: float,
    c_base: float,
    fpu: float,
) -> np.ndarray:
    """Q(s,a) + U(s,a) for every child; unvisited children use ``fpu`` as their Q.

    U(s,a) = c(s) * P(s,a) * sqrt(N(s)) / (1 + N(s,a)). The formula's reference: the tests'
    oracle selects one child at a time and only among those that can win
    (``tests/oracle/tree.py:_puct_slot``), a test holds it to the argmax of these scores, and
    the native tree is held to the oracle.
    """
    cs = c_puct(parent_visits, c_init, c_base) * math.sqrt(parent_visits)
    scores = priors * cs / (visits + 1.0)
    scores += np.where(visits > 0, q, fpu)
    return scores


def temper_priors(priors: np.ndarray, temperature: float) -> np.ndarray:
    """The network's policy at a softmax temperature: P ** (1 / T), renormalised over the same
    moves (the same as dividing the logits by T). A net trained on one move per position is
    sharp; T > 1 lets the search look at the second and third choices sooner."""
    if temperature == 1.0:
        return priors
    tempered = priors ** (1.0 / temperature)
    total = tempered.sum()
    return tempered / total if total > 0 else priors


def temperature_for_ply(
    ply: int, temperature: float, plies: int, final: float, decay: int = 0
) -> float:
    """The move-choice temperature of a given ply (AlphaZero: 1 for 30 plies, then 0). With
    ``decay`` > 0 it falls linearly toward 0 at ply ``decay``, never below ``final``."""
    if ply >= plies:
        return final
    if decay > 0:
        return max(final, temperature * (1.0 - ply / decay))
    return temperature


def choose_by_visits(
    visits: np.ndarray,
    temperature: float,
    rng: np.random.Generator | None,
    tiebreak: np.ndarray | None = None,
) -> int:
    """Index of the chosen child: sampled from visits ** (1 / tau), or the most visited at
    tau = 0 (ties broken by ``tiebreak``, e.g. Q, then by order)."""
    visits = np.asarray(visits, dtype=np.float64)
    if len(visits) == 0:
        raise ValueError("no moves to choose from")
    if temperature <= 0 or rng is None or visits.sum() <= 0:
        best = visits.max()
        candidates = np.flatnonzero(visits == best)
        if tiebreak is not None and len(candidates) > 1:
            return int(candidates[np.argmax(tiebreak[candidates])])
        return int(candidates[0])
    if temperature == 1.0:  # AlphaZero's opening plies: the visits themselves
        cdf = np.cumsum(visits)
    else:  # visits ** (1 / tau), computed in log space so small tau cannot overflow
        with np.errstate(divide="ignore"):
            logits = np.log(visits) / temperature
        logits -= logits.max()
        cdf = np.cumsum(np.exp(logits))
    # rng.choice(len(visits), p=cdf's increments / total) without its checks (a move's worth of
    # self-play time): the same cumulative sums and one uniform draw
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))


def legal_softmax(logits: np.ndarray) -> np.ndarray:
    """Priors, row by row, from the legal moves' logits padded with -inf (the network's answer
    to the native core's rows); a row without a legal move gets zeros."""
    top = logits.max(axis=1, keepdims=True)
    z = np.exp(logits - np.where(np.isfinite(top), top, 0.0))
    total = z.sum(axis=1, keepdims=True)
    return np.divide(z, total, out=np.zeros_like(z), where=total > 0)


def dirichlet_mix(
    priors: np.ndarray, alpha: float, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """(1 - eps) * P + eps * Dir(alpha), over exactly the entries of ``priors`` (legal moves)."""
    return (1.0 - epsilon) * priors + epsilon * dirichlet_noise(rng, len(priors), alpha)


def dirichlet_noise(rng: np.random.Generator, n: int, alpha: float) -> np.ndarray:
    """``rng.dirichlet(np.full(n, alpha))``, draw for draw and bit for bit (alpha >= 0.1, where
    NumPy normalises gamma draws by their running sum), at half its cost per move."""
    if alpha < 0.1:
        return rng.dirichlet(np.full(n, alpha))
    draws = rng.standard_gamma(alpha, n)
    return draws * (1.0 / np.add.accumulate(draws)[-1])
