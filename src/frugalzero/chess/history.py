"""Positions with their history: what the network needs beyond the current board.

The input planes depend on the last 8 positions and on how often each occurred before
(repetition planes). ``GameHistory`` keeps that incrementally as a game goes on (O(1) per
move); ``board_frames`` recovers it from a python-chess board's own move stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import chess
import numpy as np

from frugalzero.chess.encoding import (
    FRAME,
    FRAME_BYTES,
    HISTORY,
    board_frame,
    board_meta,
    pieces_of,
)
from frugalzero.chess.moves import legal_moves_and_indices

Frame = bytes  # 104 bytes, see frugalzero.chess.encoding
EMPTY_FRAME: Frame = bytes(FRAME_BYTES)


def position_key(board: chess.Board) -> tuple:
    """Identity of a position for the repetition rule (FIDE 9.2: same pieces, side, rights)."""
    ep = board.ep_square if board.ep_square is not None and board.has_legal_en_passant() else None
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.occupied_co[chess.BLACK],
        board.turn,
        board.clean_castling_rights(),
        ep,
    )


def pad_frames(frames_newest_first: Sequence[Frame]) -> bytes:
    """Exactly HISTORY frames, newest first, padded with empty frames, as one bytes object."""
    frames = list(frames_newest_first[:HISTORY])
    return b"".join(frames) + EMPTY_FRAME * (HISTORY - len(frames))


class GameHistory:
    """Frames, keys and repetition counts of every position of one game, kept as it is played."""

    def __init__(self, board: chess.Board | None = None) -> None:
        self.board = board.copy(stack=False) if board is not None else chess.Board()
        # from here on python-chess keeps the rights clean itself (keys stay comparable)
        self.board.castling_rights = self.board.clean_castling_rights()
        self._frames: list[Frame] = []
        self._keys: list[tuple] = []
        self._counts: dict[tuple, int] = {}
        self._record()

    @classmethod
    def of_board(cls, board: chess.Board) -> GameHistory:
        """The game that led to ``board``: its root and its whole move stack."""
        history = cls(board.root())
        for move in board.move_stack:
            history.push(move)
        return history

    def _record(self) -> None:
        key = position_key(self.board)
        seen = self._counts.get(key, 0)
        self._counts[key] = seen + 1
        self._keys.append(key)
        self._frames.append(board_frame(self.board, seen))

    def push(self, move: chess.Move) -> None:
        self.board.push(move)
        self._record()

    def pop(self) -> chess.Move:
        key = self._keys.pop()
        self._frames.pop()
        self._counts[key] -= 1
        return self.board.pop()

    def copy(self) -> GameHistory:
        other = GameHistory.__new__(GameHistory)
        other.board = self.board.copy()
        other._frames = list(self._frames)
        other._keys = list(self._keys)
        other._counts = dict(self._counts)
        return other

    @property
    def repetitions(self) -> int:
        """How many times the current position occurred before (2 means threefold)."""
        return FRAME.unpack(self._frames[-1])[-1]

    def count(self, key: tuple) -> int:
        """How many times the position with ``key`` occurred so far."""
        return self._counts.get(key, 0)

    def frames(self, n: int = HISTORY) -> list[Frame]:
        """The last ``n`` frames, newest first (fewer near the start of the game)."""
        return self._frames[: -n - 1 : -1]

    def net_input(self) -> NetInput:
        return make_net_input(self.board, self.frames())


def board_frames(board: chess.Board) -> list[Frame]:
    """The last HISTORY frames of ``board``'s game, newest first, from its move stack.

    python-chess keeps a snapshot of every earlier position on ``board._stack``; reading those
    is ten times cheaper than copying and popping the board. The result equals replaying the
    game through ``GameHistory`` (a test holds both to that).
    """
    states = getattr(board, "_stack", None)
    if states is None or len(states) != len(board.move_stack):
        return GameHistory.of_board(board).frames()
    # Positions newest first: 0 is the board, k >= 1 is states[-k]. Position j can only repeat
    # positions j+2, j+4, ... within its no-progress window (a pawn move or capture makes every
    # earlier position unreachable), and only if the occupied squares agree, which is cheap.
    depth = min(len(states), HISTORY - 1)
    snaps = {0: _snapshot_board(board)}
    for k in range(1, depth + 1):
        snaps[k] = _snapshot_state(states[-k])
    window = min(len(states), max([j + snap[-1] for j, snap in snaps.items()]))
    occupied = [board.occupied] + [state.occupied for state in states[: -window - 1 : -1]]
    frames = []
    for j in range(depth + 1):
        snap = snaps[j]
        candidates = occupied[j + 2 : j + snap[-1] + 1 : 2]
        reps = 0
        if occupied[j] in candidates:  # rare: only then compare whole positions
            for k in range(j + 2, j + 2 + 2 * len(candidates), 2):
                if occupied[k] == occupied[j]:
                    if k not in snaps:
                        snaps[k] = _snapshot_state(states[-k])
                    reps += snaps[k][:-1] == snap[:-1]
        frames.append(FRAME.pack(*snap[0], min(reps, 2)))
    return frames


def _snapshot_board(board: chess.Board) -> tuple:
    key = position_key(board)
    return pieces_of(board), *key[8:], board.halfmove_clock


def _snapshot_state(state) -> tuple:
    """(pieces, turn, castling, ep, clock) of an entry of python-chess's position stack."""
    w, b = state.occupied_w, state.occupied_b
    p, n, bi, r, q, k = (
        state.pawns,
        state.knights,
        state.bishops,
        state.rooks,
        state.queens,
        state.kings,
    )
    pieces = (p & w, n & w, bi & w, r & w, q & w, k & w, p & b, n & b, bi & b, r & b, q & b, k & b)
    ep = None
    if state.ep_square is not None:  # rare: only right after a double pawn push
        scratch = chess.Board(None)
        state.restore(scratch)
        ep = state.ep_square if scratch.has_legal_en_passant() else None
    return pieces, state.turn, state.castling_rights, ep, state.halfmove_clock


@dataclass(slots=True)
class NetInput:
    """One position as the evaluator needs it: history frames, meta and its legal moves."""

    frames: bytes  # HISTORY packed frames, newest first
    meta: tuple[int, ...]
    moves: list[chess.Move]
    indices: np.ndarray  # policy index of each legal move
    key: tuple = field(init=False)  # exact cache key: everything the planes depend on

    def __post_init__(self) -> None:
        self.key = (self.frames, self.meta)


def make_net_input(board: chess.Board, frames_newest_first: Sequence[Frame]) -> NetInput:
    moves, indices = legal_moves_and_indices(board)
    return NetInput(pad_frames(frames_newest_first), board_meta(board), moves, indices)


def net_input_from_board(board: chess.Board) -> NetInput:
    """NetInput of a python-chess board, its history taken from the board's move stack."""
    return make_net_input(board, board_frames(board))
