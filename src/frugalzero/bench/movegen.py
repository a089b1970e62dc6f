"""Legal-move listing and make-move per position: the native chess core against python-chess.

The unit of work is what the search does at every node it expands: list the position's legal
moves, then play each of them on a copy of the position (python-chess: ``board.copy(stack=False)``
and ``push``, as the Python tree does; native: ``Position`` copies, looped over in C++). Both
work through the same positions from random games, interleaved round by round; figures are
medians of the per-round rates and of the per-round ratios. Perft with bulk counting is
measured alongside on the standard perft positions.

``--verify N`` instead holds the native core to python-chess on at least N positions (real
games from PGN files, random playouts to the end of the game, positions built around pins,
checks, en passant and promotions) with the checker the tests use, and reports what it saw.
"""

from __future__ import annotations

import argparse
import glob
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PERFT_FENS = (  # start position, "kiwipete", "position 4" (facts of the perft suite)
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 5),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 4),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 4),
)
BOOK = "../shared/openings/8moves_v3.pgn"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--positions", type=int, default=2000, help="positions per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved measurement rounds")
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement per round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--verify",
        type=int,
        metavar="N",
        help="check the native core against python-chess on at least N positions instead",
    )
    parser.add_argument(
        "--pgn",
        action="append",
        help="PGN files of real games for --verify (default: ../shared/openings/8moves_v3.pgn "
        "and benchmarks/results/**/*.pgn, where they exist)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.verify is not None:
        return verify(args.verify, args.pgn, args.seed)
    return measure(args.positions, args.rounds, args.seconds, args.seed)


def measure(positions: int, rounds: int, seconds: float, seed: int) -> dict[str, Any]:
    import chess

    from frugalzero import _native
    from frugalzero.bench.timing import median
    from frugalzero.chess.native import native_position
    from frugalzero.chess.positions import random_boards
    from frugalzero.runtime.timing import rate

    boards = [board.copy(stack=False) for board in random_boards(positions, seed, max_plies=120)]
    batch = _native.PositionBatch([native_position(board) for board in boards])
    moves = sum(board.legal_moves.count() for board in boards)

    def python_work() -> None:
        for board in boards:
            for move in board.generate_legal_moves():
                child = board.copy(stack=False)
                child.push(move)

    perft_positions = [native_position(chess.Board(fen)) for fen, _ in PERFT_FENS]
    perft_nodes = sum(p.perft(depth) for p, (_, depth) in zip(perft_positions, PERFT_FENS))

    def perft_work() -> None:
        for position, (_, depth) in zip(perft_positions, PERFT_FENS):
            position.perft(depth)

    if batch.list_and_play()[0] != moves:
        raise AssertionError("the native core and python-chess list different numbers of moves")
    figures: dict[str, list[float]] = {"native": [], "python": [], "ratio": [], "perft": []}
    for number in range(rounds):
        # alternate the order so a machine speeding up or slowing down favours neither
        order = ("native", "python") if number % 2 == 0 else ("python", "native")
        measured = {}
        for name in order:
            work = batch.list_and_play if name == "native" else python_work
            measured[name] = rate(work, len(boards), seconds)
        figures["native"].append(measured["native"])
        figures["python"].append(measured["python"])
        figures["ratio"].append(measured["native"] / measured["python"])
        figures["perft"].append(rate(perft_work, perft_nodes, seconds))
    return {
        "native_positions_per_s": round(median(figures["native"])),
        "python_chess_positions_per_s": round(median(figures["python"]), 1),
        "ratio": round(median(figures["ratio"]), 1),
        "ratios": [round(r, 1) for r in figures["ratio"]],
        "native_moves_played_per_s": round(median(figures["native"]) * moves / len(boards)),
        "moves_per_position": round(moves / len(boards), 2),
        "perft_nodes_per_s": round(median(figures["perft"])),
        "perft_nodes": perft_nodes,
        "positions": len(boards),
        "rounds": rounds,
        "python_chess": chess.__version__,
    }


def default_pgns() -> list[str]:
    """The opening book of ../shared and the games of the repository's run records."""
    found = [BOOK] if Path(BOOK).is_file() else []
    return found + sorted(glob.glob("benchmarks/results/**/*.pgn", recursive=True))


def _round_robin(iterators: list) -> Iterator:
    """One item from each iterator in turn, until all are exhausted."""
    live = list(iterators)
    while live:
        for iterator in list(live):
            item = next(iterator, None)
            if item is None:
                live.remove(iterator)
            else:
                yield item


def verify(target: int, pgns: list[str] | None, seed: int) -> dict[str, Any]:
    """Check at least ``target`` positions; a difference raises Mismatch (a traceback: it is a
    bug in the core, not bad input)."""
    import chess

    from frugalzero.chess.native_check import Checker, pgn_games, random_playout, tricky_board
    from frugalzero.errors import UserError
    from frugalzero.runtime.progress import progress_bar

    paths = pgns if pgns is not None else default_pgns()
    for path in paths:
        if not Path(path).is_file():
            raise UserError(f"{path}: PGN file not found")
    rng = random.Random(seed)
    games = _round_robin([pgn_games([path]) for path in paths])
    checker = Checker(children_every=10)
    by_source = {"real games": 0, "random playouts": 0, "tricky positions": 0}
    start = time.perf_counter()
    with progress_bar("verifying", "count", "elapsed", "remaining") as bar:
        task = bar.add_task("verify", total=target)
        while checker.positions < target:
            # a random playout, as many positions of real games (while they last), then half as
            # many tricky positions
            before = checker.positions
            checker.game(*random_playout(rng))
            playout = checker.positions - before
            by_source["random playouts"] += playout
            real = 0
            while real < playout and (game := next(games, None)) is not None:
                real += checker.game(*game)
            by_source["real games"] += real
            tricky = 0
            while tricky < (playout + real) // 4:
                board = tricky_board(rng)
                if board is not None:
                    checker.position(board)
                    tricky += 1
            by_source["tricky positions"] += tricky
            bar.update(task, completed=min(checker.positions, target))
    seconds = time.perf_counter() - start
    stats = checker.stats()
    return {
        "positions_checked": stats.pop("positions"),
        "children_checked": stats.pop("children"),
        "mismatches": 0,
        "seconds": round(seconds, 1),
        "by_source": by_source,
        "seen": stats,
        "pgn_files": len(paths),
        "seed": seed,
        "python_chess": chess.__version__,
    }
