"""The time manager's rules, as pure functions of the clock and the search's state."""

from __future__ import annotations

import chess
import pytest

from frugalzero.uci.timeman import (
    LAG_DECAY,
    LAG_MAX,
    Lag,
    MoveTimer,
    TimeBudget,
    plan,
    side_clock,
)

WEEK_MS = 7 * 24 * 3600 * 1000

E4, D4 = chess.Move.from_uci("e2e4"), chess.Move.from_uci("d2d4")


def test_plan_gives_a_share_of_the_clock_and_a_hard_cap():
    budget = plan(60_000, 1_000, None, None, overhead_ms=100)
    assert budget is not None and budget.managed
    assert budget.soft == pytest.approx((60_000 / 20 + 750) / 1000)
    assert budget.hard == pytest.approx(3 * budget.soft)
    short = plan(2_000, 0, None, None, overhead_ms=100)  # a fifth of the clock at most
    assert short is not None and short.hard <= 0.4 and short.soft <= short.hard
    last = plan(150, 0, 1, None, overhead_ms=100)  # never past the clock minus the overhead
    assert last is not None and last.hard <= 0.05
    assert plan(None, 0, None, None, 100) is None
    fixed = plan(None, 0, None, 300, overhead_ms=50)
    assert (fixed.soft, fixed.hard, fixed.managed) == (0.25, 0.25, False)
    assert side_clock(chess.BLACK, 5, 7, 1, 2) == (7, 2)


def test_a_settled_best_move_stops_at_the_soft_budget():
    timer = MoveTimer(TimeBudget(1.0, 3.0, managed=True))
    assert not timer.should_stop(0.1, E4, 5, 1000)
    assert not timer.should_stop(0.9, E4, 50, 1000)
    assert timer.should_stop(1.0, E4, 60, 1000)


def test_an_unsettled_best_move_takes_more_time_but_never_past_the_hard_limit():
    timer = MoveTimer(TimeBudget(1.0, 3.0, managed=True))
    timer.should_stop(0.2, E4, 10, 1000)
    assert not timer.should_stop(0.9, D4, 1, 1000)  # a new best move just before the budget
    assert not timer.should_stop(1.5, D4, 30, 1000)  # held for 0.6 of 1.5 s: not yet
    assert timer.should_stop(1.8, D4, 40, 1000)  # held for half the search
    flipping = MoveTimer(TimeBudget(1.0, 3.0, managed=True))
    moves = [E4, D4] * 20
    stops = [flipping.should_stop(0.1 * (i + 1), m, 0, 1000) for i, m in enumerate(moves)]
    assert stops.index(True) == 29  # 3.0 s: the hard limit


def test_a_lead_the_time_left_cannot_close_stops_at_once():
    timer = MoveTimer(TimeBudget(1.0, 3.0, managed=True))
    assert not timer.should_stop(0.5, E4, 2400, 1000)  # 2.5 s x 1000/s could still close it
    assert timer.should_stop(0.6, E4, 2500, 1000)


def test_a_fixed_movetime_is_only_a_limit():
    timer = MoveTimer(TimeBudget(0.5, 0.5, managed=False))
    assert not timer.should_stop(0.4, E4, 10**6, 1000)
    assert timer.should_stop(0.5, E4, 0, 1000)


def test_a_huge_clock_is_planned_as_a_long_games_clock():
    """``go wtime 10^15`` (clamped to a week by ``parse_go``) once planned a week's twentieth,
    about 8 h a move: a clock past the longest a game has is planned as that, two hours (a
    classical game's), and an increment past a minute as a minute."""
    week = plan(WEEK_MS, WEEK_MS, None, None, overhead_ms=100)
    two_hours = plan(2 * 3600 * 1000, 60_000, None, None, overhead_ms=100)
    assert week is not None and two_hours is not None
    assert (week.soft, week.hard) == (two_hours.soft, two_hours.hard)
    assert 60 < week.soft <= week.hard <= 30 * 60  # a long think, not a day
    shorter = plan(3600 * 1000, 0, None, None, overhead_ms=100)  # an hour: as before
    assert shorter is not None and shorter.soft == pytest.approx(3600 / 20)


def test_the_latest_answer_leaves_half_the_overhead_on_the_clock():
    """Past its hard limit the protocol stops the search; at ``latest`` it answers whatever
    the search does, leaving half the ``MoveOverhead`` for the pipe: never past the clock."""
    budget = plan(2_000, 50, None, None, overhead_ms=100)
    assert budget is not None and budget.hard < budget.answer_by == pytest.approx(1.95)
    trouble = plan(100, 0, None, None, overhead_ms=100)  # no more than the overhead left
    assert trouble is not None and trouble.hard == 0.01 and trouble.answer_by == 0.05
    fixed = plan(None, 0, None, 300, overhead_ms=50)
    assert fixed is not None and fixed.answer_by == pytest.approx(0.275)
    later = budget.spent(0.2)  # what went by before the search started counts
    assert later.answer_by == pytest.approx(1.75) and later.hard == pytest.approx(budget.hard - 0.2)


def test_lateness_is_remembered_fading_and_bounded():
    lag = Lag()
    lag.observe(-0.2)  # on time: nothing to remember
    assert lag.ms == 0
    lag.observe(0.4)
    assert lag.ms == 400
    lag.observe(0.0)
    lag.observe(-1.0)
    assert lag.ms == round(400 * LAG_DECAY**2)
    lag.observe(30.0)  # one stall: bounded
    assert lag.seconds == LAG_MAX
