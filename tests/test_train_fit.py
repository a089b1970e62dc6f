"""Training on a clock (``frugalzero.train.fit``): when the main phase is timed, how many steps
fit, and what a run's budget asks of the trainer (``pipeline.budget.training_budget``)."""

from __future__ import annotations

import pytest

from frugalzero.pipeline.budget import training_budget, training_seconds_left
from frugalzero.pipeline.config import RunConfig
from frugalzero.train.fit import (
    FIT_MIN_SHARE,
    FIT_PROBE_STEPS,
    FIT_SKIP_STEPS,
    TrainingBudget,
    fitted_steps,
    next_stop,
    seconds_per_step,
)


def test_an_unfitted_phase_is_timed_on_its_probe_unless_too_short_to_time():
    assert next_stop(0, 400, 0, grow=False) == FIT_PROBE_STEPS
    assert next_stop(0, 2 * FIT_PROBE_STEPS, 0, grow=False) is None  # twice the probe: as is
    assert next_stop(0, 150, 0, grow=False) is None
    assert next_stop(0, 150, 0, grow=True) == FIT_PROBE_STEPS  # it may grow: worth timing
    assert next_stop(0, FIT_PROBE_STEPS, 0, grow=True) is None  # the probe is the whole phase


def test_a_probe_cut_by_a_stop_is_timed_again_on_enough_steps_when_resumed():
    # a probe stopped at step 95 goes on past 100: its first steps are not timed again
    assert next_stop(95, 1000, 0, grow=False) == 95 + 2 * FIT_SKIP_STEPS
    assert next_stop(30, 1000, 0, grow=False) == FIT_PROBE_STEPS


def test_a_fitted_phase_is_refitted_every_eighth_and_trains_its_last_stretch_as_is():
    assert next_stop(100, 400, 1600, grow=False) == 300  # an eighth of 1600
    assert next_stop(100, 400, 480, grow=False) == 200  # at least a probe's worth
    assert next_stop(1500, 400, 1600, grow=False) is None  # the next stop would be past it


def test_fitted_steps_are_the_steps_that_fit_after_the_swa_phase():
    # 100 steps done, 300 s left at 1 s a step, 50 SWA steps to come: 100 + 300 - 50
    assert fitted_steps(100, 1000, 300.0, 1.0, 50, grow=False) == 350
    assert fitted_steps(100, 1000, 300.0, 2.0, 0, grow=False) == 250


def test_fitted_steps_stay_between_a_quarter_of_the_plan_and_the_plan_unless_growing():
    assert fitted_steps(100, 400, 1e6, 1.0, 0, grow=False) == 400
    assert fitted_steps(100, 400, 1e6, 1.0, 0, grow=True) == 100 + 1_000_000
    assert fitted_steps(100, 1000, -30.0, 1.0, 0, grow=False) == FIT_MIN_SHARE * 1000
    assert fitted_steps(300, 1000, 0.0, 1.0, 0, grow=False) == 301  # never before the next step


def test_the_rate_leaves_the_first_steps_out():
    warm_up = [0.0, 50.0, 51.0] + [60.0 + i for i in range(FIT_SKIP_STEPS - 3)]
    steady = [100.0 + 2.0 * i for i in range(11)]  # 2 s a step
    assert seconds_per_step(warm_up + steady) == pytest.approx(2.0)


def _run_config(minutes: float, fit: bool = True, fill: bool = False, anneal: str = "iteration"):
    config = RunConfig()
    b = config.budget
    b.minutes, b.fit, b.fill, b.anneal = minutes, fit, fill, anneal
    return config


def test_a_run_without_minutes_asks_nothing_of_the_trainer():
    asked = training_budget(_run_config(0.0), lambda: 100.0, [], last_iteration=True)
    assert asked == TrainingBudget()
    assert training_budget(_run_config(10.0, fit=False), lambda: 1.0, [], True) == TrainingBudget()


def test_a_run_on_a_clock_asks_for_the_seconds_left_read_when_the_trainer_asks():
    now = [100.0]
    config = _run_config(10.0, fill=True, anneal="budget")
    asked = training_budget(config, lambda: now[0], [], last_iteration=False)
    assert asked.seconds_left is not None and asked.run_progress is not None
    assert not asked.grow  # fill grows only the run's last iteration
    now[0] = 300.0
    assert asked.seconds_left() == training_seconds_left(config, 300.0, [])
    assert asked.run_progress() == pytest.approx(0.5)
    assert training_budget(config, lambda: now[0], [], last_iteration=True).grow
