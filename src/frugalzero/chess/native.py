"""python-chess boards into the native chess core (``frugalzero._native``) and back.

python-chess stays the gatekeeper: a board reaches C++ only when python-chess itself finds it
valid (``Board.is_valid()``) and it is standard chess, so a FEN python-chess refuses never gets
there. Moves cross as raw 16-bit integers, ``from | to << 6 | promotion << 12``, where the
promotion is python-chess's piece type (KNIGHT 2 .. QUEEN 5) or 0; the native core lists them
in python-chess's ``generate_legal_moves`` order.
"""

from __future__ import annotations

from collections.abc import Iterable

import chess

from frugalzero import _native
from frugalzero.chess.history import GameHistory


def refusal(board: chess.Board) -> str | None:
    """Why the native core will not take ``board``, on one line (None: it will): a board
    python-chess does not consider valid, a chess960 or variant board, or clocks beyond the
    core's range. The search refuses such a position by name (``search.native``), never
    searches it some other way."""
    if board.chess960 or board.uci_variant != "chess":
        variant = "chess960" if board.chess960 else board.uci_variant
        return f"the native core plays standard chess only, not {variant}"
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = ", ".join(flag.name.lower() for flag in chess.Status if flag and flag & status)
        return f"invalid position ({problems}): {board.fen()}"
    limit = _native.MAX_CLOCK
    if not (0 <= board.halfmove_clock <= limit and 1 <= board.fullmove_number <= limit):
        return f"move counters outside 0..{limit} (full moves from 1): {board.fen()}"
    return None


def native_position(board: chess.Board) -> _native.Position:
    """The native position of ``board`` (its fields only; the move stack is not carried);
    ValueError with ``refusal``'s reason for a board the core does not take."""
    reason = refusal(board)
    if reason is not None:
        raise ValueError(reason)
    black, white = board.occupied_co
    return _native.Position(
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        white,
        black,
        board.turn,
        board.clean_castling_rights(),
        -1 if board.ep_square is None else board.ep_square,
        board.halfmove_clock,
        board.fullmove_number,
    )


def move_to_raw(move: chess.Move) -> int:
    """The raw 16-bit form of a python-chess move (ValueError for a drop)."""
    if move.drop:
        raise ValueError(f"drops are not chess moves: {move.uci()}")
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def raw_to_move(raw: int) -> chess.Move:
    """The python-chess move of a raw 16-bit move."""
    raw = int(raw)
    return chess.Move(raw & 63, (raw >> 6) & 63, (raw >> 12) or None)


def raw_to_moves(raws: Iterable[int]) -> list[chess.Move]:
    return [raw_to_move(raw) for raw in raws]


def game_root(source: chess.Board | GameHistory) -> chess.Board:
    """Where a game started, its castling rights cleaned as GameHistory cleans them (a FEN may
    grant rights its rooks cannot use)."""
    board = source.board if isinstance(source, GameHistory) else source
    root = board.root()
    root.castling_rights = root.clean_castling_rights()
    return root


def native_history(source: chess.Board | GameHistory) -> _native.History:
    """A native History of a game: its root (``game_root``) with its whole move stack played
    (for a GameHistory, the positions it was fed), so repetition counts and frames agree."""
    board = source.board if isinstance(source, GameHistory) else source
    history = _native.History(native_position(game_root(board)))
    for move in board.move_stack:
        history.push(move_to_raw(move))
    return history
