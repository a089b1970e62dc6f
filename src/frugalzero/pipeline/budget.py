"""Fitting the last iteration, and any iteration's training, into a time budget.

An iteration of the one-hour presets takes a quarter of the hour; checked only between
iterations, a 60-minute budget ran 72 minutes. Before each iteration the loop asks how much of a
full one still fits in the minutes left, from what the finished iterations cost: generating and
training scale with the iteration's games and steps, its evaluation matches do not, and the final
matches after the last iteration are set aside. The answer is kept in the run's state, so a
killed iteration resumes at the same size.

Within an iteration the trainer fits its own steps to the seconds left (``frugalzero.train.fit``);
what the run asks of it, from its budget, is ``training_budget``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.state import IterationRecord
from frugalzero.train.fit import TrainingBudget

EVALUATION_RESERVE_S = 60.0
"""Seconds kept for an iteration's evaluation and the final matches before any iteration has
measured them (the one-iteration cpu-1h spent 36)."""
MIN_FRACTION = 0.25
"""A smaller share of an iteration is not started: its fixed costs (loading the replay window,
the evaluation matches) would buy too little training."""


def fraction_left(
    config: RunConfig, elapsed_s: float, finished: Sequence[IterationRecord]
) -> float:
    """The share of a full iteration to run next: 1 while a whole one fits (or no minutes
    budget is set, or nothing has been measured yet), 0 when less than ``MIN_FRACTION`` fits."""
    budget = config.budget
    if not (budget.minutes and budget.fit and finished):
        return 1.0
    scalable = sum(r.generate_s + r.train_s for r in finished) / len(finished)
    left = budget.minutes * 60 - elapsed_s - sum(_evaluation_reserve(config, finished))
    share = left / scalable if scalable > 0 else 1.0
    if share >= 1.0:
        return 1.0
    return share if share >= MIN_FRACTION else 0.0


def training_seconds_left(
    config: RunConfig, elapsed_s: float, finished: Sequence[IterationRecord]
) -> float:
    """Seconds the current iteration's training may still take so that its evaluation and
    the final matches end within ``minutes``: what a run of one iteration (never cut before
    it starts: nothing is measured yet) fits to on a slower machine. The evaluation's share
    is measured on finished iterations, else ``EVALUATION_RESERVE_S``."""
    reserve = sum(_evaluation_reserve(config, finished)) if finished else EVALUATION_RESERVE_S
    return config.budget.minutes * 60 - elapsed_s - reserve


def training_budget(
    config: RunConfig,
    elapsed: Callable[[], float],
    finished: Sequence[IterationRecord],
    last_iteration: bool,
) -> TrainingBudget:
    """What the run asks of the trainer's iteration, given the run's ``elapsed`` seconds: with
    ``anneal = "budget"`` the share of the minutes spent (one cosine over the run); with
    ``minutes`` and ``fit`` the seconds training may still take (``training_seconds_left``),
    and with ``fill`` on the run's last iteration, leave to grow past its steps to fill them."""
    budget = config.budget
    run_progress = seconds_left = None
    if budget.anneal == "budget":
        span = budget.minutes * 60
        run_progress = lambda: elapsed() / span  # noqa: E731
    if budget.minutes and budget.fit:
        seconds_left = lambda: training_seconds_left(config, elapsed(), finished)  # noqa: E731
    grow = budget.fill and last_iteration
    return TrainingBudget(run_progress=run_progress, seconds_left=seconds_left, grow=grow)


def _evaluation_reserve(
    config: RunConfig, finished: Sequence[IterationRecord]
) -> tuple[float, float]:
    """(an iteration's evaluation, the final matches) in seconds, from the finished ones."""
    evaluation = config.evaluation
    fixed = sum(r.evaluate_s for r in finished) / len(finished)
    per_iteration = evaluation.games_vs_random + evaluation.games_vs_best
    final = fixed * 2 * evaluation.final_games / per_iteration if per_iteration else 0.0
    return fixed, final


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
