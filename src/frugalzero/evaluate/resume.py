"""A match's finished games read back from its PGN, so a killed match goes on where it stopped
(``frugalzero match --resume``): a game's round says its index, hence its opening pair and
colours. A last game cut off mid-write is skipped and set apart, never counted."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import chess.pgn

from frugalzero.errors import UserError
from frugalzero.evaluate.pgn import PgnStats, append_game, read_headers
from frugalzero.evaluate.specs import EngineSpec


@dataclass
class Resumed:
    """The finished games of an earlier run of a match, read back from its PGN
    (``resumed_games``): they are not played again, and count in the match's results."""

    path: str
    games: dict[int, chess.pgn.Headers] = field(default_factory=dict)
    """Each game's headers, by its index in the match (its Round less one)."""
    other: int = 0
    """Games of other players or another event, passed over."""
    skipped: int = 0
    """Games unfinished or unreadable, a last one cut off mid-write among them."""
    torn_at: int | None = None
    """Where a last game cut off mid-write starts in the file (bytes); it is set apart
    (``set_aside_torn``) before the match appends a game behind it."""

    def within(self, games: int) -> int:
        """How many of the games a match of ``games`` games counts (a round past them is not
        the match's any more)."""
        return sum(1 for index in self.games if index < games)


_WHOLE_END = re.compile(rb"(?:^|\s)(?:1-0|0-1|1/2-1/2|\*)$")
"""How a whole PGN game ends: its result token (``to_pgn`` writes it last), not a Result
header cut off in its value."""
_GAME_START = re.compile(rb"\r?\n[ \t]*\r?\n(?=\[)")
"""A blank line before a header: where a game starts (movetext never starts with '[')."""


def resumed_games(path: str | Path, spec_a: EngineSpec, spec_b: EngineSpec, event: str) -> Resumed:
    """The match's finished games in ``path``: White and Black this match's engines in the
    colours of the game's round (A White in odd rounds), and its Event. Games of anyone else
    are passed over and counted. A game of the match whose Round is no game number, whose
    colours are those of the other game of its pair, or whose Round is there twice is one
    line (the file is not one run of this match). A last game cut off mid-write (the file does
    not end with a result) is skipped and counted: it is played again."""
    path = Path(path)
    found = Resumed(str(path))
    stats = PgnStats()
    last: int | None = None  # where the last game read went: its index, or -1 (passed over)
    skipped = 0  # games skipped before it
    for headers in read_headers([path], stats):
        skipped = stats.skipped
        white, black = headers["White"], headers["Black"]
        if {white, black} != {spec_a.name, spec_b.name} or headers.get("Event") != event:
            found.other += 1
            last = -1
            continue
        text = headers.get("Round", "?")
        index = int(text) - 1 if text.isdigit() else -1
        if index < 0:
            raise UserError(f"{path}: a game of this match has Round {text!r}, not a game number")
        a_white = white == spec_a.name
        if spec_a.name != spec_b.name and a_white != (index % 2 == 0):
            first = spec_a.name if index % 2 == 0 else spec_b.name
            raise UserError(
                f"{path}: round {text} has {white} as White, but in this match {first} is White "
                f"in round {text}"
            )
        if index in found.games:
            raise UserError(f"{path}: round {text} is there twice (two matches in one file?)")
        found.games[index] = headers
        last = index
    found.skipped = stats.skipped
    found.torn_at = _torn_start(path, stats)
    if found.torn_at is not None and last is not None and stats.skipped == skipped:
        # the torn game is the last one read: its headers were whole, its moves are not
        if last < 0:
            found.other -= 1
        else:
            del found.games[last]
        found.skipped += 1
    return found


def _torn_start(path: Path, stats: PgnStats) -> int | None:
    """Where the last game starts if it was cut off mid-write (a killed machine, a full disk;
    ``append_game`` writes a game at once), else None."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 64))
        tail = handle.read().rstrip()
    if not tail or _WHOLE_END.search(tail):
        return None
    data = path.read_bytes()
    starts = [m.end() for m in _GAME_START.finditer(data)]
    if starts:
        return starts[-1]
    if stats.read + stats.skipped <= 1:
        return 0
    raise UserError(f"{path}: its last game is cut off; remove what is left of it and resume")


def set_aside_torn(resumed: Resumed) -> Path | None:
    """Move a torn last game from the PGN to ``PGN.torn`` (appended, then the PGN cut back),
    so the next game starts on a line of its own and no reader takes the torn game's headers
    for a finished game's. The set-aside file, or None when nothing was torn."""
    if resumed.torn_at is None:
        return None
    path = Path(resumed.path)
    aside = path.with_name(path.name + ".torn")
    with path.open("rb") as handle:
        handle.seek(resumed.torn_at)
        torn = handle.read()
    append_game(aside, torn.decode("utf-8", errors="replace").rstrip() + "\n\n")
    os.truncate(path, resumed.torn_at)
    resumed.torn_at = None
    return aside
