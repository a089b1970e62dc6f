"""Where match games start: a book, or random openings; either way played in colour pairs.

Engines limited by nodes are deterministic, so a match from one position would replay one game.
Each opening is therefore played twice with colours swapped: the opening's own bias cancels
within the pair, and the pair is the unit of the pentanomial statistics.

Without a book, an opening is ``noise_plies`` random plies from the start position (like the
exploration prefix of ε-Explore). Openings that end with material unequal, a side in check or
the game over are redrawn: a cheap balance filter that needs no engine. The same seed gives the
same openings on every machine, so a calibration run can be reproduced anywhere.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import chess

from frugalzero.chess.positions import Opening, load_book, odds_board

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def material(board: chess.Board, color: chess.Color) -> int:
    return sum(v * len(board.pieces(p, color)) for p, v in VALUES.items())


def random_walk(root: chess.Board, rng: random.Random, plies: int) -> chess.Board:
    """Up to ``plies`` uniformly random moves from ``root`` (fewer if the game ends)."""
    board = root.copy()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board


def random_opening(rng: random.Random, plies: int, tries: int = 1000) -> Opening:
    """``plies`` random moves from the start, material level, nobody in check."""
    for _ in range(tries):
        board = random_walk(chess.Board(), rng, plies)
        if (
            len(board.move_stack) == plies
            and not board.is_check()
            and board.outcome(claim_draw=True) is None
            and material(board, chess.WHITE) == material(board, chess.BLACK)
        ):
            moves_uci = tuple(m.uci() for m in board.move_stack)
            return Opening(chess.STARTING_FEN, moves_uci, name=" ".join(moves_uci))
    raise RuntimeError(f"no balanced random opening in {tries} tries")


def opening_stream(book: str | Path | None, noise_plies: int, seed: int) -> Iterator[Opening]:
    """Endless openings: the book's in a shuffled order (whole book before any repeat), or
    random ones; with neither, the standard start position."""
    rng = random.Random(seed)
    if book:
        openings = load_book(book)
        while True:
            order = list(range(len(openings)))
            rng.shuffle(order)
            for i in order:
                yield openings[i]
    elif noise_plies > 0:
        while True:
            yield random_opening(rng, noise_plies)
    else:
        while True:
            yield Opening(chess.STARTING_FEN, name="startpos")


def odds_opening(
    piece: str, giver_white: bool, plies: int, seed: tuple[int, int], tries: int = 100
) -> Opening:
    """An odds start (``giver_white``: White gives ``piece``) followed by ``plies`` random
    plies, nobody in check at the end; the same seed gives the same opening."""
    root = odds_board(piece, chess.WHITE if giver_white else chess.BLACK)
    rng = random.Random(f"{seed[0]}-{seed[1]}-{giver_white}")
    name = f"{piece} odds, {'White' if giver_white else 'Black'} gives"
    for _ in range(tries):
        board = random_walk(root, rng, plies)
        if not board.is_check() and board.outcome(claim_draw=True) is None:
            return Opening(root.fen(), tuple(m.uci() for m in board.move_stack), name=name)
    return Opening(root.fen(), name=name)
