"""A position the search refuses, inside UCI: the ``position`` command is refused with an ``info
string`` naming it, and the next ``go`` answers ``bestmove 0000`` saying there is no position.
Never a search of something else, never a crash, never a move of the previous position."""

from __future__ import annotations

import io

import chess

from frugalzero.chess.history import GameHistory
from frugalzero.uci import BestMove, NetSearcher, UciEngine

TWO_KINGS = "4k3/8/8/8/8/8/8/K3K3 w - - 0 1"
AFTER_E4 = "position not supported by the search: after e2e4 (a test's refusal)"


class RefusingSearcher:
    """Plays the first legal move; refuses, as the search would, every game whose root
    ``NetSearcher.refusal`` refuses, and every game that opened with e2e4."""

    def __init__(self) -> None:
        self.searched: list[str] = []

    def refusal(self, history: GameHistory) -> str | None:
        stack = history.board.move_stack
        if stack and stack[0] == chess.Move.from_uci("e2e4"):
            return AFTER_E4
        return NetSearcher.refusal(history)

    def search(self, request, stop, info) -> BestMove:
        board = request.history.board
        self.searched.append(board.fen())
        return BestMove(next(iter(board.legal_moves)))

    def new_game(self) -> None:
        pass

    def set_option(self, name: str, value: str) -> None:
        pass


def _session(*commands: str) -> tuple[list[str], RefusingSearcher]:
    """The engine's output for ``commands`` (the end of input answers the last ``go``)."""
    searcher, out = RefusingSearcher(), io.StringIO()
    UciEngine(searcher, io.StringIO("".join(c + "\n" for c in commands)), out).run()
    return out.getvalue().splitlines(), searcher


def test_the_search_names_the_positions_it_refuses() -> None:
    odd = GameHistory(chess.Board(TWO_KINGS))
    reason = "invalid position (too_many_kings)"
    assert (
        NetSearcher.refusal(odd) == f"position not supported by the search: {TWO_KINGS} ({reason})"
    )
    game = GameHistory(chess.Board())
    game.push(chess.Move.from_uci("e2e4"))
    assert NetSearcher.refusal(game) is None


def test_a_refused_position_is_named_and_go_answers_bestmove_0000() -> None:
    lines, searcher = _session(
        "position startpos",
        "go nodes 5",
        "position startpos moves e2e4 e7e5",  # refused by the searcher, not by the parser
        "go nodes 5",
        "position startpos moves d2d4",
        "go nodes 5",
    )
    said = [line for line in lines if line.startswith("info string")]
    assert said == [
        f"info string {AFTER_E4}; no position until the next valid one",
        "info string go: no position (the last position command was refused)",
    ]
    bestmoves = [line for line in lines if line.startswith("bestmove")]
    assert bestmoves == ["bestmove g1h3", "bestmove 0000", "bestmove g8h6"]
    board = chess.Board()
    board.push_uci("d2d4")
    assert searcher.searched == [chess.Board().fen(), board.fen()]  # never the refused one


def test_an_invalid_fen_is_refused_before_the_search_sees_it() -> None:
    lines, searcher = _session("position startpos", f"position fen {TWO_KINGS}", "go nodes 5")
    refused = [line for line in lines if line.startswith("info string position fen:")]
    assert len(refused) == 1 and "impossible position" in refused[0] and TWO_KINGS in refused[0]
    assert lines[-1] == "bestmove 0000" and searcher.searched == []
