"""When a game is over: the one place every player, generator and search asks.

The rules are python-chess's; this module only decides which draws are taken. Everywhere, a
draw either player could claim on the board (threefold repetition, fifty moves without a capture
or pawn move) ends the game at once, as the arbiters of engine matches do, and so does
insufficient material. A mate delivered on the 100th quiet ply still wins (FIDE 9.3 / 5.1):
mate is checked before the 50-move rule.

Two entry points, for two kinds of position: ``game_end`` for a board with its move stack
(matches, Stockfish's playouts), python-chess's own outcome plus those claims; ``leaf_status``
for a search leaf or a self-play position, whose repetitions the caller counts itself (a tree's
boards carry no move stack, and replaying one would cost more than the whole simulation).
"""

from __future__ import annotations

import chess

MATE, STALEMATE, REPETITION, FIFTY_MOVES, MATERIAL = (
    "checkmate",
    "stalemate",
    "repetition",
    "fifty-move rule",
    "insufficient material",
)


def game_end(board: chess.Board) -> chess.Outcome | None:
    """How the game on ``board`` (with its move stack) has ended, or None while it goes on."""
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        return outcome
    if board.halfmove_clock >= 100:
        return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
    if board.is_repetition(3):
        return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
    return None


def game_result(board: chess.Board) -> float | None:
    """White's result (1 win, 0 draw, -1 loss) if the game on ``board`` is over, else None."""
    outcome = game_end(board)
    if outcome is None:
        return None
    return 0.0 if outcome.winner is None else (1.0 if outcome.winner else -1.0)


def leaf_status(
    board: chess.Board, repetitions: int, draw_repetitions: int = 3, fifty_move_draw: bool = True
) -> tuple[str | None, float, list[chess.Move]]:
    """(ending or None, value for the side to move, legal moves) of a position.

    ``repetitions`` is how often the position occurred before (so 2 = threefold). The legal
    moves come back so the caller need not list them twice (listing costs ~60 us); they are
    empty for an ending.
    """
    if repetitions + 1 >= draw_repetitions:
        return REPETITION, 0.0, []
    if fifty_move_draw and board.halfmove_clock >= 100:
        if board.is_check() and not any(board.generate_legal_moves()):
            return MATE, -1.0, []
        return FIFTY_MOVES, 0.0, []
    # insufficient material needs no pawns, rooks or queens: skip the full test otherwise
    if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
        return MATERIAL, 0.0, []
    moves = list(board.legal_moves)
    if not moves:
        if board.is_check():
            return MATE, -1.0, []
        return STALEMATE, 0.0, []
    return None, 0.0, moves


def game_ending(
    board: chess.Board, repetitions: int, draw_repetitions: int = 3, fifty_move_draw: bool = True
) -> tuple[str | None, float | None]:
    """(ending or None, result from White's view) for a game in progress."""
    ending, value, _ = leaf_status(board, repetitions, draw_repetitions, fifty_move_draw)
    if ending is None:
        return None, None
    if ending == MATE:  # the side to move is mated
        return ending, -1.0 if board.turn == chess.WHITE else 1.0
    return ending, 0.0
