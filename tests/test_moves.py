"""The 4672-move index: a bijection on legal moves, symmetric under mirroring."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from conftest import shared_file
from frugalzero.chess.moves import (
    NUM_MOVES,
    index_to_move,
    legal_mask,
    legal_moves_and_indices,
    move_to_index,
)
from frugalzero.chess.positions import random_boards


def assert_bijection(board: chess.Board) -> None:
    moves, indices = legal_moves_and_indices(board)
    assert len(set(indices.tolist())) == len(moves), board.fen()
    for move, index in zip(moves, indices):
        assert 0 <= index < NUM_MOVES
        assert move_to_index(move, board.turn) == index
        assert index_to_move(int(index), board) == move, (board.fen(), move)


@pytest.mark.slow
def test_bijection_along_100_random_games():
    """Every position of 100 random games of up to 150 plies (about 14,000): drawing each
    position from a game of its own cost seven times as much for 2,000."""
    rng = random.Random(7)
    checked = 0
    for _ in range(100):
        board = chess.Board()
        while board.ply() < 150 and (moves := list(board.legal_moves)):
            assert_bijection(board)
            checked += 1
            board.push(rng.choice(moves))
    assert checked > 10_000


def test_bijection_on_perft_positions_with_special_moves():
    path = shared_file("perft/perft.epd")
    seen = {"castle_k": False, "castle_q": False, "ep": False, "promo": set()}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        root = chess.Board(line.split(";")[0].strip())
        frontier = [root]
        for _ in range(2):  # the position and every position one move on
            nxt = []
            for board in frontier:
                assert_bijection(board)
                for move in board.legal_moves:
                    seen["castle_k"] |= board.is_kingside_castling(move)
                    seen["castle_q"] |= board.is_queenside_castling(move)
                    seen["ep"] |= board.is_en_passant(move)
                    if move.promotion:
                        seen["promo"].add((move.promotion, board.turn))
                    child = board.copy(stack=False)
                    child.push(move)
                    nxt.append(child)
            frontier = nxt[:400]
    assert seen["castle_k"] and seen["castle_q"] and seen["ep"]
    assert {p for p, _ in seen["promo"]} == {chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN}
    assert {c for _, c in seen["promo"]} == {chess.WHITE, chess.BLACK}


def test_every_promotion_piece_has_its_own_index():
    board = chess.Board("r3k3/1P6/8/8/8/8/6p1/4K2R w - - 0 1")
    pushes = [
        chess.Move(chess.B7, chess.B8, p)
        for p in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
    ]
    captures = [
        chess.Move(chess.B7, chess.A8, p)
        for p in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
    ]
    indices = [move_to_index(m, chess.WHITE) for m in pushes + captures]
    assert len(set(indices)) == 8
    for move in pushes + captures:
        assert index_to_move(move_to_index(move, chess.WHITE), board) == move


def test_mirrored_position_has_the_same_indices():
    for board in random_boards(300, seed=3):
        mirrored = board.mirror()
        for move in board.legal_moves:
            twin = chess.Move(
                chess.square_mirror(move.from_square),
                chess.square_mirror(move.to_square),
                move.promotion,
            )
            assert twin in mirrored.legal_moves
            assert move_to_index(move, board.turn) == move_to_index(twin, mirrored.turn)


def test_plane_layout_matches_alphazero():
    # queen-style north by one from e2 is plane 0; a knight jump is in planes 56..63;
    # an under-promotion is in planes 64..72
    assert move_to_index(chess.Move.from_uci("e2e3"), chess.WHITE) == 0 * 64 + chess.E2
    assert 56 * 64 <= move_to_index(chess.Move.from_uci("g1f3"), chess.WHITE) < 64 * 64
    assert move_to_index(chess.Move.from_uci("a7a8n"), chess.WHITE) >= 64 * 64
    # Black's e7e6 is White's e2e3 seen from the other side
    assert move_to_index(chess.Move.from_uci("e7e6"), chess.BLACK) == chess.E2


def test_legal_mask_marks_exactly_the_legal_moves():
    board = chess.Board()
    mask = legal_mask(board)
    assert mask.dtype == np.bool_ and mask.shape == (NUM_MOVES,)
    assert mask.sum() == 20


def test_bad_indices_are_refused():
    with pytest.raises(ValueError):
        index_to_move(NUM_MOVES, chess.Board())
    # queen-style move north by 7 from a rank-2 square leaves the board
    with pytest.raises(ValueError):
        index_to_move(6 * 64 + chess.E2, chess.Board())
