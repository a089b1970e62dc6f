"""Gumbel root search maths (Danihelka et al., "Policy improvement by planning with Gumbel",
ICLR 2022) as pure functions over one node's arrays.

Values are in [-1, 1] from the chooser's view; sigma works on q-hat in [0, 1].
"""

from __future__ import annotations

import math

import numpy as np


def considered_visits(m: int, simulations: int) -> list[int]:
    """Sequential halving as a schedule: entry k is the visit count (this search) that the
    action visited by simulation k must have.

    Phases: log2(m) of them; in each, every remaining action gets
    max(1, floor(n / (log2(m) * remaining))) more visits; then the better half remains (never
    fewer than 2). Choosing, at each simulation, the best-scored action among those with the
    scheduled count visits the remaining actions round-robin and drops the worse half exactly
    where a phase ends.
    """
    if m <= 1:
        return list(range(simulations))
    phases = math.ceil(math.log2(m))
    visits = [0] * m
    remaining = m
    sequence: list[int] = []
    while len(sequence) < simulations:
        extra = max(1, simulations // (phases * remaining))
        for _ in range(extra):
            sequence.extend(visits[:remaining])
            for i in range(remaining):
                visits[i] += 1
        remaining = max(2, remaining // 2)
    return sequence[:simulations]


def logits_from_priors(priors: np.ndarray) -> np.ndarray:
    """Logits up to a constant (softmax-invariant); zero priors become very negative."""
    return np.log(np.maximum(priors, 1e-30))


def mixed_value(value: float, priors: np.ndarray, visits: np.ndarray, q: np.ndarray) -> float:
    """v_mix: the network value mixed with the prior-weighted Q of the visited children,
    the paper's estimate for the children not visited (its eq. 33)."""
    visited = visits > 0
    total = float(visits.sum())
    if total <= 0 or not visited.any():
        return value
    mass = float(priors[visited].sum())
    if mass <= 0:
        return value
    weighted = float((priors[visited] * q[visited]).sum()) / mass
    return (value + total * weighted) / (1.0 + total)


def completed_q(
    value: float, priors: np.ndarray, visits: np.ndarray, q: np.ndarray, rescale: bool
) -> np.ndarray:
    """Q of visited children, v_mix for the others, mapped to [0, 1] (fixed map of [-1, 1], or
    min-max over the node's children with ``rescale``)."""
    completed = np.where(visits > 0, q, mixed_value(value, priors, visits, q))
    if rescale:
        low, high = completed.min(), completed.max()
        return (completed - low) / max(high - low, 1e-8)
    return (np.clip(completed, -1.0, 1.0) + 1.0) * 0.5


def sigma(q_hat: np.ndarray, max_visits: float, c_visit: float, c_scale: float) -> np.ndarray:
    """sigma(q-hat) = (c_visit + max_b N(b)) * c_scale * q-hat: monotone, and it sharpens as
    the node gets more visits."""
    return (c_visit + max_visits) * c_scale * q_hat


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()


def improved_policy(
    logits: np.ndarray,
    value: float,
    priors: np.ndarray,
    visits: np.ndarray,
    q: np.ndarray,
    c_visit: float,
    c_scale: float,
    rescale: bool = False,
) -> np.ndarray:
    """pi' = softmax(logits + sigma(completed Q)): the policy target and the interior prior."""
    q_hat = completed_q(value, priors, visits, q, rescale)
    return softmax(logits + sigma(q_hat, float(visits.max(initial=0.0)), c_visit, c_scale))


def interior_select(policy: np.ndarray, visits: np.ndarray, block: np.ndarray | None = None) -> int:
    """The paper's deterministic non-root selection: argmax pi'(a) - N(a) / (1 + sum N), which
    makes the visit distribution track pi' (``policy``, from ``improved_policy``). ``block``
    (-inf at moves proven to lose, else 0) is added before the argmax."""
    scores = policy - visits / (1.0 + visits.sum())
    if block is not None:
        scores += block
    return int(scores.argmax())


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first (Gumbel-top-k sampling with scores g + logits)."""
    k = min(k, len(scores))
    order = np.argsort(-scores, kind="stable")
    return order[:k]
