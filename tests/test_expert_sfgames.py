"""``frugalzero sfgames``: Stockfish's own games as PGN and shards."""

from __future__ import annotations

import json

import chess
import chess.pgn
import numpy as np
import pytest

from conftest import shared_file
from frugalzero.chess.moves import move_to_index
from frugalzero.cli import main
from frugalzero.data.pgnwriter import record_to_pgn
from frugalzero.data.records import GameRecord, PlyTarget, one_hot
from frugalzero.data.shards import read_shard, shard_paths


def run_sfgames(out, *extra: str) -> dict:
    args = ["sfgames", "--games", "4", "--out", str(out), "--nodes", "20", "--workers", "2"]
    assert main(args + ["--set", "max_plies=150", "--json", *extra]) == 0
    return args


def read_pgn(out) -> list[chess.pgn.Game]:
    games = []
    for path in sorted(out.glob("*.pgn")):
        with path.open() as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                assert not game.errors
                games.append(game)
    return games


def test_random_openings_written_as_pgn_and_shards(stockfish, tmp_path, capsys):
    out = tmp_path / "sf"
    run_sfgames(out, "--random-plies", "6")
    summary = json.loads(capsys.readouterr().out)
    records = sorted(
        (r for p in shard_paths([out]) for r in read_shard(p)), key=lambda r: r.game_id
    )
    games = read_pgn(out)
    assert summary["games"] == len(records) == len(games) == 4
    assert summary["positions"] == sum(r.positions for r in records)
    assert sum(summary["wdl"]) + summary["unfinished"] == 4
    by_moves = {tuple(m.uci() for m in g.mainline_moves()): g for g in games}
    for record in records:
        assert record.method == "sfgames"
        assert all(t is None for t in record.targets[:6])
        board = chess.Board(record.start_fen)
        for uci, target in zip(record.moves, record.targets):
            move = chess.Move.from_uci(uci)
            assert move in board.legal_moves
            if target is not None:
                assert int(target.policy_indices[0]) == move_to_index(move, board.turn)
                assert -1 <= target.expert_value <= 1
                win, draw, loss = target.expert_wdl  # Stockfish's own estimate, stored
                assert min(win, draw, loss) >= 0 and win + draw + loss == 1000
                if abs(target.expert_value) > 0.9:  # a decided position: the WDL agrees
                    assert (win > loss) == (target.expert_value > 0)
            board.push(move)
        game = by_moves[tuple(record.moves)]  # the PGN holds the same game
        expected = {1: "1-0", 0: "1/2-1/2", -1: "0-1", None: "*"}[record.result]
        assert game.headers["Result"] == expected
        nodes = list(game.mainline())
        assert all(n.comment == "opening" for n in nodes[:6])
        assert all(n.eval() is not None for n in nodes[6:])
    assert len({tuple(r.moves[:6]) for r in records}) == 4  # random openings differ
    assert len(list(out.glob("sfgames-*.toml"))) == 1


def test_games_start_from_the_opening_book(stockfish, tmp_path, capsys):
    shared = shared_file("openings/8moves_v3.pgn")
    book = tmp_path / "book.pgn"  # its first games: the whole book takes long to parse
    with shared.open() as handle:
        lines = [chess.pgn.read_game(handle) for _ in range(20)]
    book.write_text("\n\n".join(str(game) for game in lines))
    book_lines = {tuple(m.uci() for m in game.mainline_moves()) for game in lines}
    out = tmp_path / "book"
    run_sfgames(out, "--openings", str(book))
    capsys.readouterr()
    records = [r for p in shard_paths([out]) for r in read_shard(p)]
    assert len(records) == 4
    for record in records:
        assert tuple(record.moves[:16]) in book_lines
        assert record.targets[:16] == [None] * 16  # 8 book moves a side, then Stockfish
        assert record.targets[16] is not None
        assert record.extra["opening"].startswith("book.pgn#")


def test_pgn_evaluations_are_from_whites_view():
    board = chess.Board()
    moves = ["e2e4", "e7e5", "g1f3"]
    targets: list = [None]
    for uci in moves[1:]:
        board.push_uci(moves[len(targets) - 1])
        indices, probs = one_hot(move_to_index(chess.Move.from_uci(uci), board.turn))
        targets.append(PlyTarget(indices, probs, expert_value=0.1))
    record = GameRecord(
        chess.STARTING_FEN, moves, targets, None, "sfgames", extra={"scores": "35 #2"}
    )
    game = record_to_pgn(record)
    nodes = list(game.mainline())
    assert nodes[0].comment == "opening"
    assert nodes[1].eval().white() == chess.engine.Cp(-35)  # Black to move thought +35
    assert nodes[2].eval().white() == chess.engine.Mate(2)
    assert game.headers["Result"] == "*"
    assert np.isclose(targets[1].expert_value, 0.1)


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    assert main(["sfgames", "--games", "0", "--out", str(tmp_path)]) == 2
    assert "--games must be at least 1" in capsys.readouterr().err
    assert main(["explore", "--steps", "5", "--out", str(tmp_path), "--openings", "nope.epd"]) == 2
    assert "opening book not found" in capsys.readouterr().err
    assert main(["sfgames", "--games", "1", "--out", str(tmp_path), "--set", "bogus=1"]) == 2
    assert "unknown key 'bogus'" in capsys.readouterr().err


def test_random_plies_after_the_book_lines_vary_the_games_and_replay_alike():
    from frugalzero.chess.positions import Opening
    from frugalzero.expert.sfgames import SfGamesConfig, game_tasks

    book = [
        Opening(chess.STARTING_FEN, ("e2e4", "e7e5"), name="book#1"),
        Opening(chess.STARTING_FEN, ("d2d4", "d7d5"), name="book#2"),
    ]
    lines = {o.moves for o in book}
    plain = list(game_tasks(SfGamesConfig(seed=5), 6, book))
    assert {t.moves for t in plain} == lines  # the book lines themselves
    config = SfGamesConfig(seed=5, book_random_plies=3)
    tasks = list(game_tasks(config, 40, book))
    for task in tasks:
        assert task.moves[:2] in lines and len(task.moves) == 5
        board = chess.Board(task.start_fen)
        for uci in task.moves:  # every move legal, the game still going
            assert chess.Move.from_uci(uci) in board.legal_moves
            board.push_uci(uci)
        assert not board.is_game_over()
        assert task.extra["opening"].endswith("+3 random")
    assert len({t.moves for t in tasks}) > 30  # two book lines, many games
    assert [t.moves for t in game_tasks(config, 40, book)] == [t.moves for t in tasks]


@pytest.mark.slow
def test_the_same_seed_makes_the_same_shards_whatever_order_the_games_finish_in(
    stockfish, tmp_path, capsys
):
    # two engines finish games of different lengths out of order; the files hold them in
    # number order, so data made again from its seed is the same bytes (it need not travel)
    made = []
    for name in ("a", "b"):
        out = tmp_path / name
        run_sfgames(out, "--games", "10", "--seed", "3")
        shards = shard_paths([out])
        ids = [r.game_id for p in shards for r in read_shard(p)]
        assert ids == [f"s{n}" for n in range(10)]
        made.append([payload(p) for p in shards])
    capsys.readouterr()
    assert made[0] == made[1]


def test_the_pgn_the_engines_workers_write_is_what_this_process_would_write(
    stockfish, tmp_path, capsys
):
    # each worker writes its game's PGN beside its engine (round "?"); the writer numbers them
    from frugalzero.data.pgnwriter import PgnWriter

    out = tmp_path / "sf"
    run_sfgames(out, "--games", "5", "--seed", "5", "--pgn-games-per-file", "3")
    capsys.readouterr()
    here = PgnWriter(tmp_path / "here", "sfgames", per_file=3)
    for record in (r for p in shard_paths([out]) for r in read_shard(p)):
        here.add(record)
    written = [undated(p) for p in sorted(out.glob("*.pgn"))]
    assert written == [undated(p) for p in here.close()] and len(written) == 2
    assert '[Round "5"]' in written[1]


def undated(path) -> str:
    """A PGN file's text without its Date tags (the day it was written)."""
    return "".join(line for line in path.open() if not line.startswith("[Date "))


def payload(path) -> bytes:
    """A shard's compressed columns: its bytes but for the header (which holds the time it was
    written) and the checksum over both."""
    data = path.read_bytes()
    header = int.from_bytes(data[8:12], "little")
    return data[12 + header : -32]


def test_games_waiting_behind_a_missing_one_are_kept_when_a_run_stops():
    from frugalzero.expert.sfgames import InOrder

    written: list[str] = []
    order = InOrder(lambda record: written.append(record.game_id), list(range(6)))
    for n in (1, 0, 3, 5):  # 2 never finishes (the run was stopped), 4 was given up
        order.add(n, GameRecord("", [], [], None, "sfgames", game_id=f"s{n}"))
    order.skip(4)
    assert written == ["s0", "s1"]
    assert order.drain() == 2
    assert written == ["s0", "s1", "s3", "s5"]
