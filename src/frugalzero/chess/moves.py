"""AlphaZero's 4672-way move index (73 planes x 64 from-squares), seen from the side to move.

Index = plane * 64 + from_square, squares oriented so the side to move plays "up" the board
(Black's squares are mirrored vertically, ``sq ^ 56``). Planes:

* 0..55   queen-style moves: direction (N, NE, E, SE, S, SW, W, NW) * 7 + (distance - 1);
          queen promotions and castling (king two squares sideways) live here too;
* 56..63  knight moves;
* 64..72  under-promotions: piece (N, B, R) * 3 + direction (capture left, push, capture right).

Tables are built once with NumPy so a whole legal-move list maps to indices in one lookup.
"""

from __future__ import annotations

import chess
import numpy as np

NUM_PLANES = 73
NUM_MOVES = NUM_PLANES * 64  # 4672

QUEEN_DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
KNIGHT_OFFSETS = ((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1))
UNDERPROMOTIONS = (chess.KNIGHT, chess.BISHOP, chess.ROOK)

# promotion slot in the lookup table: 0 = none (or queen), 1..3 = N, B, R
_PROMO_SLOT = {None: 0, chess.QUEEN: 0, chess.KNIGHT: 1, chess.BISHOP: 2, chess.ROOK: 3}


def _plane_of(dr: int, df: int, promo_slot: int) -> int:
    """Plane for a move by (rank delta, file delta) from White's view; -1 if no such plane."""
    if promo_slot:
        if dr != 1 or df not in (-1, 0, 1):
            return -1
        return 64 + (promo_slot - 1) * 3 + (df + 1)
    if (dr, df) in KNIGHT_OFFSETS:
        return 56 + KNIGHT_OFFSETS.index((dr, df))
    dist = max(abs(dr), abs(df))
    if dist == 0 or not (dr == 0 or df == 0 or abs(dr) == abs(df)):
        return -1
    return QUEEN_DIRECTIONS.index((dr // dist, df // dist)) * 7 + dist - 1


def _build_tables() -> tuple[np.ndarray, np.ndarray]:
    encode = np.full((64, 64, 4), -1, dtype=np.int32)  # [from, to, promo_slot] -> index
    decode = np.full((NUM_MOVES, 3), -1, dtype=np.int32)  # index -> (from, to, promo_slot)
    for frm in range(64):
        for to in range(64):
            dr, df = (to >> 3) - (frm >> 3), (to & 7) - (frm & 7)
            for slot in range(4):
                plane = _plane_of(dr, df, slot)
                if plane < 0:
                    continue
                index = plane * 64 + frm
                encode[frm, to, slot] = index
                decode[index] = (frm, to, slot)
    return encode, decode


_ENCODE, _DECODE = _build_tables()


def move_to_index(move: chess.Move, turn: chess.Color) -> int:
    """Policy index of ``move`` played by ``turn``."""
    flip = 0 if turn == chess.WHITE else 56
    index = _ENCODE[move.from_square ^ flip, move.to_square ^ flip, _PROMO_SLOT[move.promotion]]
    if index < 0:
        raise ValueError(f"move {move.uci()} has no AlphaZero policy index")
    return int(index)


_ENCODE_FLAT: list[int] = _ENCODE.reshape(-1).tolist()  # (from * 64 + to) * 4 + slot


def moves_to_indices(moves: list[chess.Move], turn: chess.Color) -> np.ndarray:
    """Policy indices of many moves of one side (int64); one flat-list lookup per move."""
    flip = 0 if turn == chess.WHITE else 56
    table, slots = _ENCODE_FLAT, _PROMO_SLOT
    found = [
        table[(((m.from_square ^ flip) << 6) | (m.to_square ^ flip)) * 4 + slots[m.promotion]]
        for m in moves
    ]
    return np.array(found, dtype=np.int64)


def index_to_move(index: int, board: chess.Board) -> chess.Move:
    """The move of ``board``'s side to move that ``index`` denotes.

    A queen-style pawn move onto the last rank is a queen promotion; the board tells whether
    the moving piece is a pawn. The result is not checked for legality.
    """
    if not 0 <= index < NUM_MOVES:
        raise ValueError(f"policy index {index} out of range 0..{NUM_MOVES - 1}")
    frm, to, slot = (int(v) for v in _DECODE[index])
    if frm < 0:
        raise ValueError(f"policy index {index} denotes no move")
    flip = 0 if board.turn == chess.WHITE else 56
    frm, to = frm ^ flip, to ^ flip
    promotion = UNDERPROMOTIONS[slot - 1] if slot else None
    if not slot and chess.square_rank(to) in (0, 7) and board.piece_type_at(frm) == chess.PAWN:
        promotion = chess.QUEEN
    return chess.Move(frm, to, promotion)


def legal_moves_and_indices(board: chess.Board) -> tuple[list[chess.Move], np.ndarray]:
    """Legal moves in python-chess order and their policy indices."""
    moves = list(board.legal_moves)
    return moves, moves_to_indices(moves, board.turn)


def legal_mask(board: chess.Board) -> np.ndarray:
    """4672 booleans, True where the policy index is a legal move."""
    mask = np.zeros(NUM_MOVES, dtype=bool)
    mask[legal_moves_and_indices(board)[1]] = True
    return mask
