"""The labelling engines' UCI client against python-chess's, answer for answer."""

from __future__ import annotations

import chess
import chess.engine
import pytest

from frugalzero.expert.engine import EngineConfig, EngineSession
from frugalzero.expert.playout import push_trimmed
from frugalzero.expert.uci_client import UciPosition, parse_reply

OPENINGS = [(), ("e2e4", "c7c5", "g1f3"), ("d2d4", "d7d5", "c2c4", "e7e6")]


def python_chess_game(stockfish: str, opening: tuple[str, ...], plies: int, nodes: int):
    """(move, score, wdl) of each ply of a game python-chess's client plays from ``opening``."""
    engine = chess.engine.SimpleEngine.popen_uci(stockfish)
    try:
        engine.configure({"Hash": 16, "Threads": 1, "UCI_ShowWDL": True})
        board, game, out = chess.Board(), object(), []
        for uci in opening:
            board.push_uci(uci)
        for _ in range(plies):
            result = engine.play(
                board, chess.engine.Limit(nodes=nodes), game=game, info=chess.engine.INFO_SCORE
            )
            wdl = result.info["wdl"].relative
            out.append((result.move, result.info["score"], (wdl.wins, wdl.draws, wdl.losses)))
            board.push(result.move)
    finally:
        engine.quit()
    return out


@pytest.mark.parametrize("opening", OPENINGS)
def test_the_client_gets_python_chess_answers_move_for_move(stockfish, opening):
    """Stockfish at a node limit on one thread is deterministic, so the same game sent the
    same way gets the same answers: moves, scores and WDL, over 24 plies, whether the history
    is the board's whole move stack or kept by ``UciPosition`` and trimmed at captures."""
    expected = python_chess_game(stockfish, opening, 24, 300)
    session = EngineSession(EngineConfig(nodes=300), stockfish)
    session.start()
    try:
        for trimmed in (False, True):
            board, game = chess.Board(), object()
            for uci in opening:
                board.push_uci(uci)
            position = UciPosition(board)
            for move, score, wdl in expected:
                answer = session.play(board, game, position if trimmed else None)
                assert (answer.move, answer.score, answer.wdl) == (move, score, wdl)
                if trimmed:
                    board = push_trimmed(board, move)
                    position.push(move.uci(), board)
                else:
                    board.push(move)
            assert trimmed is False or len(board.move_stack) < len(expected)
    finally:
        session.quit()


def test_multipv_lines_match_python_chess_analysis(stockfish):
    board = chess.Board()
    for uci in OPENINGS[1]:
        board.push_uci(uci)
    engine = chess.engine.SimpleEngine.popen_uci(stockfish)
    try:
        engine.configure({"Hash": 16, "Threads": 1})
        infos = engine.analyse(board, chess.engine.Limit(nodes=500), multipv=3, game=object())
    finally:
        engine.quit()
    session = EngineSession(EngineConfig(nodes=500, multipv=3, wdl=False), stockfish)
    session.start()
    try:
        answer = session.play(board, object())
    finally:
        session.quit()
    assert answer.lines == [(info["pv"][0], info["score"]) for info in infos]
    assert answer.move == infos[0]["pv"][0] and answer.score == infos[0]["score"]


def test_replies_are_parsed_from_the_lines_that_count():
    lines = [
        b"info string NNUE evaluation using nn-ad9b42354671.nnue enabled",
        b"info depth 1 seldepth 1 multipv 1 score cp 20 wdl 60 900 40 nodes 20 pv e2e4",
        b"info depth 9 seldepth 12 multipv 1 score mate -3 wdl 0 0 1000 nodes 400 pv g8f6 b1c3",
        b"bestmove g8f6 ponder b1c3",
    ]
    reply = parse_reply(lines, chess.BLACK, 1)
    assert reply.move == chess.Move.from_uci("g8f6")
    assert reply.score == chess.engine.PovScore(chess.engine.Mate(-3), chess.BLACK)
    assert reply.wdl == (0, 0, 1000) and reply.lines == []
    assert parse_reply([b"info depth 0 score mate 0", b"bestmove (none)"], True, 1).move is None
    ranked = parse_reply(
        [
            b"info depth 5 multipv 2 score cp -10 nodes 90 pv d2d4 d7d5",
            b"info depth 5 multipv 1 score cp 25 nodes 90 pv e2e4",
            b"info depth 6 multipv 1 score cp 30 nodes 150 pv e2e4 e7e5",
            b"bestmove e2e4",
        ],
        chess.WHITE,
        2,
    )
    cp = chess.engine.Cp
    assert [(m.uci(), s.relative) for m, s in ranked.lines] == [("e2e4", cp(30)), ("d2d4", cp(-10))]
