r"""The positions that calibrate the int8 network (``nn.quantize``): real positions of real games,
shipped with the package as a small text file of games from which they are rebuilt, history
included, so every machine quantizes a net on the same positions and gets the same int8 net.

The asset, ``assets/calibration-games.txt``: comment lines start with ``#``; every other line is
one game, its start FEN, a tab, then its moves in UCI notation separated by spaces. The games are
Stockfish's own at low nodes (``frugalzero sfgames``: random openings, then whole games), which
cover the opening, the middlegame and the endgame. To make it again (Stockfish installed)::

    frugalzero sfgames --games 128 --nodes 400 --seed 64 --out /tmp/calibration
    python -m frugalzero.nn.calibration /tmp/calibration \
        --out src/frugalzero/assets/calibration-games.txt

Imports no torch: the positions are ``NetInput``s, as the evaluator takes them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

import chess

from frugalzero.chess.history import GameHistory, NetInput
from frugalzero.errors import UserError

ASSET = "calibration-games.txt"
POSITIONS = 512
"""Positions that calibrate a net: 4 from each of the asset's 128 games."""
PER_GAME = 4


def asset_path() -> Path:
    return Path(str(resources.files("frugalzero") / "assets" / ASSET))


def read_games(path: Path | None = None) -> list[tuple[str, list[str]]]:
    """(start FEN, UCI moves) of every game in the file (the shipped asset by default)."""
    path = path or asset_path()
    games = []
    for number, line in enumerate(path.read_text(encoding="ascii").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fen, sep, moves = line.partition("\t")
        if not sep:
            raise UserError(f"{path}:{number}: expected 'FEN<tab>moves'")
        games.append((fen, moves.split()))
    return games


def game_positions(
    fen: str, moves: list[str], per_game: int = PER_GAME, offset: float = 0.25
) -> list[NetInput]:
    """``per_game`` positions of one game, spread evenly over it (the ply of the k-th is
    ``(k + offset) / per_game`` of the way), each with its history; positions with no legal
    move are left out. Another ``offset`` gives other positions of the same games."""
    plies = sorted({int((k + offset) * len(moves) / per_game) for k in range(per_game)})
    history = GameHistory(chess.Board(fen))
    found: list[NetInput] = []
    for ply, uci in enumerate(moves):
        if ply in plies and any(history.board.legal_moves):
            found.append(history.net_input())
        if ply >= plies[-1]:
            break
        history.push(chess.Move.from_uci(uci))
    return found


def calibration_positions(
    limit: int = POSITIONS, per_game: int = PER_GAME, offset: float = 0.25, path: Path | None = None
) -> list[NetInput]:
    """The positions that calibrate the int8 net: ``per_game`` of each game, ``limit`` in all,
    always the same ones."""
    found: list[NetInput] = []
    for fen, moves in read_games(path):
        found.extend(game_positions(fen, moves, per_game, offset))
        if len(found) >= limit:
            break
    return found[:limit]


def games_of_pgns(paths: Iterable[Path]) -> Iterator[tuple[str, list[str]]]:
    """(start FEN, UCI moves) of every game of the PGN files, in file order."""
    import chess.pgn

    for path in paths:
        with open(path, encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                moves = [m.uci() for m in game.mainline_moves()]
                if len(moves) >= 2 * PER_GAME:
                    yield game.board().fen(), moves


def write_asset(pgns: list[Path], out: Path, games: int) -> int:
    """The asset from the first ``games`` games of ``pgns`` (long enough to give their
    positions); returns how many it holds."""
    from frugalzero.runtime.files import atomic_write_text

    lines = [
        "# frugalzero int8 calibration games: start FEN<tab>UCI moves, one game a line",
        "# made by: python -m frugalzero.nn.calibration (see frugalzero/nn/calibration.py)",
    ]
    kept = 0
    for fen, moves in games_of_pgns(pgns):
        lines.append(f"{fen}\t{' '.join(moves)}")
        kept += 1
        if kept >= games:
            break
    atomic_write_text(out, "\n".join(lines) + "\n")
    return kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the int8 calibration games asset.")
    parser.add_argument("pgn", nargs="+", type=Path, help="PGN files, or folders to search")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--games", type=int, default=POSITIONS // PER_GAME)
    args = parser.parse_args(argv)
    files: list[Path] = []
    for p in args.pgn:
        files.extend(sorted(p.rglob("*.pgn")) if p.is_dir() else [p])
    kept = write_asset(files, args.out, args.games)
    print(f"{args.out}: {kept} games, {len(calibration_positions(path=args.out))} positions")


if __name__ == "__main__":
    main()
