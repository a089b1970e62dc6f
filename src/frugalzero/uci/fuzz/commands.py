"""The fuzzer's commands: from a seed and the options an engine lists, random interleavings of
``position`` (legal, illegal, hostile FENs), ``go`` with every limit and hostile numbers,
``stop``, ``ponderhit``, ``isready``, ``setoption`` (garbage and hostile values for every listed
option; sane new values of the options that shape a search, set while one runs and followed by
a search under them: ``RETUNE``), ``ucinewgame``, garbage lines, and at the end ``quit`` or the
end of input.

Each ``Step`` says what the engine owes for it, from what the fuzzer knows it sent: how a ``go``
ends (by itself soon, by itself but not soon, or only when released) and the moves its
``bestmove`` may name when the position is known. The fuzzer keeps the searches short so a run
covers many commands: a ``go`` it cannot be sure ends soon (``infinite``, ``ponder``, huge
limits, ``mate`` alone, any ``go`` while a search-sizing option holds a hostile value) gets a
``stop`` after a short random delay, and is sent only once every earlier ``go`` is answered, so
that ``stop`` is unambiguous. Options that size the search (``HEAVY``) or change the start
position (``SHAPING``) are set back at the end of the sequence that changed them."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

import chess

from frugalzero.uci.fuzz.steps import (
    INFINITE,
    LONG,
    PONDER,
    SHORT,
    Action,
    EngineOption,
    Sequence,
    Step,
)

HEAVY = frozenset({"nodes", "threads", "batchsize", "nncachesize", "multipv", "hash", "ramlimitmb"})
"""Options that size a search (its nodes, threads, batches, cache, lines, memory): hostile values
are sent, every ``go`` is then treated as LONG, and the sequence ends by setting them back."""
SHAPING = frozenset({"odds", "oddsgiver", "uci_chess960", "uci_variant"})
"""Options that change the start position: ``startpos`` is unknown while one is not default."""
RETUNE = {
    "threads": ("0", "1", "2", "3"),
    "batchsize": ("1", "4", "16", "32"),
    "nncachesize": ("0", "5000", "200000"),
    "multipv": ("1", "2", "4"),
    "nodes": ("16", "32", "48"),
    "uci_showwdl": ("true", "false"),
    "temperature": ("0", "0.5", "1"),
    "policytemperature": ("1", "1.6", "2.5"),
    "moveoverhead": ("0", "30", "100", "400"),
}
"""Sane values of the options a GUI changes between and during searches (a new thread count, a
batch size, a cache size …): changed while a search runs, then ``isready`` (answered within
its bound whatever the change restarts) and a search under them."""
CALM = {"nodes": "32"}
"""Values the fuzzer starts a session with (and sets back): ``Nodes`` is what a ``go`` without
a limit searches, kept small so the run covers many commands."""

FIELDS = ("nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo", "depth", "mate")
SMALL = {  # values a short search takes
    "nodes": (1, 48),
    "movetime": (1, 150),
    "wtime": (50, 2500),
    "btime": (50, 2500),
    "winc": (0, 50),
    "binc": (0, 50),
    "movestogo": (1, 40),
    "depth": (1, 8),
    "mate": (1, 3),
}
LARGE = {  # sane values of a long search: a GUI's analysis or a long time control
    "nodes": (2_000, 500_000),
    "movetime": (1_000, 100_000),
    "wtime": (10_000, 10_000_000),
    "btime": (10_000, 10_000_000),
    "winc": (1_000, 60_000),
    "binc": (1_000, 60_000),
    "movestogo": (100, 1_000),
    "depth": (15, 200),
    "mate": (5, 50),
}
HUGE = ("1000000000000000", "99999999999", "9" * 30)
HOSTILE = ("-1", "-5", "0", "-0", *HUGE, "abc", "1e3", "3.5", "+7", "0x10", "nan", "inf", "")
"""Hostile numbers (for ``go`` and every ``setoption``): negative, zero, huge, not numbers."""
BOUNDS = {"nodes": (1, 64), "movetime": (1, 300)}
"""A ``go`` with one of these (a plain number in range) ends soon whatever else it says."""

SOUND_FENS = (
    "r1bq1rk1/ppp2pbp/3p1np1/4n3/4P3/N1PB1N2/PP3PPP/R1BQ1RK1 w - - 0 9",
    "r2qkbnr/pp3ppp/4p3/3pPb2/3n4/4B3/PPP1BPPP/RN1Q1RK1 w kq - 0 9",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
    "r3k2r/pppq1ppp/2n2n2/3pp3/1b1PP1b1/2N2N2/PPPQBPPP/R3K2R w KQkq - 4 8",  # castling
    "8/P7/8/8/8/5k2/7p/4K3 w - - 0 1",  # promotions
    "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",  # mate in one
    "4k3/8/8/8/8/8/4r3/4K3 w - - 0 1",  # in check
    "8/8/8/8/8/4k3/4q3/4K3 w - - 0 1",  # checkmated: bestmove 0000
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate: bestmove 0000
    "4k3/8/8/8/8/8/8/4K3 w - - 0 1",
)
HOSTILE_FENS = (
    "",
    "garbage",
    "8/8/8/8/8/8/8/8 w - - 0 1",
    "kk6/8/8/8/8/8/8/KK6 w - - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
    "4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1",
    "4k3/8/8/8/8/8/8/R3K2R w KQ e3 0 1",
    "P3k3/8/8/8/8/8/8/4K3 w - - 0 1",
    "4k3/4Q3/8/8/8/8/8/4K3 w - - 0 1",
    "QQQQkQQQ/QQQQQQQQ/8/8/8/8/8/4K3 b - - 0 1",
    "4k3/8/8/8/8/8/8/4K3 w - - 99999999999 99999999999",
    "4k3/8/8/8/8/8/8/4K3 w - - -1 -1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 extra fields",
    "9/8/8/8/8/8/8/8 w - - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNRR w KQkq - 0 1",
    "3qk3/8/8/1b6/8/8/8/r3K2r w - - 0 1",
    "x" * 5000,
)
GARBAGE = (
    "foo",
    "bar baz 1 2 3",
    "\u00e9 \u00fc \u6f22\u5b57 \U0001f600",
    "x" * 20_000,
    "\t",
    "debug on",
    "debug off",
    "register later",
    "\udcff\udcfe not utf-8",  # surrogate escapes: the driver writes these two bytes raw
)


class Fuzzer:
    """Command sequences from ``seed`` for an engine listing ``options``; ``board`` is the
    position the engine searches as far as the fuzzer knows (None: unknown)."""

    def __init__(
        self, seed: int | str, options: list[EngineOption], calm: dict[str, str] | None = None
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.options = options
        self.calm = calm = CALM if calm is None else calm
        self.base = {o.name: calm.get(o.name.lower(), o.default) for o in options}
        self.values = dict(self.base)  # what the engine holds, as far as the fuzzer knows
        self.board: chess.Board | None = None  # a fresh engine's position is not promised
        self.sequences = 0
        self._heavy = False  # a search-sizing option may hold a hostile value
        self._touched: set[str] = set()
        self._last: dict[str, str] = {}  # the last setoption line of each lasting option
        self._position: str | None = None  # the last position command

    # -- sessions and sequences -----------------------------------------------------------------
    def opening(self) -> Sequence:
        """The calm values (``CALM``, ``RamLimitMb`` …) on a fresh engine, then a search."""
        steps = [
            Step(f"setoption name {o.name} value {self.base[o.name]}")
            for o in self.options
            if self.base[o.name] != o.default
        ]
        steps += [Step("position startpos"), self._go_step("go nodes 1", SHORT)]
        self.board = chess.Board()
        self._position = "position startpos"
        return Sequence(-1, [tuple(steps)])

    def replay(self) -> Sequence:
        """What a fresh engine needs, after ``opening``, to be where the next sequence starts:
        the options set earlier that still hold, and the last position."""
        lines = list(self._last.values()) + ([self._position] if self._position else [])
        return Sequence(-1, [(Step(line),) for line in lines])

    def sequence(self, actions: int = 6) -> Sequence:
        """Up to ``actions`` random actions, then the options that sized the search or shaped
        the start set back."""
        sequence = Sequence(self.sequences)
        self.sequences += 1
        makers: list[tuple[Callable[[], Action], int]] = [
            (self._position_action, 26),
            (self._short_go, 24),
            (self._long_go, 12),
            (self._ponder, 5),
            (self._retune, 8),
            (lambda: (Step("isready"),), 10),
            (lambda: (self._setoption(),), 11),
            (lambda: (Step("stop"),), 3),
            (lambda: (Step("ponderhit"),), 2),
            (self._newgame, 4),
            (lambda: (Step(self.rng.choice(GARBAGE + ("",))),), 3),
        ]
        if any(o.name.lower() == "ramlimitmb" for o in self.options) and self.rng.random() < 0.01:
            sequence.actions.append(self._memory())
        funcs, weights = zip(*makers, strict=True)
        for _ in range(self.rng.randint(1, actions)):
            sequence.actions.append(self.rng.choices(funcs, weights)[0]())
        restore = [o for o in self.options if o.name.lower() in self._touched]
        if restore:
            sequence.actions.append(
                tuple(Step(f"setoption name {o.name} value {self.base[o.name]}") for o in restore)
            )
            for option in restore:
                self.values[option.name] = self.base[option.name]
        self._touched.clear()
        self._heavy = False
        return sequence

    def ending(self) -> Sequence:
        """The session's end: maybe a ``go`` still searching, then ``quit`` or the end of input
        (which must answer it)."""
        sequence = Sequence(self.sequences)
        self.sequences += 1
        if self.rng.random() < 0.5:
            sequence.actions.append(
                self._short_go() if self.rng.random() < 0.5 else self._endless()
            )
        last = Step("quit") if self.rng.random() < 0.3 else Step(None)
        sequence.actions.append((last,))
        return sequence

    # -- actions --------------------------------------------------------------------------------
    def _position_action(self) -> Action:
        rng = self.rng
        start = self._start_known()
        roll = rng.random()
        if roll < 0.45:
            base, board = "position startpos", chess.Board() if start else None
        elif roll < 0.8:
            fen = rng.choice(SOUND_FENS)
            base, board = f"position fen {fen}", chess.Board(fen)
        elif roll < 0.95:
            base, board = f"position fen {rng.choice(HOSTILE_FENS)}".rstrip(), None
        else:
            base = rng.choice(
                ["position", "position fen", "position foo", "position startpos e2e4"]
            )
            board = None
        line, self.board = self._with_moves(base, board)
        self._position = line
        return (Step(line),)

    def _with_moves(self, base: str, board: chess.Board | None) -> tuple[str, chess.Board | None]:
        """``base`` with random moves: legal ones from ``board`` (or the start position where
        the board is unknown), now and then an illegal or malformed one (the board: unknown)."""
        rng = self.rng
        if rng.random() < 0.35:
            return base, board
        walk = (board or chess.Board()).copy(stack=False)
        moves: list[str] = []
        for _ in range(rng.choice([1, 2, 4, 8, 16, 60, 200])):
            legal = list(walk.legal_moves)
            if not legal:
                break
            move = rng.choice(legal)
            walk.push(move)
            moves.append(move.uci())
        if rng.random() < 0.1:
            moves.insert(rng.randint(0, len(moves)), rng.choice(["e2e5", "a1a1", "zz", "e7e8q"]))
            board = None
        elif board is not None:
            board = walk
        return f"{base} moves {' '.join(moves)}".rstrip(), board

    def _newgame(self) -> Action:
        self.board = None  # after ucinewgame the GUI sends a position; none is promised
        self._position = None
        return (Step("ucinewgame"),)

    def _short_go(self) -> Action:
        """A ``go`` that may well end by itself soon; LONG ones (hostile numbers, heavy
        options) come with their ``stop``."""
        line, kind = self._go_line(endless=False)
        step = self._go_step(line, kind)
        if kind == SHORT:
            return (step,)
        return (step, *self._during(), Step("stop", pause_s=self._delay()))

    def _long_go(self) -> Action:
        return self._endless() + (Step("stop", pause_s=self._delay()),)

    def _endless(self) -> Action:
        """A ``go`` that does not end soon by itself (``infinite``, or huge limits), and the
        commands sent while it searches; no ``stop`` (the caller adds it, or the input ends)."""
        line, kind = self._go_line(endless=True)
        return (self._go_step(line, kind), *self._during())

    def _ponder(self) -> Action:
        """``go ponder``, then ``ponderhit`` (its limits then apply) or ``stop``."""
        line, after = self._go_line(endless=False)
        go = self._go_step(line.replace("go", "go ponder", 1), PONDER, after)
        during = self._during()
        if self._heavy and after == SHORT:  # set while pondering: what follows ponderhit
            after = LONG
            go = replace(go, after_hit=after)
        steps = [go, *during]
        if self.rng.random() < 0.6:
            steps.append(Step("ponderhit", pause_s=self._delay()))
            if after == SHORT:
                return tuple(steps)
            steps += self._during()
        steps.append(Step("stop", pause_s=self._delay()))
        return tuple(steps)

    def _retune(self) -> Action:
        """Option changes interleaved with searches: a search, sane new values (``RETUNE``) of
        1-3 options set while it runs, ``isready``, and a search under them right after."""
        rng = self.rng
        line, kind = self._go_line(endless=rng.random() < 0.4)
        steps = [self._go_step(line, kind)]
        for _ in range(rng.randint(1, 3)):
            steps.append(replace(self._sane_option(), pause_s=rng.uniform(0, 0.03)))
        steps.append(Step("isready"))
        if kind != SHORT:
            steps.append(Step("stop", pause_s=self._delay()))
        line, kind = self._go_line(endless=False)
        steps.append(self._go_step(line, kind))
        if kind != SHORT:
            steps.append(Step("stop", pause_s=self._delay()))
        return tuple(steps)

    def _sane_option(self) -> Step:
        """A ``setoption`` of a sane value (``RETUNE``) of an option the engine lists."""
        listed = [o for o in self.options if o.name.lower() in RETUNE]
        if not listed:
            return Step("isready")
        option = self.rng.choice(listed)
        key = option.name.lower()
        value = self.rng.choice(RETUNE[key])
        if option.kind == "spin" and not (option.minimum or 0) <= int(value) <= (
            option.maximum if option.maximum is not None else int(value)
        ):
            value = option.default
        line = f"setoption name {option.name} value {value}"
        if key in HEAVY or key in SHAPING:
            self._touched.add(key)  # set back at the end of the sequence
        else:
            self._last[key] = line
        return Step(line)

    def _memory(self) -> Action:
        """A search long enough to reach a small memory limit, under one."""
        option = next(o for o in self.options if o.name.lower() == "ramlimitmb")
        low = str(max(option.minimum or 1, self.rng.choice([1, 4, 16])))
        self._touched.add(option.name.lower())
        self._heavy = True
        setting = Step(f"setoption name {option.name} value {low}")
        go = self._go_step("go infinite", INFINITE)
        pause = Step("isready", pause_s=self.rng.uniform(1.0, 2.5))
        return (setting, go, pause, Step("stop", pause_s=self._delay()))

    def _during(self) -> list[Step]:
        """0-3 commands sent while a search runs (never a ``go``)."""
        makers: list[tuple[Callable[[], Step], int]] = [
            (lambda: Step("isready"), 35),
            (self._setoption, 15),
            (lambda: self._position_action()[0], 20),
            (lambda: self._newgame()[0], 5),
            (lambda: Step("ponderhit"), 10),
            (lambda: Step(self.rng.choice(GARBAGE)), 15),
        ]
        funcs, weights = zip(*makers, strict=True)
        steps = []
        for _ in range(self.rng.choice([0, 0, 1, 1, 2, 3])):
            step = self.rng.choices(funcs, weights)[0]()
            steps.append(Step(step.line, pause_s=self.rng.uniform(0, 0.03)))
        return steps

    def _delay(self) -> float:
        """The delay before a ``stop``: a third of the time none (the stop right behind its
        ``go``, a race with the search's start), else up to 0.12 s (the search running)."""
        return self.rng.choice([0.0, self.rng.uniform(0, 0.02), self.rng.uniform(0.02, 0.12)])

    # -- go -------------------------------------------------------------------------------------
    def _go_step(self, line: str, kind: str, after_hit: str | None = None) -> Step:
        moves = None
        if self.board is not None:
            legal = {m.uci() for m in self.board.legal_moves}
            words = line.split()
            chosen = set()
            if "searchmoves" in words:
                chosen = legal.intersection(words[words.index("searchmoves") + 1 :])
            moves = frozenset(chosen or legal or {"0000"})
        idle = kind != SHORT
        return Step(line, go=kind, after_hit=after_hit, moves=moves, idle_first=idle)

    def _go_line(self, endless: bool) -> tuple[str, str]:
        """A ``go`` with random limits, and its kind (``endless``: one that does not end
        soon by itself)."""
        rng = self.rng
        words: list[tuple[str, str]] = []
        roll = rng.random()
        if roll < 0.5:  # one small bound, maybe more
            bound = rng.choice(["nodes", "movetime", "clock"])
            fields = ["wtime", "btime"] if bound == "clock" else [bound]
            words += [(f, str(rng.randint(*SMALL[f]))) for f in fields]
        elif roll < 0.62:
            words.append(("depth", str(rng.randint(*SMALL["depth"]))))
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3]) if roll < 0.9 else 0):
            name = rng.choice(FIELDS)
            source = rng.random()
            if source < 0.5:
                value = str(rng.randint(*SMALL[name]))
            elif source < 0.62:
                value = str(rng.randint(*LARGE[name]))
            else:
                value = rng.choice(HOSTILE)
            words.append((name, value))
        if endless:
            if rng.random() < 0.7:
                words.append(("infinite", ""))
            else:
                words.append((rng.choice(["nodes", "movetime", "wtime", "btime"]), HUGE[0]))
        rng.shuffle(words)
        tokens = [f"{name} {value}".strip() for name, value in words]
        if rng.random() < 0.1:
            tokens.append("searchmoves " + " ".join(self._some_moves()))
        if rng.random() < 0.03:
            tokens.insert(rng.randint(0, len(tokens)), rng.choice(["bogus", "nodes5", "-1"]))
        kind = INFINITE if ("infinite", "") in words else self._kind(words)
        return " ".join(["go", *tokens]).rstrip(), kind

    def _kind(self, words: list[tuple[str, str]]) -> str:
        values: dict[str, list[str]] = {}
        for name, value in words:
            values.setdefault(name, []).append(value)
        for name, (low, high) in BOUNDS.items():
            given = values.get(name, [])
            if given and all(v.isdigit() and low <= int(v) <= high for v in given):
                return SHORT
        if self._heavy or "mate" in values:
            return LONG
        for name, given in values.items():
            if name != "infinite" and any(_beyond_small(name, v) for v in given):
                return LONG
        return SHORT

    def _some_moves(self) -> list[str]:
        legal = [m.uci() for m in self.board.legal_moves] if self.board is not None else []
        picked = self.rng.sample(legal, min(len(legal), self.rng.randint(1, 3)))
        if not picked or self.rng.random() < 0.3:
            picked.append(self.rng.choice(["e2e4", "a7a8q", "zz", "0000", "e1g1"]))
        return picked

    # -- setoption ------------------------------------------------------------------------------
    def _setoption(self) -> Step:
        rng = self.rng
        if not self.options or rng.random() < 0.08:
            return Step(
                rng.choice(
                    [
                        "setoption",
                        "setoption name",
                        "setoption value 5",
                        "setoption name NoSuchOption value 5",
                        "setoption name  value ",
                    ]
                )
            )
        option = rng.choice(self.options)
        value = self._option_value(option)
        name = option.name.lower() if rng.random() < 0.05 else option.name
        key = option.name.lower()
        if key in HEAVY:
            self._heavy = True
        if key in HEAVY or key in SHAPING:
            self._touched.add(key)
        else:
            self._last[key] = f"setoption name {name} value {value}".rstrip()
        if option.kind == "combo" and value in option.choices:
            self.values[option.name] = value
        return Step(f"setoption name {name} value {value}".rstrip())

    def _option_value(self, option: EngineOption) -> str:
        rng = self.rng
        if option.kind == "spin":
            low, high = option.minimum or 0, option.maximum or 0
            sane = [str(low), str(high), str(rng.randint(low, max(low, high)))]
            return rng.choice([*sane, str(low - 1), str(high + 1), *HOSTILE])
        if option.kind == "check":
            return rng.choice(["true", "false", "TRUE", "yes", "1", "", "maybe"])
        if option.kind == "combo":
            return rng.choice([*option.choices, "", "NoSuchChoice", option.default.upper()])
        if option.kind == "button":
            return ""
        return rng.choice([*HOSTILE, "1e308", "1e-308", "-1e308", "0.5", "2", "x" * 1000])

    def _start_known(self) -> bool:
        return all(
            self.values[o.name] == o.default
            for o in self.options
            if o.kind == "combo" and o.name.lower() in SHAPING
        )


def _beyond_small(name: str, value: str) -> bool:
    """A value a long search takes: a number past the short searches' range, or a huge one;
    not-numbers, zero and negatives are refused or clamped, and then the search is short."""
    if value in HUGE:
        return True
    if not value.isdigit():
        return False
    return int(value) > SMALL[name][1] and name not in ("movestogo",)
