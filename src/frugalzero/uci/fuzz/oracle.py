"""What an engine's answers to the fuzzer's commands must be, judged as they come.

The engine answers its ``go``s in order, so each ``bestmove`` answers the oldest ``go`` not yet
answered. One that answers none is extra; a ``go infinite`` or ``go ponder`` answered before any
command that could end it (``stop``; ``ponderhit`` for a ponder with limits; ``position``,
``ucinewgame`` or ``go``, which may stop the search first; the end of input; ``quit``) is
answered too early; a ``bestmove`` outside the moves the ``go`` allows is wrong. Only what the
fuzzer sent before the answer arrived can have released a search: the driver reads every line
that arrived before it sends the next command, so a search is never judged against a command
the engine had not been sent. Waiting (a ``go`` never answered, a late ``readyok``) is the
driver's to time; every ``go`` is owed its ``bestmove``, those sent before ``quit`` too."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from frugalzero.uci.fuzz.steps import INFINITE, PONDER, Step

RELEASING = ("stop", "position", "ucinewgame", "go", "quit")
"""Commands after which a ``go infinite`` or ``go ponder`` may answer."""


@dataclass
class Failure:
    """What went wrong, in one line."""

    kind: str
    """missing, extra, early, illegal, readyok, exited, exit, memory"""
    detail: str


@dataclass
class _Owed:
    step: Step
    kind: str
    released: bool = False


class Oracle:
    """Feed it every step sent (``sent``) and every line read (``received``), in order."""

    def __init__(self) -> None:
        self.owed: deque[_Owed] = deque()
        self.gos = 0
        self.bestmoves = 0
        self.extra = 0
        self.ready_owed = 0
        self.window: list[str] = []  # the gos sent since none was owed (a missing one is among)

    def sent(self, step: Step) -> None:
        if step.go is not None:
            self.gos += 1
        word = "<eof>" if step.line is None else (step.line.split() or [""])[0]
        if step.line is None or word in RELEASING:
            for owed in self.owed:
                owed.released = True
        elif word == "ponderhit":
            for owed in self.owed:
                if owed.kind == PONDER:
                    owed.kind = owed.step.after_hit or owed.kind
                    owed.released = owed.kind != INFINITE
        elif word == "isready" and step.line.split() == ["isready"]:
            self.ready_owed += 1
        if step.go is not None:
            if not self.owed:
                self.window.clear()
            self.window.append(step.line or "")
            self.owed.append(_Owed(step, step.go))

    def received(self, line: str) -> Failure | None:
        words = line.split()
        if words == ["readyok"]:
            if self.ready_owed == 0:
                return Failure("readyok", "readyok without an isready")
            self.ready_owed -= 1
            return None
        if not words or words[0] != "bestmove":
            return None
        self.bestmoves += 1
        if not self.owed:
            self.extra += 1
            return Failure("extra", f"{line!r} answers no go")
        owed = self.owed.popleft()
        if owed.kind in (INFINITE, PONDER) and not owed.released:
            return Failure("early", f"{line!r} before stop for {owed.step.line!r}")
        move = words[1] if len(words) > 1 else ""
        allowed = owed.step.moves
        if allowed is not None and move not in allowed:
            shown = ", ".join(sorted(allowed)[:8]) + (" …" if len(allowed) > 8 else "")
            return Failure("illegal", f"{line!r} for {owed.step.line!r}: not one of {shown}")
        if allowed is None and not _looks_like_move(move):
            return Failure("illegal", f"{line!r} for {owed.step.line!r}: not a move")
        return None

    @property
    def unanswered(self) -> int:
        return len(self.owed)


def _looks_like_move(text: str) -> bool:
    files, ranks = "abcdefgh", "12345678"
    if text == "0000":
        return True
    return (
        len(text) in (4, 5)
        and text[0] in files
        and text[1] in ranks
        and text[2] in files
        and text[3] in ranks
        and (len(text) == 4 or text[4] in "qrbn")
    )
