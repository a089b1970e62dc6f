"""Clocks under a time control: the arithmetic of one move, what each side is told, flag falls."""

from __future__ import annotations

import chess
import pytest

from frugalzero.evaluate.clock import (
    GameClocks,
    TimeControl,
    flag_verdict,
    parse_time_control,
    spend,
    time_control_tag,
)

FISCHER = TimeControl(10.0, 0.1)


@pytest.mark.parametrize(
    ("remaining", "moves_made", "used", "left"),
    [
        (10.0, 1, 0.5, 9.6),  # time used, then the increment
        (10.0, 1, 0.0, 10.1),  # an instant move gains the increment
        (0.3, 7, 0.33, 0.1),  # over by 0.03 s, within the 0.05 s tolerance: clock at zero
        (0.3, 7, 0.36, None),  # over by 0.06 s: the flag fell
    ],
)
def test_spend_charges_the_move_and_adds_the_increment(remaining, moves_made, used, left):
    got = spend(FISCHER, remaining, moves_made, used, tolerance=0.05)
    assert got == (None if left is None else pytest.approx(left))


def test_moves_to_go_gives_the_base_again_at_the_end_of_each_period():
    tc = TimeControl(60.0, 0.0, moves=40)
    assert spend(tc, 5.0, 39, 1.0, 0.05) == pytest.approx(4.0)
    assert spend(tc, 5.0, 40, 1.0, 0.05) == pytest.approx(64.0)  # 40th move: a new period
    assert spend(tc, 5.0, 80, 1.0, 0.05) == pytest.approx(64.0)
    clocks = GameClocks(tc, tc, 0.05)
    assert clocks.limit(chess.WHITE).remaining_moves == 40
    clocks.spend(chess.WHITE, 0.1)
    assert clocks.limit(chess.WHITE).remaining_moves == 39
    assert clocks.limit(chess.BLACK).remaining_moves == 40


def test_each_side_is_told_both_clocks():
    clocks = GameClocks(FISCHER, TimeControl(5.0, 0.0), 0.05)
    assert clocks.spend(chess.WHITE, 2.0)
    limit = clocks.limit(chess.BLACK)
    assert (limit.white_clock, limit.black_clock) == (pytest.approx(8.1), 5.0)
    assert (limit.white_inc, limit.black_inc, limit.remaining_moves) == (0.1, 0.0, None)
    assert clocks.own_clock(chess.WHITE) == pytest.approx(8.1)


def test_a_side_without_a_clock_is_reported_with_its_opponents_clock():
    clocks = GameClocks(None, FISCHER, 0.05)
    assert clocks.limit(chess.WHITE) is None and clocks.own_clock(chess.WHITE) is None
    assert clocks.spend(chess.WHITE, 100.0)  # no clock, no flag
    assert clocks.spend(chess.BLACK, 1.0)
    limit = clocks.limit(chess.BLACK)
    assert limit.white_clock == limit.black_clock == pytest.approx(9.1)
    assert limit.white_inc == limit.black_inc == 0.1


def test_a_flag_fall_loses_unless_the_opponent_cannot_mate():
    clocks = GameClocks(TimeControl(1.0), None, 0.05)
    assert not clocks.spend(chess.WHITE, 1.2)
    assert clocks.own_clock(chess.WHITE) == 0.0
    assert flag_verdict(chess.Board(), chess.WHITE) == ("0-1", "White loses on time")
    lone_king = chess.Board("4k3/8/8/8/8/8/8/3QK3 b - - 0 1")  # Black's flag; White can mate
    assert flag_verdict(lone_king, chess.BLACK) == ("1-0", "Black loses on time")
    assert flag_verdict(lone_king, chess.WHITE) == (
        "1/2-1/2",
        "White out of time, Black cannot mate",
    )


def test_time_control_texts_and_the_pgn_tag():
    assert parse_time_control("10+0.1") == FISCHER and FISCHER.text() == "10+0.1"
    assert parse_time_control("40/60").text() == "40/60+0"
    assert parse_time_control(".5+.05").text() == "0.5+0.05"
    assert time_control_tag(FISCHER, None) == time_control_tag(FISCHER, FISCHER) == "10+0.1"
    assert time_control_tag(None, None) == "-"
    assert time_control_tag(FISCHER, TimeControl(5.0)) == "?"
