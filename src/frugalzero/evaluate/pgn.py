"""Games to PGN and back: what was played, by which engine, under which limit, and why it ended.

Out: the Seven Tag Roster, the engines' full spec strings, their limits, the time control, the
opening (its moves carry a ``book`` comment), ``Termination`` as the PGN standard spells it with
the exact reason beside it (an engine that forfeits is named, with what it did, in a comment at
the end), and the ply count; every engine move carries its score and depth, as
cutechess writes them, and under a clock the mover's clock after it (``[%clk 0:00:09.95]``,
as lichess writes it). In: only the headers of any PGN are read (White, Black, Result), which is
all a rating needs, and is fast on large files.
"""

from __future__ import annotations

import datetime
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.pgn

from frugalzero.chess.positions import Opening
from frugalzero.errors import UserError
from frugalzero.results import SCORE


@dataclass
class GameOutcome:
    """One finished game of a match."""

    index: int
    """Game number in the match, from 0; games 2k and 2k+1 share an opening."""
    white: str
    black: str
    result: str
    """'1-0', '0-1' or '1/2-1/2'."""
    reason: str
    """Why it ended: 'checkmate', 'White resigns', 'Black hang', ..."""
    termination: str
    """PGN Termination: 'normal', 'adjudication', 'rules infraction' or 'time forfeit'."""
    opening: Opening
    moves: list[chess.Move] = field(default_factory=list)
    """Every move from the opening's root, book moves included."""
    comments: list[str] = field(default_factory=list)
    """One per move: 'book', '+0.35/12' or ''."""
    white_limit: str = "-"
    black_limit: str = "-"
    time_control: str = "-"
    """PGN TimeControl (``10+0.1``; ``-`` for none, ``?`` when the sides' clocks differ)."""
    clocks: dict[int, float] = field(default_factory=dict)
    """The mover's clock in seconds after each move played under a clock, by index in
    ``moves``."""
    failed: str = ""
    """Name of the engine that crashed, hung or moved illegally ('' if none)."""
    forfeit: str = ""
    """How it failed: 'hang', 'crash', 'illegal move', 'bad output' or 'error'."""
    forfeit_detail: str = ""
    """What it did, e.g. 'no bestmove 5.1 s after go'."""

    @property
    def plies(self) -> int:
        return len(self.moves)

    def white_score(self) -> float:
        return SCORE[self.result]


def score_comment(score: int | None, depth: int | None) -> str:
    if score is None:
        return ""
    if abs(score) >= 90_000:
        mate = 100_000 - abs(score)  # python-chess counts mates in moves
        text = f"{'+' if score > 0 else '-'}M{mate}"
    else:
        text = f"{score / 100:+.2f}"
    return f"{text}/{depth}" if depth is not None else text


def to_pgn(
    outcome: GameOutcome, event: str = "frugalzero match", when: datetime.date | None = None
) -> str:
    """The game as PGN text (ends with a blank line)."""
    board = chess.Board(outcome.opening.root_fen)
    game = chess.pgn.Game()
    when = when or datetime.date.today()
    game.headers["Event"] = event
    game.headers["Site"] = os.uname().nodename if hasattr(os, "uname") else "?"
    game.headers["Date"] = when.strftime("%Y.%m.%d")
    game.headers["Round"] = str(outcome.index + 1)
    game.headers["White"] = outcome.white
    game.headers["Black"] = outcome.black
    game.headers["Result"] = outcome.result
    if outcome.opening.root_fen != chess.STARTING_FEN:
        game.setup(board)
    game.headers["TimeControl"] = outcome.time_control
    game.headers["WhiteLimit"] = outcome.white_limit
    game.headers["BlackLimit"] = outcome.black_limit
    if outcome.opening.name:
        game.headers["Opening"] = outcome.opening.name
    game.headers["Termination"] = outcome.termination
    game.headers["TerminationDetails"] = outcome.reason
    game.headers["PlyCount"] = str(outcome.plies)
    node: chess.pgn.GameNode = game
    for ply, (move, comment) in enumerate(zip(outcome.moves, outcome.comments)):
        node = node.add_variation(move)
        if comment:
            node.comment = comment
        if ply in outcome.clocks:
            node.set_clock(outcome.clocks[ply])
    if outcome.failed:  # on the last move, or before the first: who failed, and how
        note = f"{outcome.failed} forfeits: {outcome.forfeit}, {outcome.forfeit_detail}"
        node.comment = f"{node.comment} {note}".strip()
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return game.accept(exporter) + "\n\n"


def append_game(path: Path, text: str) -> None:
    """Append one whole game with a single write, flushed to disk: a killed match keeps every
    finished game, and a reader skips at most a torn last one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class PgnStats:
    read: int = 0
    skipped: int = 0
    """Games without a result ('*') or without player names."""


def read_headers(
    paths: list[str | Path], stats: PgnStats | None = None
) -> Iterator[chess.pgn.Headers]:
    """The headers of every finished game in ``paths`` (a result and both player names);
    others are counted in ``stats.skipped``."""
    stats = stats if stats is not None else PgnStats()
    for path in map(Path, paths):
        if not path.is_file():
            raise UserError(f"{path}: PGN file not found")
        with path.open(encoding="utf-8-sig", errors="replace") as handle:
            while True:
                try:
                    headers = chess.pgn.read_headers(handle)
                except (ValueError, UnicodeError):
                    stats.skipped += 1
                    continue
                if headers is None:
                    break
                white, black = headers.get("White", "?"), headers.get("Black", "?")
                named = white not in ("", "?") and black not in ("", "?")
                if headers.get("Result", "*") not in SCORE or not named:
                    stats.skipped += 1
                    continue
                stats.read += 1
                yield headers


def read_results(
    paths: list[str | Path], stats: PgnStats | None = None
) -> Iterator[tuple[str, str, float]]:
    """(white, black, white's score) of every finished game in ``paths``."""
    for headers in read_headers(paths, stats):
        yield headers["White"], headers["Black"], SCORE[headers["Result"]]


def pgn_text_games(text: str) -> list[chess.pgn.Game]:
    """All games of a PGN string (tests and tools)."""
    handle = io.StringIO(text)
    games = []
    while (game := chess.pgn.read_game(handle)) is not None:
        games.append(game)
    return games
