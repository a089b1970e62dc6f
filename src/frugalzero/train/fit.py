"""Training on a clock, in one place: what a run asks of the trainer, how the trainer times
its steps, and how many of them fit.

A run with a minutes budget (``pipeline.budget.training_budget``) hands the trainer a
``TrainingBudget``: the seconds its training may still take, whether the main phase may grow
past its planned steps to fill them, and for a run annealing once over its budget the share of
it spent. The trainer then trains the main phase in stretches: the first ``FIT_PROBE_STEPS``
steps are timed (``StepTimer``, the first ``FIT_SKIP_STEPS`` not counted), the steps that fit
in the seconds left become the phase's length (``fitted_steps``), and every ``1 /
FIT_SEGMENTS`` of it the rate is measured and the length fitted again (``next_stop``), so a
machine that slows down or speeds up mid-way still ends near its time. Everything here but the
timer is a pure function of numbers; imports no torch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FIT_PROBE_STEPS = 100
"""Main-phase steps timed before the phase is cut to fit a time limit."""
FIT_SKIP_STEPS = 10
"""Of those, the first ones not timed (allocations, compilation, caches warming up)."""
FIT_SEGMENTS = 8
"""After the first fit, the phase is timed and fitted again every this share of its length."""
FIT_MIN_SHARE = 0.25
"""A phase is never cut below this share of its steps: a net trained less would be of no use
to anyone, so a run whose data ran late ends late instead."""


@dataclass(frozen=True)
class TrainingBudget:
    """What a run on a clock asks of the trainer's next (or stopped) iteration; the default
    asks nothing (the planned steps, each iteration annealed on its own)."""

    run_progress: Callable[[], float] | None = None
    """The share of the run's budget spent so far, for a run that anneals once over it: it
    places each main-phase step on the cosine instead of the phase's own steps."""
    seconds_left: Callable[[], float] | None = None
    """For a run on a clock, the seconds its training may still take: the main phase is cut
    to fit them."""
    grow: bool = False
    """With ``seconds_left``: the main phase may also grow past its steps to fill them."""


def next_stop(step: int, planned: int, fitted: int, grow: bool) -> int | None:
    """The step at which the main phase is next timed and fitted, or None when it trains to
    its end as it is. ``fitted`` is the length fitted so far (0: not yet). A phase too short to
    time (twice the probe, or just the probe when it may grow) keeps its planned length; a
    fitted one is refitted every ``1 / FIT_SEGMENTS`` of its length."""
    total = fitted or planned
    if fitted:
        stop = step + max(FIT_PROBE_STEPS, math.ceil(total / FIT_SEGMENTS))
    else:
        stop = max(FIT_PROBE_STEPS, step + 2 * FIT_SKIP_STEPS)
        if not grow and total <= 2 * stop:
            return None
    return stop if stop < total else None


def fitted_steps(
    step: int,
    planned: int,
    seconds_left: float,
    seconds_per_step: float,
    swa_steps: int,
    grow: bool,
) -> int:
    """The main phase's length after ``step`` steps at ``seconds_per_step``: the steps that fit
    in ``seconds_left`` once the SWA phase's ``swa_steps`` are set aside. Never past
    ``planned`` unless ``grow``, never under ``FIT_MIN_SHARE`` of it, never before the next
    step."""
    cap = math.inf if grow else planned
    fits = step + int(seconds_left / seconds_per_step) - swa_steps
    return int(min(cap, max(step + 1, fits, math.ceil(FIT_MIN_SHARE * planned))))


def seconds_per_step(times: Sequence[float]) -> float:
    """The mean step time from steps' end times, the first ``FIT_SKIP_STEPS`` left out."""
    timed = times[FIT_SKIP_STEPS:]
    return (timed[-1] - timed[0]) / (len(timed) - 1)


class StepTimer:
    """The end times of the steps of one stretch being timed."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def tick(self) -> None:
        """A step has ended."""
        self.times.append(time.perf_counter())

    def seconds_per_step(self) -> float:
        return seconds_per_step(self.times)
