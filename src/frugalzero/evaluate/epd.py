"""Test suites: how often an engine finds a position's best move (EPD ``bm``), with its interval.

Any engine spec plays (``net:default?nodes=1`` is the raw policy, ``stockfish?nodes=1``
Stockfish's first thought); every position is a new game for it, so no tree or hash carries
over. The same pass can write the engine's own moves as ``bm``, which is how a suite of
held-out positions gets labelled by a strong engine (``stockfish?depth=12``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import chess

from frugalzero.errors import UserError


@dataclass
class EpdPosition:
    board: chess.Board
    best: list[chess.Move]
    """The ``bm`` moves (empty: the line had none)."""
    ident: str
    line: int


def read_epd(path: Path, limit: int = 0) -> tuple[list[EpdPosition], int]:
    """(positions, lines skipped as unreadable) of an EPD file; at most ``limit`` (0 = all)."""
    positions, skipped = [], 0
    try:
        lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
    except OSError as exc:
        raise UserError(f"{path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            board, ops = chess.Board.from_epd(line)
        except ValueError:
            skipped += 1
            continue
        best = ops.get("bm", [])
        if not isinstance(best, list) or board.is_game_over():
            skipped += 1
            continue
        positions.append(EpdPosition(board, best, str(ops.get("id", f"line {number}")), number))
        if limit and len(positions) >= limit:
            break
    return positions, skipped


async def best_moves(spec_text: str, boards: list[chess.Board], seats: int) -> list[chess.Move]:
    """The engine's move in each position, ``seats`` positions at a time."""
    from frugalzero.evaluate.match import make_players
    from frugalzero.evaluate.specs import parse_spec

    spec = parse_spec(spec_text)
    if spec.tc is not None:
        raise UserError(f"engine {spec_text!r}: give a per-move limit (nodes=, depth=), not tc=")
    shared: dict = {}  # a net engine: one evaluator for every seat
    players = make_players(spec, seats, hang_seconds=120.0, shared=shared)
    moves: list[chess.Move | None] = [None] * len(boards)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(boards)):
        queue.put_nowait(index)

    async def seat(player) -> None:
        while not queue.empty():
            index = queue.get_nowait()
            await player.new_game(index)
            moves[index] = (await player.play(boards[index].copy())).move

    try:
        await asyncio.gather(*(p.start() for p in players))
        await asyncio.gather(*(seat(p) for p in players))
    finally:
        await asyncio.gather(*(p.close() for p in players), return_exceptions=True)
        for engine in shared.values():
            engine.close()
    return moves  # type: ignore[return-value]


def write_epd(path: Path, positions: list[EpdPosition], moves: list[chess.Move]) -> None:
    """``positions`` with ``moves`` as their ``bm`` (and their ids), written whole."""
    from frugalzero.runtime.files import atomic_write_text

    lines = [p.board.epd(bm=[move], id=p.ident) for p, move in zip(positions, moves, strict=True)]
    atomic_write_text(path, "\n".join(lines) + "\n")
