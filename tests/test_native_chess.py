"""The native chess core against python-chess: perft, and every position's moves, indices,
frames, meta, keys and game-end status (frugalzero.chess.native_check holds the comparisons;
`frugalzero bench movegen --verify N` runs the same checker on a million positions)."""

from __future__ import annotations

import itertools
import random

import chess
import chess.variant
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, shared_file
from frugalzero import _native
from frugalzero.chess.history import GameHistory, pad_frames, position_key
from frugalzero.chess.native import (
    move_to_raw,
    native_history,
    native_position,
    raw_to_move,
    raw_to_moves,
)
from frugalzero.chess.native_check import (
    Checker,
    Mismatch,
    pgn_games,
    random_playout,
    tricky_board,
)
from frugalzero.chess.rules import FIFTY_MOVES, MATE, MATERIAL, REPETITION, STALEMATE

# positions where the rules are at their subtlest
SPECIAL_FENS = [
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 1",  # en passant would expose the king along the rank
    "8/8/8/8/k2Pp2Q/8/8/7K b - d3 0 1",  # the same for Black
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",  # the checking pawn taken en passant
    "7K/k7/8/8/2Pp4/8/8/6B1 b - c3 0 1",  # the capturer is pinned along a diagonal
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/5b2/8/R3K2R w KQkq - 0 1",  # castling through an attacked square
    "r3k2r/8/8/8/8/8/8/Rn2K2R w KQkq - 0 1",  # a1 rook with a knight beside it
    "1r2k3/8/8/8/8/8/8/R3K3 w Q - 0 1",  # b1 attacked: queen-side castling still legal
    "4k3/1P6/8/8/8/8/6p1/4K2R w K - 0 1",  # promotion races
    "n1n1k3/1P6/8/8/8/8/8/4K3 w - - 0 1",  # promotions with captures
    "4k3/8/8/8/8/8/4r3/R3K2R w KQ - 0 1",  # in check: no castling
    "4k3/8/8/8/1b6/8/8/R3K2r w Q - 0 1",  # double check
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate
    "k7/1Q6/1K6/8/8/8/8/8 b - - 0 1",  # mate
    "k7/8/1K6/8/8/8/8/7R b - - 100 80",  # fifty moves, no mate
    "R6k/8/6K1/8/8/8/8/8 b - - 100 80",  # mate on the hundredth quiet ply wins
    "8/8/4k3/8/8/3K4/8/8 w - - 0 1",  # bare kings
    "8/8/4k3/8/8/3KN3/8/8 w - - 0 1",  # one knight
    "8/8/4kq2/8/8/3KN3/8/8 w - - 0 1",  # a knight against a queen: still insufficient
    "8/8/4kb2/8/8/3KN3/8/8 w - - 0 1",  # knight against bishop: self-mate possible
    "8/2b5/4k3/8/8/3K4/4B3/8 w - - 0 1",  # bishops on one colour
    "8/3b4/4k3/8/8/3K4/4B3/8 w - - 0 1",  # bishops on both colours
    "3qk3/8/8/8/8/8/8/QQQQKQQQ w - - 0 1",  # many queens
    "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1",  # 218 moves, the most known
    "7k/QQ1QQ3/6Q1/Q5Q1/2Q2Q2/Q7/6Q1/KQ1QQ1Q1 w - - 0 1",  # 15 queens
]


@pytest.mark.slow
def test_perft_suite_to_every_listed_depth():
    lines = [line for line in shared_file("perft/perft.epd").read_text().splitlines() if line]
    assert lines
    for line in lines:
        fen, *fields = (part.strip() for part in line.split(";"))
        position = native_position(chess.Board(fen))
        depths = {int(f.split()[0][1:]): int(f.split()[1]) for f in fields if f.startswith("D")}
        assert depths
        batch = _native.PositionBatch([position])
        for depth, nodes in sorted(depths.items()):
            assert position.perft(depth) == nodes, (fen, depth)
        assert batch.perft(1) == depths[1]


def test_special_positions_match_python_chess():
    checker = Checker(children_every=1)
    for fen in SPECIAL_FENS:
        board = chess.Board(fen)
        assert board.is_valid(), fen
        native = checker.position(board)
        assert native.perft(3) == _python_perft(board, 3), fen
    seen = checker.seen
    assert seen["legal_en_passant"] >= 2 and seen["double_check"] >= 1
    for ending in (MATE, STALEMATE, FIFTY_MOVES, MATERIAL):
        assert seen[f"ending: {ending}"] >= 1, ending
    assert seen["max_legal_moves"] == 218


def _python_perft(board: chess.Board, depth: int) -> int:
    if depth == 0:
        return 1
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += _python_perft(board, depth - 1)
        board.pop()
    return total


@pytest.mark.slow
def test_real_games_match_python_chess():
    checker = Checker(children_every=3)
    book = shared_file("openings/8moves_v3.pgn")
    for root, moves in itertools.islice(pgn_games([book]), 60):
        checker.game(root, moves)
    played = sorted(ROOT.glob("benchmarks/results/**/*.pgn"))
    assert played, "the repository's match records are PGN games"
    for root, moves in itertools.islice(pgn_games(played[:2]), 12):
        checker.game(root, moves)
    assert checker.positions > 1000 and checker.children > 5000
    assert checker.seen["castling_available"] and checker.seen["in_check"]


def test_random_playouts_to_the_end_match_python_chess():
    checker = Checker(children_every=4)
    for seed in (0, 4, 7, 12):
        root, moves = random_playout(random.Random(seed), max_plies=500)
        checker.game(root, moves)
    seen = checker.seen
    # the seeds were chosen to reach every ending; the checker saw each of them
    for ending in (MATE, STALEMATE, REPETITION, FIFTY_MOVES, MATERIAL):
        assert seen[f"ending: {ending}"] >= 1, (ending, dict(seen))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
@pytest.mark.slow
def test_tricky_positions_match_python_chess(rng):
    board = None
    for _ in range(30):
        board = tricky_board(rng)
        if board is not None:
            break
    if board is None:
        return
    checker = Checker(children_every=1)
    checker.position(board)
    moves = []  # a few moves on from it, through the History too
    walk = board.copy(stack=False)
    for _ in range(6):
        legal = list(walk.legal_moves)
        if not legal:
            break
        moves.append(rng.choice(legal))
        walk.push(moves[-1])
    checker.game(board, moves)


def test_history_of_a_game_with_repetitions_matches_game_history():
    board = chess.Board()
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"] * 3 + ["e2e4", "e7e5", "e1e2", "e8e7", "e2e1"]
    game = GameHistory(board)
    history = native_history(board)
    reps = []
    for uci in shuffle:
        move = chess.Move.from_uci(uci)
        game.push(move)
        history.push(move_to_raw(move))
        reps.append(history.repetitions)
        assert history.repetitions == game.repetitions
        assert history.frames() == pad_frames(game.frames())
        assert history.frames(3) == b"".join(game.frames(3)).ljust(3 * 104, b"\0")
        assert history.current.fen() == game.board.fen()
    assert max(reps) == 2
    assert history.count(history.current.key) == game.count(position_key(game.board)) == 1
    assert native_history(game).frames() == history.frames()  # from a GameHistory too
    for _ in shuffle:
        history.pop()
        game.pop()
        assert history.frames() == pad_frames(game.frames())
        assert history.repetitions == game.repetitions
    with pytest.raises(IndexError):
        history.pop()
    assert len(history) == 1


def test_invalid_boards_never_reach_the_core():
    refused = [
        chess.Board("8/8/8/8/8/8/8/8 w - - 0 1"),  # no kings
        chess.Board("4k3/8/8/8/8/8/8/4KK2 w - - 0 1"),  # two white kings
        chess.Board("P3k3/8/8/8/8/8/8/4K3 w - - 0 1"),  # pawn on the back rank
        chess.Board("4k3/8/8/8/8/8/8/4K2r b - - 0 1"),  # the side not to move is in check
        chess.Board("4k3/8/8/8/8/8/8/4K2R w KQkq - 0 1"),  # rights without rooks
        chess.Board("4k3/8/8/8/8/8/8/4K3 w - e6 0 1"),  # an impossible en-passant square
        chess.Board(chess.STARTING_FEN, chess960=True),
        chess.variant.AtomicBoard(),
    ]
    clock = chess.Board()
    clock.halfmove_clock = _native.MAX_CLOCK + 1
    refused.append(clock)
    for board in refused:
        with pytest.raises(ValueError, match=r"^[^\n]+$"):
            native_position(board)
    start = chess.Board()
    fields = [start.pawns, start.knights, start.bishops, start.rooks, start.queens, start.kings]
    white, black = start.occupied_co[chess.WHITE], start.occupied_co[chess.BLACK]
    assert _native.Position(*fields, white, black, True, 0, -1, 0, 1).fen() == (
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1"
    )
    bad = [
        (*fields[:5], fields[5] | chess.BB_A3, white, black),  # a king without a colour
        (fields[0] | chess.BB_B1, *fields[1:], white, black),  # a square with two pieces
        (*fields, white | chess.BB_A8, black),  # a square with both colours
    ]
    for parts in bad:
        with pytest.raises(ValueError):
            _native.Position(*parts, True, 0, -1, 0, 1)
    with pytest.raises(ValueError):
        _native.Position(*fields, white, black, True, 0, 20, 0, 1)  # e3: no pawn beyond it


def test_moves_are_checked_and_convert_both_ways():
    board = chess.Board("n1n1k3/1P6/8/8/8/8/8/4K3 w - - 0 1")
    position = native_position(board)
    moves = list(board.legal_moves)
    assert raw_to_moves(position.legal_moves()) == moves
    assert [raw_to_move(move_to_raw(m)) for m in moves] == moves
    assert {m.promotion for m in moves} == {None, chess.KNIGHT, chess.BISHOP, chess.ROOK, 5}
    with pytest.raises(ValueError, match="not a legal move"):
        position.play(move_to_raw(chess.Move.from_uci("e1e3")))
    with pytest.raises(ValueError):
        position.after(0)
    position.play(move_to_raw(chess.Move.from_uci("b7a8q")))
    board.push_uci("b7a8q")
    assert position.fen() == board.fen()
    assert position.copy().key == position.key


@given(st.randoms(use_true_random=False))
@settings(max_examples=300, deadline=None)
def test_canonical_fen_is_python_chesss_reading_of_it(rng):
    from frugalzero.chess.positions import canonical_fen

    board = tricky_board(rng) or random_playout(rng, rng.randint(0, 60))[0]
    fields = board.fen().split()
    # what python-chess rewrites: castling rights without their rooks, an en passant square
    # no pawn can take on, clocks
    fields[2] = rng.choice(["-", "KQkq", "Kq", "Q", fields[2]])
    fields[3] = rng.choice(["-", fields[3], rng.choice(chess.SQUARE_NAMES)])
    fields[4] = rng.choice(["0", "7", fields[4]])
    fen = " ".join(fields)
    try:
        expected = chess.Board(fen).fen()
    except ValueError:
        with pytest.raises(ValueError):
            canonical_fen(fen)
        return
    assert canonical_fen(fen) == expected


def test_an_epd_book_loads_as_python_chess_reads_it():
    from frugalzero.chess.positions import load_book

    path = shared_file("openings/2moves_v1.epd")
    lines = path.read_text().splitlines()[:3000]
    book = load_book(path, limit=3000)
    assert [o.root_fen for o in book] == [chess.Board(line).fen() for line in lines]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="pnbrqkPNBRQK12345678/ wb-KQkqabcdefgh09", max_size=80))
def test_from_fen_refuses_or_agrees_with_python_chess(text):
    try:
        position = _native.Position.from_fen(text)
    except ValueError as error:
        assert str(error).startswith("bad FEN")
        return
    board = chess.Board(text)  # what the core accepts, python-chess reads the same way
    # the core cleans castling rights and does not judge how a check came about
    tolerated = chess.STATUS_BAD_CASTLING_RIGHTS | chess.STATUS_IMPOSSIBLE_CHECK
    assert board.status() & ~tolerated == chess.STATUS_VALID
    assert position.fen() == board.fen()


def test_checker_catches_a_difference():
    checker = Checker(children_every=0)
    board = chess.Board()
    moved = native_position(board).after(move_to_raw(chess.Move.from_uci("e2e4")))
    with pytest.raises(Mismatch, match="FEN differ"):
        checker.position(board, native=moved)


def test_bench_movegen_reports_both_sides_and_verifies(capsys):
    import json

    from frugalzero.cli import main

    args = ["bench", "movegen", "--positions", "30", "--rounds", "1", "--seconds", "0.05"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["positions"] == 30 and result["moves_per_position"] > 1
    for field in ("native_positions_per_s", "python_chess_positions_per_s", "perft_nodes_per_s"):
        assert result[field] > 0
    assert result["perft_nodes"] == 4865609 + 4085603 + 422333

    games = sorted(ROOT.glob("benchmarks/results/**/*.pgn"))[0]
    assert main(["bench", "movegen", "--verify", "400", "--pgn", str(games), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["positions_checked"] >= 400 and result["mismatches"] == 0
    assert sum(result["by_source"].values()) == result["positions_checked"]
    assert all(result["by_source"].values())
