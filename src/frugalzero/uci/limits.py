"""The numbers a search is given, checked in one place: ``go``'s limits, and the range of the
node count that the ``Nodes`` option and ``frugalzero uci --nodes`` share.

A ``go`` is never refused for its numbers: a GUI waits for its ``bestmove`` whatever it sent.
A number that is missing or not a whole number is dropped (the limit is not given), one out of
its range is clamped into it (or dropped where its minimum means nothing, as ``movestogo 0``),
and each such change is a note the engine sends as ``info string``. So every ``go`` ends by
itself unless it says ``infinite`` or ``ponder``: an absurd clock (``wtime 10^15``) is a week
(and the time manager plans a week as a long game's clock, ``timeman.LONGEST_CLOCK_MS``),
``nodes 99999999999`` is ``NODES_MAX``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import chess

from frugalzero.uci.timeman import TimeBudget, plan, side_clock

NODES_MAX = 10_000_000
"""The most nodes one search is given (``Nodes``, ``--nodes``, ``go nodes``): ~13 GB of tree
at ~1.3 kB a node, unless ``RamLimitMb`` stops the search sooner."""
MAX_CLOCK_MS = 7 * 24 * 3600 * 1000
"""The longest clock, increment or ``movetime`` taken (a week): a search under a clock ends."""
_WHOLE = re.compile(r"[+-]?\d+")


class Range(NamedTuple):
    """The values a ``go`` number may take; below ``low`` it is clamped up, or dropped when
    ``drop_below`` (a minimum that means nothing: ``movestogo 0``, ``mate 0``, ``depth 0``)."""

    low: int
    high: int
    drop_below: bool = False


GO_RANGES: dict[str, Range] = {
    "wtime": Range(0, MAX_CLOCK_MS),  # a GUI may send a flagged clock as negative: 0
    "btime": Range(0, MAX_CLOCK_MS),
    "winc": Range(0, MAX_CLOCK_MS),
    "binc": Range(0, MAX_CLOCK_MS),
    "movestogo": Range(1, 10_000, drop_below=True),
    "movetime": Range(0, MAX_CLOCK_MS),
    "nodes": Range(1, NODES_MAX),  # go nodes 0 searches one node
    "depth": Range(1, 10_000, drop_below=True),  # the main line's length (protocol)
    "mate": Range(1, 10_000, drop_below=True),
}
_FLAGS = ("infinite", "ponder", "searchmoves")


@dataclass
class GoLimits:
    """The limits of one ``go`` command (times in milliseconds)."""

    wtime: int | None = None
    btime: int | None = None
    winc: int = 0
    binc: int = 0
    movestogo: int | None = None
    movetime: int | None = None
    nodes: int | None = None
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was dropped or clamped, one line each, for ``info string``."""


def parse_go(tokens: list[str]) -> GoLimits:
    """Limits of ``go`` from its arguments; never fails (see the module's docstring)."""
    limits = GoLimits()
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if word in GO_RANGES:
            text = tokens[i + 1] if i + 1 < len(tokens) else None
            if text is None or text in GO_RANGES or text in _FLAGS:
                limits.notes.append(f"go {word}: missing number; dropped")
                i += 1
                continue
            value = go_number(word, text, limits.notes)
            if value is not None:
                setattr(limits, word, value)
            i += 2
        elif word in ("infinite", "ponder"):
            setattr(limits, word, True)
            i += 1
        elif word == "searchmoves":
            i += 1
            while i < len(tokens) and tokens[i] not in GO_RANGES and tokens[i] not in _FLAGS:
                limits.searchmoves.append(tokens[i])
                i += 1
        else:
            limits.notes.append(f"go: unknown word {word[:20]!r} dropped")
            i += 1
    return limits


def go_number(word: str, text: str, notes: list[str]) -> int | None:
    """``text`` as the value of ``go``'s ``word``, clamped into its range (None: dropped),
    each change noted."""
    bounds = GO_RANGES[word]
    shown = text if len(text) <= 20 else text[:20] + "..."
    if not _WHOLE.fullmatch(text):
        notes.append(f"go {word} {shown!r}: not a whole number; dropped")
        return None
    if len(text) > 30:  # out of range whatever it is (int() refuses 4,300 digits)
        value = bounds.low - 1 if text[0] == "-" else bounds.high + 1
    else:
        value = int(text)
    if value < bounds.low:
        if bounds.drop_below:
            notes.append(f"go {word} {shown}: below {bounds.low}; dropped")
            return None
        notes.append(f"go {word} {shown}: below {bounds.low}; {bounds.low} used")
        return bounds.low
    if value > bounds.high:
        notes.append(f"go {word} {shown}: above {bounds.high}; {bounds.high} used")
        return bounds.high
    return value


def time_budget(limits: GoLimits, turn: chess.Color, overhead_ms: int) -> TimeBudget | None:
    """The time of this move (``frugalzero.uci.timeman``), or None when no clock or movetime
    applies; ``overhead_ms`` is left for the GUI and the pipe."""
    remaining, increment = side_clock(turn, limits.wtime, limits.btime, limits.winc, limits.binc)
    return plan(remaining, increment, limits.movestogo, limits.movetime, overhead_ms)
