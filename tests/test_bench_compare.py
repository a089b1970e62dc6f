"""``bench nn --compare``: KataGo's testgpuerror statistics between two precisions
(``frugalzero.nn.compare``) on outputs whose answer is known, the held-out positions read with
their history, and the command on a tiny net."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import chess
import numpy as np
import pytest

from frugalzero.bench import nn as bench_nn
from frugalzero.chess.history import net_input_from_board
from frugalzero.errors import UserError
from frugalzero.nn import compare

HELDOUT = Path(__file__).resolve().parents[1] / bench_nn.HELDOUT


def _priors(n: int, legal: int = 5, seed: int = 0) -> np.ndarray:
    """``n`` rows of priors over ``legal`` moves, padded with a zero column (a batch's wider
    row), a clear top move in each."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.1, 1.0, size=(n, legal))
    p[:, 0] += 2.0
    p /= p.sum(axis=1, keepdims=True)
    return np.concatenate([p, np.zeros((n, 1))], axis=1).astype(np.float32)


def test_identical_outputs_are_zero_errors_and_pass_every_gate() -> None:
    priors, values = _priors(200), np.linspace(-1, 1, 200, dtype=np.float32)
    out = compare.report(compare.position_errors(values, priors, values.copy(), priors.copy()))
    assert out["positions"] == 200
    for key in ("winrate_error", "top_policy_delta", "policy_kl"):
        assert out[key] == {"mean": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    assert out["top_move_changed_pct"] == 0.0
    assert len(out["gates"]) == len(compare.GATES) == 6
    assert set(out["gates"].values()) == {"pass"} and out["gates_pass"] is True


def test_a_known_value_shift_gives_its_percentiles_in_winrate_points() -> None:
    """Position i's value is off by i/500 (i/10 winrate points, a value's range of 2 being 100
    points): over 1,000 positions KataGo's 99th percentile is the 990th smallest, 98.9 points,
    not an interpolated 98.901."""
    n = 1000
    ref = np.zeros(n)
    shifted = np.arange(n) / 500.0 * np.where(np.arange(n) % 2, 1, -1)  # either direction
    priors = _priors(n)
    errors = compare.position_errors(ref, priors, shifted, priors)
    np.testing.assert_allclose(errors["winrate_error"], np.arange(n) / 10.0)
    out = compare.report(errors)
    assert out["winrate_error"]["p99"] == pytest.approx(98.9)
    assert out["winrate_error"]["p90"] == pytest.approx(89.9)
    assert out["winrate_error"]["max"] == pytest.approx(99.9)
    assert out["winrate_error"]["mean"] == pytest.approx(49.95)
    assert out["gates"]["winrate_error p99 <= 2"] == "fail"
    assert out["gates"]["top_policy_delta p99 <= 2.5"] == "pass"
    assert out["gates_pass"] is False


def test_the_winrate_gate_holds_at_its_limit_and_fails_past_it() -> None:
    priors = _priors(100)
    ref = np.zeros(100)
    at_limit = np.full(100, 0.04)  # 2 points each
    assert (
        compare.report(compare.position_errors(ref, priors, at_limit, priors))["gates"][
            "winrate_error p99 <= 2"
        ]
        == "pass"
    )
    past = np.full(100, 0.0401)
    assert (
        compare.report(compare.position_errors(ref, priors, past, priors))["gates"][
            "winrate_error p99 <= 2"
        ]
        == "fail"
    )


def test_top_policy_delta_is_the_references_top_move_and_a_change_is_counted() -> None:
    ref = np.array([[0.6, 0.4, 0.0], [0.6, 0.4, 0.0], [0.2, 0.3, 0.5]])
    other = np.array([[0.55, 0.45, 0.0], [0.3, 0.7, 0.0], [0.2, 0.3, 0.5]])
    errors = compare.position_errors(np.zeros(3), ref, np.zeros(3), other)
    np.testing.assert_allclose(errors["top_policy_delta"], [5.0, 30.0, 0.0])
    assert errors["top_move_changed"].tolist() == [False, True, False]
    out = compare.report(errors)
    assert out["top_move_changed_pct"] == pytest.approx(100 / 3)
    assert out["top_policy_delta"]["max"] == pytest.approx(30.0)


def test_policy_kl_is_the_references_over_its_legal_moves() -> None:
    ref = np.array([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    other = np.array([[0.25, 0.75, 0.0, 0.0], [0.9, 0.1, 0.0, 0.0]])
    kl = compare.position_errors(np.zeros(2), ref, np.zeros(2), other)["policy_kl"]
    expected = [0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75), math.log(1 / 0.9)]
    np.testing.assert_allclose(kl, expected)
    # a prior the other side's float32 softmax underflowed to 0: large, not infinite
    under = compare.position_errors(np.zeros(1), ref[:1], np.zeros(1), np.array([[1.0, 0, 0, 0]]))
    assert 40 < under["policy_kl"][0] < math.inf


def test_percentile_takes_katagos_element_without_interpolating() -> None:
    assert compare.percentile(np.arange(101)[::-1], 99) == 99.0
    assert compare.percentile(np.arange(1000), 99) == 989.0
    assert compare.percentile(np.array([3.0]), 99) == 3.0
    assert math.isnan(compare.percentile(np.array([]), 99))


def test_outputs_of_different_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="different shapes"):
        compare.position_errors(np.zeros(2), np.zeros((2, 3)), np.zeros(2), np.zeros((2, 4)))


def test_errors_of_batches_concatenate_whatever_their_width() -> None:
    a = compare.position_errors(np.zeros(2), _priors(2, 3), np.zeros(2), _priors(2, 3))
    b = compare.position_errors(np.zeros(3), _priors(3, 7), np.full(3, 0.1), _priors(3, 7))
    both = compare.concatenate([a, b])
    assert both["winrate_error"].tolist() == pytest.approx([0, 0, 5.0, 5.0, 5.0])  # 0.1 of 2
    assert compare.report(both)["positions"] == 5


def test_the_positions_are_reached_by_their_moves_with_history(tmp_path: Path) -> None:
    moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]
    board = chess.Board()
    for uci in moves:
        board.push_uci(uci)
    path = tmp_path / "games.jsonl"
    rows = [{"moves": moves, "fen": board.fen()}, {"moves": moves[:2]}, {"moves": []}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    inputs = bench_nn.read_positions(str(path))
    assert len(inputs) == 3
    assert inputs[0].frames == net_input_from_board(board).frames  # all six frames, in order
    assert inputs[0].frames != net_input_from_board(chess.Board(board.fen())).frames
    assert len(bench_nn.read_positions(str(path), limit=2)) == 2


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"moves": ["e2e4", "e2e4"]}', "illegal move e2e4"),
        ('{"moves": ["e2e4"], "fen": "8/8/8/8/8/8/8/K6k w - - 0 1"}', "do not reach its fen"),
        ('{"fen": "x"}', "not a game's moves"),
        ("not json", "not a game's moves"),
        ('{"moves": ["f2f3", "e7e5", "g2g4", "d8h4"]}', "no legal move"),
    ],
)
def test_a_bad_line_is_one_line_naming_it(tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text('{"moves": []}\n' + line + "\n")
    with pytest.raises(UserError, match=says) as refused:
        bench_nn.read_positions(str(path))
    assert str(refused.value).startswith(f"{path}:2: ") and "\n" not in str(refused.value)


def test_a_missing_positions_file_says_which_option() -> None:
    with pytest.raises(UserError, match="--positions"):
        bench_nn.read_positions("/nonexistent/games.jsonl")


def test_the_heldout_positions_are_there_and_read() -> None:
    assert len(bench_nn.read_positions(str(HELDOUT), limit=50)) == 50


def _bench(*extra: str) -> dict:
    parser = argparse.ArgumentParser()
    bench_nn.add_arguments(parser)
    args = ["--arch", "tiny", "--positions", str(HELDOUT), "--limit", "6", "--batch", "4"]
    args += ["--device", "cpu", "--backend", "inline", "--compile", "off", "--threads", "1"]
    return bench_nn.run(parser.parse_args([*args, *extra]))


@pytest.mark.slow
def test_bench_nn_compare_int8_against_fp32_on_a_tiny_net() -> None:
    same = _bench("--compare", "fp32", "--precision", "fp32")
    assert same["positions"] == 6 and same["precision"] == same["reference_precision"] == "fp32"
    assert same["winrate_error"]["max"] == same["top_policy_delta"]["max"] == 0.0
    assert same["gates_pass"] is True
    out = _bench("--compare", "int8", "--precision", "fp32")
    assert out["precision"] == "int8" and out["reference_precision"] == "fp32"
    assert out["int8_graph"] == "lowered" and out["compiled"] is False
    assert out["history_fill"] == "always"  # the tiny net's rule, applied by NetRunner
    assert out["positions"] == 6 and out["net"] == "random tiny" and out["arch"] == "4x32"
    assert 0 < out["winrate_error"]["mean"] <= out["winrate_error"]["max"]
    assert out["policy_kl"]["max"] >= 0 and 0 <= out["top_move_changed_pct"] <= 100
    assert set(out["gates"].values()) <= {"pass", "fail"}
    json.dumps(out, allow_nan=False)  # strict JSON as printed
