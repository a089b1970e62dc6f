"""Game end: one rule for boards with a move stack and for search leaves."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from frugalzero.chess.history import GameHistory
from frugalzero.chess.rules import game_end, game_ending, game_result
from frugalzero.expert.playout import replay


def test_game_result_rules():
    fools = replay(chess.STARTING_FEN, ("f2f3", "e7e5", "g2g4", "d8h4"))
    assert game_result(fools) == -1.0
    assert game_result(chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")) == 0.0  # stalemate
    assert game_result(chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1")) == 0.0  # two kings
    assert game_result(chess.Board("8/8/4k3/8/8/3K4/8/7R w - - 100 80")) == 0.0  # 50 moves
    assert game_result(chess.Board("8/8/4k3/8/8/3K4/8/7R w - - 99 80")) is None
    assert game_result(chess.Board()) is None
    shuffle = ("g1f3", "g8f6", "f3g1", "f6g8") * 2
    board = replay(chess.STARTING_FEN, shuffle)
    assert game_result(board) == 0.0  # the start position a third time
    assert game_result(replay(chess.STARTING_FEN, shuffle[:-1])) is None


def test_game_end_names_the_termination() -> None:
    shuffle = ("g1f3", "g8f6", "f3g1", "f6g8") * 2
    ending = game_end(replay(chess.STARTING_FEN, shuffle))
    assert ending is not None and ending.termination == chess.Termination.THREEFOLD_REPETITION
    clock = game_end(chess.Board("8/8/4k3/8/8/3K4/8/7R w - - 100 80"))
    assert clock is not None and clock.termination == chess.Termination.FIFTY_MOVES
    # mate on the 100th quiet ply wins: mate is seen before the clock
    mate = chess.Board("k7/8/1K6/8/8/8/8/7R w - - 99 80")
    mate.push_uci("h1h8")
    ending = game_end(mate)
    assert ending is not None and ending.winner == chess.WHITE


@pytest.mark.slow
def test_both_entry_points_agree_on_random_games() -> None:
    """Self-play counts repetitions itself; a board with its move stack asks python-chess.
    Along random games (biased to shuffle, so repetitions happen) both give one verdict."""
    rng = np.random.default_rng(7)
    endings = set()
    for _ in range(30):
        history = GameHistory(chess.Board())
        board = chess.Board()
        while True:
            ending, result = game_ending(history.board, history.repetitions)
            assert result == game_result(board), board.fen()
            if ending is not None:
                endings.add(ending)
                break
            moves = list(board.legal_moves)
            quiet = [m for m in moves if not board.is_zeroing(m)]
            pool = quiet if quiet and rng.random() < 0.9 else moves
            move = pool[int(rng.integers(len(pool)))]
            board.push(move)
            history.push(move)
    assert "repetition" in endings
