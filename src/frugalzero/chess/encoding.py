"""AlphaZero's 119 input planes, built from bitboards.

A position is described for the network by *frames* and *meta*:

* a frame is 13 unsigned 64-bit words, packed little-endian into 104 bytes: the 12 piece
  bitboards in absolute colours (White P N B R Q K, then Black P N B R Q K) and how many
  times the position occurred before in the game (0, 1, 2+). A missing history step (before
  the game or FEN start) is an all-zero frame: no real position lacks kings. What the network
  sees there is the net's *history rule* (``fill_history``), applied as frames become planes;
  bytes make a batch one ``np.frombuffer`` away and serve directly as cache keys;
* meta is 7 integers: side to move (1 = White), castling rights (White king-side,
  White queen-side, Black king-side, Black queen-side), no-progress (half-move) clock and
  full-move number.

Planes, from the side to move's view (the board mirrored vertically when Black is to move,
and "own" pieces always first):

* for each of the last 8 positions, newest first: own P N B R Q K, opponent's P N B R Q K,
  then "seen once before" and "seen twice before" (14 planes x 8 = 112);
* colour (1 when Black is to move), total move count / 100, own king-side castling,
  own queen-side castling, opponent's king-side, opponent's queen-side, no-progress
  count / 100 (7 planes).

Absolute colours in frames keep them reusable: the same frame serves a history whatever
side is to move when it is encoded.
"""

from __future__ import annotations

import struct
from typing import Literal, get_args

import chess
import numpy as np

from frugalzero import _native

HISTORY = 8
PLANES_PER_STEP = 14
AUX_PLANES = 7
NUM_PLANES = HISTORY * PLANES_PER_STEP + AUX_PLANES  # 119
FRAME_WORDS = 13
META_FIELDS = 7

# what the planes mean; saved in network files so a net and the code must agree
ENCODING_SPEC = {
    "name": "alphazero-119",
    "history": HISTORY,
    "planes": NUM_PLANES,
    "policy": "alphazero-4672",
    "move_count_scale": 100,
    "no_progress_scale": 100,
}


# meta columns of the own king-side, own queen-side, opponent's king-side and queen-side
# castling rights, by the side to move (the 4 castling planes, in this order)
CASTLING_WHITE = [1, 2, 3, 4]
CASTLING_BLACK = [3, 4, 1, 2]

FRAME = struct.Struct("<13Q")
FRAME_BYTES = FRAME.size  # 104

HistoryFill = Literal["always", "fen_only", "no"]
"""What the network sees for a history step that is missing (a position given as FEN, the
first plies of a game), lc0's ``HistoryFill``: 'always' copies the oldest known position into
every missing step, its repetition planes cleared; 'fen_only' does so unless the oldest known
position is the standard start position (a game from ``startpos`` keeps empty steps); 'no'
leaves them all-zero. A net is encoded with the rule it was trained with (``NetConfig``)."""
HISTORY_FILLS: tuple[str, ...] = get_args(HistoryFill)
LEGACY_HISTORY_FILL: HistoryFill = "always"
"""The rule for a net saved before nets recorded theirs. Such nets never trained on positions
with more than 5 empty steps (their games began at a book position followed by 2 or 8 moves,
which were not trained on), and both shipped ones measured far better filled: raw policy top-1
on held-out positions given as FEN 40.7% against 30.3% (medium; 43.2% with their moves), the
start position's value +0.03 against -0.99 (benchmarks/notes/history.md)."""


def pieces_of(board: chess.Board) -> tuple[int, ...]:
    """The 12 piece bitboards of ``board`` in absolute colours."""
    black, white = board.occupied_co  # indexed by colour: BLACK = 0, WHITE = 1
    p, n, b, r, q, k = (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
    )
    return (
        p & white,
        n & white,
        b & white,
        r & white,
        q & white,
        k & white,
        p & black,
        n & black,
        b & black,
        r & black,
        q & black,
        k & black,
    )


def board_frame(board: chess.Board, repetitions: int = 0) -> bytes:
    """The packed frame of ``board`` (pieces in absolute colours, repetition count)."""
    return FRAME.pack(*pieces_of(board), min(repetitions, 2))


def board_meta(board: chess.Board) -> tuple[int, ...]:
    """The 7 meta integers of ``board`` (see the module docstring)."""
    rights = board.clean_castling_rights()
    return (
        int(board.turn),
        int(bool(rights & chess.BB_H1)),
        int(bool(rights & chess.BB_A1)),
        int(bool(rights & chess.BB_H8)),
        int(bool(rights & chess.BB_A8)),
        board.halfmove_clock,
        board.fullmove_number,
    )


def frames_array(frames: bytes | list[bytes], count: int) -> np.ndarray:
    """Packed frames of ``count`` positions (HISTORY each, newest first) as (N, 8, 13) uint64."""
    data = frames if isinstance(frames, bytes) else b"".join(frames)
    return np.frombuffer(data, dtype="<u8").reshape(count, HISTORY, FRAME_WORDS)


_START_PIECES = np.array(pieces_of(chess.Board()), dtype=np.uint64)


def fill_history(frames: np.ndarray, rule: HistoryFill) -> np.ndarray:
    """Frames (N, 8, 13) uint64, newest first, with their missing steps as ``rule`` says: the
    one place where a net's history rule is applied, by both doors to the planes (``encode``
    here, ``nn.planes.frames_bytes`` for the device). Rows with every step known, or none, are
    returned as they are; the input is never changed (a copy is made when a row needs one)."""
    if rule not in HISTORY_FILLS:
        raise ValueError(f"history fill {rule!r}: choose from {', '.join(HISTORY_FILLS)}")
    if rule == "no" or len(frames) == 0:
        return frames
    known = (frames[:, :, :12] != 0).any(axis=2).sum(axis=1)  # known steps come first
    need = (known > 0) & (known < HISTORY)
    rows = np.flatnonzero(need)
    if rule == "fen_only" and len(rows):
        oldest = frames[rows, known[rows] - 1, :12]
        rows = rows[~(oldest == _START_PIECES).all(axis=1)]
    if not len(rows):
        return frames
    out = np.array(frames, dtype=np.uint64, copy=True)
    oldest = out[rows, known[rows] - 1].copy()
    oldest[:, 12] = 0  # a copy is no repetition: the repetition planes stay clear
    missing = np.arange(HISTORY)[None, :] >= known[rows, None]
    out[rows] = np.where(missing[:, :, None], oldest[:, None, :], out[rows])
    return out


def encode(frames: np.ndarray, meta: np.ndarray, history_fill: HistoryFill) -> np.ndarray:
    """Planes for a batch: frames (N, 8, 13) uint64 newest first, meta (N, 7) -> (N, 119, 8, 8),
    the missing history steps as ``history_fill`` says (``fill_history``).

    Built by the native core (``frugalzero._native.encode_planes``): Black-to-move rows get
    their bitboards byte-swapped (a vertical mirror) and their colour groups exchanged, and
    every set bit becomes a 1. The result is float32 laid out channels-last in memory (NHWC; a
    transposed view of an (N, 8, 8, 119) array), which is what the convolutions want:
    ``torch.from_numpy`` of it is a channels-last tensor without a copy. In C++ because the
    inference process builds 30 KB of planes a position: NumPy's passes over them cost 8.7 us a
    position (128 positions, 2-core machine), a tenth of the small net's own time.
    """
    frames = np.ascontiguousarray(frames, dtype=np.uint64)
    meta = np.ascontiguousarray(meta, dtype=np.int64)
    n = frames.shape[0]
    if frames.shape[1:] != (HISTORY, FRAME_WORDS) or meta.shape != (n, META_FIELDS):
        raise ValueError(f"bad shapes: frames {frames.shape}, meta {meta.shape}")
    frames = fill_history(frames, history_fill)  # contiguous: the input or a fresh copy
    planes = _native.encode_planes(frames, meta)
    return planes.reshape(n, 8, 8, NUM_PLANES).transpose(0, 3, 1, 2)
