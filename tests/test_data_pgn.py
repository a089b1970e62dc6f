"""PGN import: every good game imported exactly, every broken one reported with its reason."""

from __future__ import annotations

import gzip
import io
import json

import chess
import chess.pgn
import numpy as np
import pytest

from frugalzero.chess.moves import move_to_index
from frugalzero.cli import main
from frugalzero.data.importer import import_pgn
from frugalzero.data.pgn import split_games, unreadable_token
from frugalzero.data.shards import read_shard, shard_paths

GOOD_1 = """[Event "good: comments, NAGs, variations"]
[White "A"]
[Black "B"]
[WhiteElo "2100"]
[BlackElo "2000"]
[Result "1-0"]

1. e4 {a comment
spanning lines; with ( and [ inside} e5 $1 2. Nf3 (2. f4 exf4 (2... d5 3. exd5)
3. Nf3) 2... Nc6!? 3. Bb5 a6 ; rest of line comment
4. Ba4 {[%clk 0:01:00]} Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 8. c3 O-O 1-0
"""
GOOD_2 = """[Event "good: FEN start, promotion, check marks"]
[SetUp "1"]
[FEN "8/P3k3/8/8/8/8/5K2/8 w - - 0 60"]
[WhiteElo "1500"]
[BlackElo "2500"]
[Result "1/2-1/2"]

60. a8=Q Kd6 61. Qd8+ Ke6 62. Qe8+ Kd6 1/2-1/2
"""
GOOD_3 = """[Event "good: black wins, no blank line before movetext"]
[Result "0-1"]
1. f3 e5 2. g4 Qh4# 0-1
"""
BAD = {
    "no result": '[Event "star"]\n[Result "*"]\n\n1. d4 d5 2. c4 *\n',
    "illegal move": '[Event "illegal"]\n[Result "1-0"]\n\n1. e4 e5 2. Ke3 Nf6 1-0\n',
    "unreadable move": '[Event "garbled"]\n[Result "1/2-1/2"]\n\n1. e4 e5 2. Qz9 Nc6 1/2-1/2\n',
    "bad FEN": '[Event "fen"]\n[SetUp "1"]\n[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]\n'
    '[Result "1-0"]\n\n1. e4 1-0\n',
    "variant": '[Event "960"]\n[Variant "Chess960"]\n[Result "1-0"]\n\n1. e4 e5 1-0\n',
    "result mismatch": '[Event "mismatch"]\n[Result "1-0"]\n\n1. e4 e5 0-1\n',
}
ATOMIC = '[Event "atomic"]\n[Variant "Atomic"]\n[Result "0-1"]\n\n1. e4 d5 0-1\n'
TRUNCATED = '[Event "cut off"]\n[Result "1-0"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5'


def broken_file(tmp_path):
    """A PGN with a BOM, good games between broken ones, and a truncated last game."""
    parts = [GOOD_1, BAD["no result"], BAD["illegal move"], GOOD_2, BAD["unreadable move"]]
    parts += [BAD["bad FEN"], BAD["variant"], ATOMIC, GOOD_3, BAD["result mismatch"], TRUNCATED]
    path = tmp_path / "broken.pgn"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(parts).encode())
    expected_bad = {2: "no result", 3: "illegal move", 5: "unreadable move", 6: "bad FEN"}
    expected_bad |= {7: "variant", 8: "variant", 10: "result mismatch", 11: "truncated"}
    return path, expected_bad


def main_lines(texts):
    for text in texts:
        game = chess.pgn.read_game(io.StringIO(text))
        yield game.board().fen(), [m.uci() for m in game.mainline_moves()]


def test_broken_games_are_skipped_and_good_ones_imported(tmp_path):
    path, expected_bad = broken_file(tmp_path)
    summary = import_pgn([path], tmp_path / "out", workers=1, show_progress=False)
    assert summary["games"] == 11 and summary["imported"] == 3
    got = {s["game"]: s["reason"] for s in summary["skipped_games"]}
    assert got == expected_bad
    assert summary["skipped"] == len(expected_bad)
    assert summary["skipped_by_reason"]["variant"] == 2
    listed = open(summary["skipped_list"]).read().splitlines()
    assert len(listed) == 1 + len(expected_bad) and listed[1].startswith("broken.pgn\t2\t")

    records = [r for p in shard_paths([tmp_path / "out"]) for r in read_shard(p)]
    assert [r.game_id for r in records] == ["broken.pgn#1", "broken.pgn#4", "broken.pgn#9"]
    assert [r.result for r in records] == [1, 0, -1]
    assert records[0].extra["WhiteElo"] == "2100"
    for record, (fen, moves) in zip(records, main_lines([GOOD_1, GOOD_2, GOOD_3])):
        assert record.start_fen == fen and record.moves == moves and record.method == "pgn"
        board = chess.Board(fen)
        for uci, target in zip(record.moves, record.targets):  # one-hot on the played move
            move = chess.Move.from_uci(uci)
            assert target.policy_indices.tolist() == [move_to_index(move, board.turn)]
            assert target.policy_probs.tolist() == [1.0]
            board.push(move)
    assert summary["positions"] == sum(len(r.moves) for r in records)


def test_min_elo_uses_both_players(tmp_path):
    path, _ = broken_file(tmp_path)
    summary = import_pgn([path], tmp_path / "out", min_elo=2000, workers=1, show_progress=False)
    records = [r for p in shard_paths([tmp_path / "out"]) for r in read_shard(p)]
    assert [r.game_id for r in records] == ["broken.pgn#1"]  # game 4 has a 1500 player
    # below the minimum or without Elo headers; the two variant games are still "skipped"
    assert summary["filtered"] == 8 and summary["skipped"] == 2


def test_workers_and_compressed_input_give_the_same_shards(tmp_path):
    path, _ = broken_file(tmp_path)
    text = path.read_bytes()
    gz = tmp_path / "many.pgn.gz"
    gz.write_bytes(gzip.compress(text * 20))
    summary = import_pgn([gz], tmp_path / "a", workers=2, show_progress=False, chunk_games=7)
    assert summary["games"] == 220 and summary["imported"] == 60
    numbers = sorted(s["game"] for s in summary["skipped_games"])
    assert numbers[:8] == [2, 3, 5, 6, 7, 8, 10, 11]  # numbered across the whole file
    single = import_pgn([path], tmp_path / "b", workers=1, show_progress=False)
    many = [r.moves for p in shard_paths([tmp_path / "a"]) for r in read_shard(p)]
    one = [r.moves for p in shard_paths([tmp_path / "b"]) for r in read_shard(p)]
    assert many == one * 20 and single["imported"] == 3


def test_splitter_finds_games_without_headers_and_with_blank_lines():
    text = (
        "1. e4 e5 1-0\n\n1. d4 d5\n\n2. c4 0-1\n\n"  # headerless; a blank line inside movetext
        '[Event "x"]\n\n1. c4 {comment\n\n[not a header]} c5 1/2-1/2\n'
        '[Event "no blank line between games"]\n1. Nf3 *\n'
    )
    games = list(split_games(io.StringIO(text)))
    assert [g.number for g in games] == [1, 2, 3, 4]
    assert [g.line for g in games] == [1, 3, 7, 12]
    assert "2. c4 0-1" in games[1].text and "\n\n" not in games[1].text.strip()
    assert "[not a header]" in games[2].text


def test_unreadable_tokens():
    assert unreadable_token("1. e4 e5 2. Nf3+ Nc6?! 3. O-O-O# (3. d4) {x y z} $5 1-0") is None
    assert unreadable_token("1. e4 e5 2. Qz9 Nc6 1-0") == "Qz9"
    assert unreadable_token("1. e4 xx 1-0") == "xx"


def test_cli_json_and_errors(tmp_path, capsys):
    path, expected_bad = broken_file(tmp_path)
    code = main(["import-pgn", str(path), "--out", str(tmp_path / "o"), "--workers", "1", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and len(out.strip().splitlines()) == 1
    data = json.loads(out)
    for key in ("games", "positions", "skipped", "skipped_by_reason", "games_per_s"):
        assert key in data
    assert data["skipped"] == len(expected_bad) and data["games_per_s"] > 0
    assert main(["import-pgn", str(tmp_path / "missing.pgn"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing.pgn" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("games", [0, 1])
def test_empty_or_tiny_input(tmp_path, games):
    path = tmp_path / "x.pgn"
    path.write_text(GOOD_3 * games)
    summary = import_pgn([path], tmp_path / "o", workers=1, show_progress=False)
    assert summary["imported"] == games and summary["skipped"] == 0
    assert len(shard_paths([tmp_path / "o"])) == games
    assert np.isfinite(summary["games_per_s"])


def test_unclosed_comment_costs_one_game_not_the_file(tmp_path, monkeypatch):
    import frugalzero.data.pgn as pgn

    monkeypatch.setattr(pgn, "MAX_GAME_CHARS", 2000)
    runaway = '[Event "runaway"]\n[Result "1-0"]\n\n1. e4 {never closed e5 1-0\n' + "x " * 2000
    path = tmp_path / "r.pgn"
    path.write_text(GOOD_3 + "\n" + runaway + "\n\n" + GOOD_1)
    summary = import_pgn([path], tmp_path / "o", workers=1, show_progress=False)
    assert summary["imported"] == 2
    assert [(s["game"], s["reason"]) for s in summary["skipped_games"]] == [(2, "too long")]


def test_eval_comments_become_expert_values_from_the_side_to_moves_view(tmp_path):
    """[%eval] after a move is the next position's evaluation, in pawns from White's view."""
    from frugalzero.data.pgn import parse_game
    from frugalzero.values import score_to_value

    text = (
        '[Event "e"]\n[Result "1-0"]\n\n'
        "1. e4 { [%eval 0.35] } 1... e5 { [%eval 0.3,20] } 2. Qh5 { no eval here } "
        "2... Nc6 { [%eval #3] } 3. Bc4 { [%eval #-2] } 3... Nf6 1-0\n\n"
    )
    (raw,) = list(split_games(io.StringIO(text)))
    record = parse_game(raw, "evals.pgn")
    values = [t.expert_value for t in record.targets]
    cp = chess.engine.Cp
    assert values[0] is None  # nothing is said about the start
    assert values[1] == pytest.approx(score_to_value(cp(-35)))  # Black to move after 1. e4
    assert values[2] == pytest.approx(score_to_value(cp(30)))
    assert values[3] is None  # a comment without an evaluation
    assert values[4] == 1.0  # White mates in 3, White to move
    assert values[5] == 1.0  # "#-2" is Black mating in 2, and Black is to move
    black_first = '[Event "e"]\n[FEN "4k3/8/8/8/8/8/4P3/4K3 b - - 0 1"]\n[SetUp "1"]\n'
    black_first += '[Result "*"]\n\n1... Kd7 { [%eval 1.5] } 2. e4 1/2-1/2\n\n'
    (raw,) = list(split_games(io.StringIO(black_first)))
    values = [t.expert_value for t in parse_game(raw, "b.pgn").targets]
    assert values[1] == pytest.approx(score_to_value(cp(150)))  # White to move, +1.5 for White
