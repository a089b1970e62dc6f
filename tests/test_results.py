"""Result codes: the one map between PGN's codes, White's value and White's score."""

from __future__ import annotations

import chess

from frugalzero.results import SCORE, VALUE, loss_for, result_code


def test_codes_values_and_scores_agree():
    assert VALUE == {"1-0": 1.0, "1/2-1/2": 0.0, "0-1": -1.0}
    assert SCORE == {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}
    for code, value in VALUE.items():
        assert result_code(value) == code
        assert result_code(int(value)) == code  # a record's 1 and 1.0 alike
    assert result_code(None) == "*"


def test_the_side_that_loses_gets_the_other_sides_win():
    assert loss_for(chess.WHITE) == "0-1"
    assert loss_for(chess.BLACK) == "1-0"
