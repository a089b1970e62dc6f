"""Where training stands, and the order it reads its data in.

``Progress`` is saved in every checkpoint; the data order is a function of (seed, iteration,
phase, epoch) alone. Together they are why a run stopped anywhere resumes with the same steps,
on the same positions, as one that was not stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from frugalzero.train.config import TrainConfig

PHASES = ("main", "swa", "publish", "average", "validate")
"""The phases of an iteration, in order."""
_PHASE_SEED = {"main": 0, "swa": 1, "bn": 2}


@dataclass
class Progress:
    """Where training stands (saved in every checkpoint)."""

    iteration: int = 0
    """Iterations completed."""
    phase: str = "main"
    """Phase of the current iteration (one of PHASES)."""
    step: int = 0
    """Optimiser steps done in the current phase."""
    global_step: int = 0
    """Optimiser steps ever."""
    swa_count: int = 0
    """SWA cycles averaged so far in this iteration."""
    average_count: int = 0
    """Published nets folded into the averaging network."""
    data_size: int = 0
    """Training positions of the current iteration (checked when resuming)."""
    data_fingerprint: str = ""
    """Identity of the current iteration's training data (checked when resuming)."""
    metrics_lines: int = 0
    """Records in metrics.jsonl when this state was saved."""
    parent: str = ""
    """net_id of the last published net (the next one's parent)."""
    skipped_steps: int = 0
    """Steps whose gradient was not finite and were skipped."""
    main_total: int = 0
    """Main-phase steps of the current iteration once fitted to a time limit (0 = not
    fitted yet, or no limit): a resumed iteration keeps the length it was given."""


def mid_iteration(progress: Progress) -> bool:
    """Whether an iteration has started: then it goes on only with its own data and settings."""
    return not (progress.phase == "main" and progress.step == 0)


def passed(progress: Progress, phase: str) -> bool:
    """Whether ``phase`` of the current iteration is done (a resumed iteration skips it)."""
    return PHASES.index(progress.phase) > PHASES.index(phase)


def steps_per_epoch(size: int, batch_size: int) -> int:
    """Whole batches per pass (the remainder waits for the next epoch's shuffle)."""
    return max(1, size // batch_size)


def main_steps(config: TrainConfig, size: int) -> int:
    """The main phase's planned steps over ``size`` positions (before any fit to a clock)."""
    if config.steps > 0:
        return config.steps
    return max(1, round(config.epochs * steps_per_epoch(size, config.batch_size)))


def phase_order(seed: int, iteration: int, phase: str, epoch: int, size: int) -> np.ndarray:
    """The data order of one epoch: a function of its coordinates only (exact resume)."""
    return np.random.default_rng([seed, iteration, _PHASE_SEED[phase], epoch]).permutation(size)


def step_plan(
    config: TrainConfig, iteration: int, phase: str, size: int, start: int, total: int
) -> Iterator[list[np.ndarray]]:
    """The micro-batch indices of steps ``start`` .. total - 1 of ``phase``, in order: a
    resumed phase reads exactly the positions the stopped one would have read next."""
    spe = steps_per_epoch(size, config.batch_size)
    batch = min(config.batch_size, size)
    order, order_epoch = None, -1
    for step in range(start, total):
        epoch, index = divmod(step, spe)
        if epoch != order_epoch:
            order, order_epoch = phase_order(config.seed, iteration, phase, epoch, size), epoch
        assert order is not None
        indices = order[index * batch : (index + 1) * batch]
        yield np.array_split(indices, min(config.accumulation, len(indices)))


def bn_positions(config: TrainConfig, iteration: int, size: int) -> np.ndarray:
    """The training positions batch norm is recomputed on: up to ``bn_samples`` of them, in
    an order of their own (the same after a resume)."""
    limit = size if config.bn_samples == 0 else min(size, config.bn_samples)
    return phase_order(config.seed, iteration, "bn", 0, size)[:limit]
