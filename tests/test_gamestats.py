"""Counting a set of games as search-contempt's paper does: intervals, decisiveness, repeats."""

from __future__ import annotations

import json
import math
from pathlib import Path

import chess
import pytest

from frugalzero.cli import main
from frugalzero.gamestats import Results, count_results, summary
from frugalzero.stats import wilson


def test_wilson_interval_matches_the_closed_form_values():
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson(50, 100)
    assert (low, high) == (pytest.approx(0.4038, abs=1e-4), pytest.approx(0.5962, abs=1e-4))
    assert wilson(0, 0) == (0.0, 1.0)


def test_decisiveness_is_the_odds_of_a_decisive_game():
    results = count_results(["1-0"] * 33 + ["1/2-1/2"] * 42 + ["0-1"] * 25 + ["*"])
    assert results == Results(33, 42, 25) and results.games == 100
    ratio, low, high = results.decisiveness()
    assert ratio == pytest.approx(58 / 42) and low < ratio < high
    # the interval is the decisive share's Wilson interval, as odds
    p_low, p_high = wilson(58, 100)
    assert low == pytest.approx(p_low / (1 - p_low)) and high == pytest.approx(
        p_high / (1 - p_high)
    )
    assert math.isinf(Results(3, 0, 1).decisiveness()[0])


def test_repeated_share_counts_games_sharing_an_opening_with_another():
    start = chess.STARTING_FEN
    games = [
        (start, ["e2e4", "e7e5", "g1f3"]),
        (start, ["e2e4", "e7e5", "b1c3"]),
        (start, ["d2d4", "d7d5"]),
        ("8/8/8/8/8/8/8/K6k w - - 0 1", ["e2e4"]),  # same move, other start: not a repeat
    ]
    out = summary(games, Results(1, 2, 1), plies=3)
    assert out["repeated_by_ply"] == [0.5, 0.5, 0.0]
    assert out["repeated_after_move"] == {"1": 0.5}
    # the paper's measure: games beyond the first of each opening, 1 of 4 after one move
    assert out["duplicates_after_move"]["1"] == 0.25 and out["duplicates_after_move"]["2"] == 0
    assert out["draw_pct_ci95"][0] == 50.0


def test_games_command_recounts_selfplay_pgn(tmp_path: Path, tiny_net, capsys):
    from frugalzero.nn.checkpoint import save_net

    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    out, pgn = tmp_path / "games", tmp_path / "pgn"
    args = ["selfplay", "--net", str(net), "--games", "6", "--out", str(out), "--sims", "4"]
    args += ["--pgn", str(pgn), "--nscl", "2", "--json", "--set", "max_plies=24"]
    args += ["--set", "evaluator.backend=inline", "--set", "evaluator.compile=off"]
    assert main(args) == 0
    played = json.loads(capsys.readouterr().out)
    assert len(played["pgn"]) == 1
    text = Path(played["pgn"][0]).read_text()
    assert text.count('[Event "frugalzero contempt"]') == 6 and "nscl=2" in text
    (tmp_path / "pgn" / "junk.pgn").write_text('[Event "x"]\n\n1. e4 Zz9 1-0\n\n')
    assert main(["games", str(pgn), "--json", "--plies", "4"]) == 0
    counted = json.loads(capsys.readouterr().out)
    assert counted["games"] == 6 and counted["skipped"] == 1 and counted["files"] == 2
    wins, draws, losses = played["wdl"]
    assert [counted["white_wins"], counted["draws"], counted["black_wins"]] == [wins, draws, losses]
    assert counted["repeated_by_ply"] == pytest.approx(
        played["repeated_share_by_ply"][:4], abs=1e-3
    )
    assert main(["games", str(tmp_path / "nothing")]) == 2


def test_games_from_one_players_side(tmp_path: Path, capsys):
    def game(white: str, black: str, result: str) -> str:
        return f'[White "{white}"]\n[Black "{black}"]\n[Result "{result}"]\n\n1. e4 e5 {result}\n\n'

    pgn = tmp_path / "match.pgn"
    pgn.write_text(
        game("A", "B", "1-0") + game("B", "A", "1-0") + game("B", "A", "0-1")
        + game("A", "B", "1/2-1/2") + game("C", "D", "1-0")
    )  # fmt: skip
    assert main(["games", str(pgn), "--player", "A", "--json", "--plies", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["player_wins"], out["draws"], out["opponent_wins"]) == (2, 1, 1)
    assert out["games"] == 4 and out["other_games"] == 1 and out["player_pct_ci95"][0] == 50.0
    assert main(["games", str(pgn), "--player", "Z"]) == 2
