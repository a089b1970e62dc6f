"""Fitting the last iteration into a time budget.

An iteration of the one-hour presets takes a quarter of the hour; checked only between
iterations, a 60-minute budget ran 72 minutes. Before each iteration the loop asks how much of a
full one still fits in the minutes left, from what the finished iterations cost: generating and
training scale with the iteration's games and steps, its evaluation matches do not, and the final
matches after the last iteration are set aside. The answer is kept in the run's state, so a
killed iteration resumes at the same size.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.state import IterationRecord

MIN_FRACTION = 0.25
"""A smaller share of an iteration is not started: its fixed costs (loading the replay window,
the evaluation matches) would buy too little training."""


def fraction_left(
    config: RunConfig, elapsed_s: float, finished: Sequence[IterationRecord]
) -> float:
    """The share of a full iteration to run next: 1 while a whole one fits (or no minutes
    budget is set, or nothing has been measured yet), 0 when less than ``MIN_FRACTION`` fits."""
    budget, evaluation = config.budget, config.evaluation
    if not (budget.minutes and budget.fit and finished):
        return 1.0
    n = len(finished)
    scalable = sum(r.generate_s + r.train_s for r in finished) / n
    fixed = sum(r.evaluate_s for r in finished) / n
    per_iteration = evaluation.games_vs_random + evaluation.games_vs_best
    final = fixed * 2 * evaluation.final_games / per_iteration if per_iteration else 0.0
    left = budget.minutes * 60 - elapsed_s - final - fixed
    share = left / scalable if scalable > 0 else 1.0
    if share >= 1.0:
        return 1.0
    return share if share >= MIN_FRACTION else 0.0


def scaled(config: RunConfig, fraction: float) -> RunConfig:
    """``config`` with the games, exploration steps and training steps of one iteration cut to
    ``fraction`` (at least an opening pair of games, one step)."""
    if fraction >= 1.0:
        return config
    g, t = config.generate, config.train
    generate = dataclasses.replace(
        g, games=max(2, math.ceil(g.games * fraction)), steps=max(1, math.ceil(g.steps * fraction))
    )
    if t.steps > 0:
        train = dataclasses.replace(t, steps=max(1, math.ceil(t.steps * fraction)))
    else:
        train = dataclasses.replace(t, epochs=t.epochs * fraction)
    return dataclasses.replace(config, generate=generate, train=train)
