"""Match games as the report's board viewer steps through them: every position precomputed.

The page needs no chess logic of its own: each game carries the FEN before its first move and
after every move, and the moves in SAN, so stepping is an index into two lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn

HEADERS = ("White", "Black", "Result", "Termination", "TerminationDetails", "Opening")


@dataclass
class GameView:
    title: str
    headers: dict[str, str]
    sans: list[str]
    fens: list[str]
    """``len(sans) + 1`` positions: the start, then after each move."""

    def to_json(self) -> dict:
        return {"title": self.title, "headers": self.headers, "sans": self.sans, "fens": self.fens}


def game_view(game: chess.pgn.Game, title: str) -> GameView:
    board = game.board()
    sans, fens = [], [board.fen()]
    for move in game.mainline_moves():
        sans.append(board.san(move))
        board.push(move)
        fens.append(board.fen())
    headers = {k: game.headers[k] for k in HEADERS if game.headers.get(k, "") not in ("", "?")}
    return GameView(title, headers, sans, fens)


def read_games(paths: Iterable[Path], label: str = "", limit: int = 400) -> list[GameView]:
    """The games of ``paths`` (at most ``limit``), titled ``label file #n: White - Black``;
    a game python-chess cannot read to the end is left out."""
    views: list[GameView] = []
    for path in paths:
        with path.open(encoding="utf-8", errors="replace") as handle:
            number = 0
            while len(views) < limit:
                game = chess.pgn.read_game(handle)
                if game is None:
                    break
                number += 1
                if game.errors:
                    continue
                who = f"{game.headers.get('White', '?')} - {game.headers.get('Black', '?')}"
                prefix = f"{label} " if label else ""
                views.append(game_view(game, f"{prefix}{path.stem} #{number}: {who}"))
    return views
