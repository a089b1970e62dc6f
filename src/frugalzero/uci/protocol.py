"""The UCI protocol: reading commands, keeping the position, options, the clock, and a search
thread that can be stopped at once. What searches is a ``Searcher`` (``frugalzero.uci.searcher``
has ours); this module knows nothing of networks or trees.

Input is always read. The reading thread answers ``isready`` and ``stop`` itself, whatever
runs: ``readyok`` once every earlier command is done or waits behind a search, ``stop`` at
once, for the running search and any ``go`` read before it. The other commands go, in order,
to a worker thread; one that needs the engine idle (``position``, ``go``) lets a bounded search
finish first (GUIs wait for ``bestmove`` anyway; piped scripts may not), and stops an infinite
or pondering one (as ``ucinewgame`` stops any).

A move's clock starts when its ``go`` is read (at ``ponderhit`` for ``go ponder``), before the
network has loaded or an earlier command is done, as the GUI's clock does. The searcher stops
itself within the budget (``frugalzero.uci.timeman``); a guard thread holds it to the wall
clock as well: at the budget's latest moment it answers ``bestmove`` itself with the main
line's first move of the search's last ``info`` (the first legal move before any) and stops
the search, so a busy machine never loses on time. How late the answers came
past their hard limit is remembered (``timeman.Lag``) and left on the clock of the next moves.

Every ``go`` ends in exactly one ``bestmove``. Anything malformed (an unknown command, a bad
FEN, an illegal move) is answered with ``info string …`` and ignored; a ``go``'s bad numbers
are dropped or clamped, with an ``info string`` each (``frugalzero.uci.limits``), and the
``go`` is searched. No search is unbounded unless told ``go infinite`` or ``go ponder`` (until
``stop`` or ``ponderhit``): ``go nodes 0`` searches one node, ``go mate N`` stops at the proven
mate or after ``MATE_NODES``, ``go mate 0`` is a plain search. A refused ``position`` (bad, or
one the searcher says it cannot search) leaves no position (a ``go`` then answers ``bestmove
0000`` with the reason, never a move of the previous position). ``go depth N`` stops once the
main line (the ``info`` line's ``depth``) is N moves long, or after ``MATE_NODES``.

Every command read before ``quit`` or the end of input is answered, as Stockfish does: the
commands run in order, and a search still running (or a ``go`` read before ``quit``) stops and
answers its ``bestmove``; then the engine exits with nothing more written. An output the GUI
closed ends the engine quietly: no more writes, one line on ``err``, the searches stopped.
What the engine echoes of its input in an ``info string`` is cut to ``INFO_MAX``
characters."""

from __future__ import annotations

import gc
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TextIO

import chess

from frugalzero import _native
from frugalzero.chess.history import GameHistory
from frugalzero.chess.positions import ODDS_SQUARES, odds_board
from frugalzero.runtime.collector import PausedGC
from frugalzero.uci.limits import (  # noqa: F401 - the protocol's names, re-exported
    MAX_CLOCK_MS,
    NODES_MAX,
    GoLimits,
    parse_go,
    time_budget,
)
from frugalzero.uci.timeman import Lag, TimeBudget

ENGINE_NAME = "frugalzero"
MATE_NODES = 1_000_000
"""Nodes a ``go mate N`` or ``go depth N`` without another limit searches at most, where no
mate is proven or the main line stays shorter."""
LATE_NOTE = "the search did not end in time (a busy machine?)"
"""What the guard says before it answers for a search past the clock's latest moment."""
INFO_MAX = 400
"""The longest ``info string`` the engine writes of its own: a longer one (a 2 MB garbage
token echoed back) keeps its start and end around the count of characters left out."""


def parse_position(tokens: list[str], start: chess.Board) -> tuple[chess.Board, list[chess.Move]]:
    """Root board and moves of ``position``; ValueError says what is wrong."""
    if not tokens:
        raise ValueError("position: expected startpos or fen")
    if tokens[0] == "startpos":
        board, rest = start.copy(stack=False), tokens[1:]
    elif tokens[0] == "fen":
        end = tokens.index("moves") if "moves" in tokens else len(tokens)
        fen = " ".join(tokens[1:end])
        try:
            board = chess.Board(fen)
        except ValueError as exc:
            raise ValueError(f"position fen: bad FEN {fen!r} ({exc})") from None
        _clean(board)
        if not board.is_valid():
            raise ValueError(f"position fen: impossible position {fen!r} ({board.status()!r})")
        rest = tokens[end:]
    else:
        raise ValueError(f"position: expected startpos or fen, got {tokens[0]!r}")
    moves: list[chess.Move] = []
    if rest:
        if rest[0] != "moves":
            raise ValueError(f"position: expected 'moves', got {rest[0]!r}")
        probe = board.copy(stack=False)
        for uci in rest[1:]:
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                raise ValueError(f"position: {uci!r} is not a move") from None
            if move not in probe.legal_moves:
                raise ValueError(f"position: illegal move {uci} in {probe.fen()}")
            probe.push(move)
            moves.append(move)
    return board, moves


def _clean(board: chess.Board) -> None:
    """What python-chess and Stockfish ignore in a FEN, ignored here too: castling rights
    without their king or rook, an en-passant square no pawn could have made, and move
    counters past what the native core counts (``MAX_CLOCK``: the search would refuse the
    position)."""
    board.castling_rights = board.clean_castling_rights()
    if board.status() & chess.STATUS_INVALID_EP_SQUARE:
        board.ep_square = None
    board.halfmove_clock = min(board.halfmove_clock, _native.MAX_CLOCK)
    board.fullmove_number = min(board.fullmove_number, _native.MAX_CLOCK)


@dataclass
class SearchRequest:
    """What the engine asks a searcher for one ``go``."""

    history: GameHistory
    nodes: int | None
    time: TimeBudget | None
    """Soft and hard seconds for this move, counted from when the search starts."""
    infinite: bool
    searchmoves: list[chess.Move] = field(default_factory=list)
    """Search only these root moves (empty: every move)."""
    mate: int | None = None
    """``go mate N``: search until a mate is proven (or another limit ends the search)."""
    depth: int | None = None
    """``go depth N``: stop once the main line is ``depth`` moves long (``info``'s ``depth``;
    or another limit ends the search)."""


class BestMove(NamedTuple):
    """A searcher's answer: the move to play and the reply it expects (``bestmove … ponder``)."""

    move: chess.Move
    ponder: chess.Move | None = None


class Searcher(Protocol):
    """Finds a move for ``request`` until its limits, ``stop`` or ``request.infinite`` ends."""

    def search(
        self, request: SearchRequest, stop: threading.Event, info: Callable[[str], None]
    ) -> BestMove: ...

    def new_game(self) -> None: ...

    def set_option(self, name: str, value: str) -> None: ...

    # optional: ``wait_ready()`` blocks until the searcher can search ('isready' calls it);
    # ``refusal(history) -> str | None`` names a position it cannot search (``position``
    # refuses it, as it refuses a bad FEN)


@dataclass
class _Go:
    """One ``go``: the position, its limits and the legal ``searchmoves``; ``request`` is its
    search, or None while it ponders (the clock starts at ``ponderhit``); ``answer`` its
    ``bestmove`` line when there is nothing to search (no position, no legal move)."""

    history: GameHistory
    limits: GoLimits
    searchmoves: list[chess.Move]
    request: SearchRequest | None
    answer: str | None = None
    clock_start: float = 0.0
    """When this move's clock started (``time.monotonic``): the ``go`` read, or ``ponderhit``."""
    planned: TimeBudget | None = None
    """The move's budget counted from ``clock_start`` (None: no clock, no movetime)."""
    seen: chess.Move | None = None
    """The main line's first move in the search's last ``info`` line: the guard's answer."""
    answered: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    """Set once its ``bestmove`` is written (by the search, or the guard)."""


@dataclass
class Option:
    name: str
    kind: str  # spin, check, combo, string
    default: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()

    def line(self) -> str:
        text = f"option name {self.name} type {self.kind} default {self.default}"
        if self.kind == "spin":
            text += f" min {self.minimum} max {self.maximum}"
        for choice in self.choices:
            text += f" var {choice}"
        return text

    def check(self, value: str) -> str:
        if self.kind == "spin":
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"{self.name} must be a whole number") from None
            if not (self.minimum or 0) <= number <= (self.maximum or number):
                raise ValueError(f"{self.name} must be {self.minimum}..{self.maximum}")
            return str(number)
        if self.kind == "check":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"{self.name} must be true or false")
            return value.lower()
        if self.kind == "combo" and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}")
        return value


# options the engine handles itself; a searcher may add its own (nodes, batch, temperature…)
ENGINE_OPTIONS = [
    Option("MoveOverhead", "spin", "100", 0, 5000),
    Option("Odds", "combo", "none", choices=("none", *ODDS_SQUARES)),
    Option("OddsGiver", "combo", "white", choices=("white", "black")),
    Option("Ponder", "check", "false"),  # GUIs send it before they ponder; go ponder works anyway
    Option("UCI_Chess960", "check", "false"),  # refused: the networks know standard chess only
]


class UciEngine:
    """The protocol loop. ``run`` reads ``inp`` until ``quit`` or end of input."""

    def __init__(
        self,
        searcher: Searcher,
        inp: TextIO,
        out: TextIO,
        extra_options: list[Option] | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.searcher = searcher
        self.inp = inp
        self.out = out
        self.err = err if err is not None else sys.stderr
        self.output_closed = False  # the GUI closed our output: the engine ended quietly
        self.options = {o.name.lower(): o for o in ENGINE_OPTIONS + list(extra_options or [])}
        self.values = {name: o.default for name, o in self.options.items()}
        self._lock = threading.Lock()
        self._stop = threading.Event()  # stop or quit: the search ends now
        self._ponder_end = threading.Event()  # ponderhit or stop: pondering ends
        self._thread: threading.Thread | None = None
        self._job: _Go | None = None
        self._infinite = False  # the search runs until stop (go infinite, or pondering)
        self._pondering = False
        self._hit_at = 0.0  # when ponderhit came
        self._quiet = False  # after the end (or a closed output): nothing more is written
        self.failed = False  # the searcher could not start: the engine stopped
        self._noted = False  # the searcher was ready once: its note said, the heap frozen
        self.history: GameHistory | None = GameHistory(self._start_board())
        # the reader and the worker (see the module's docstring)
        self._commands: queue.Queue[tuple[int, str, float] | None] = queue.Queue()
        self._read = 0  # lines read: each command's number
        self._number = 0  # the number of the command the worker is handling
        self._read_at = 0.0  # ... and when it was read (a go's clock starts then)
        self._ended = threading.Event()  # quit, the end of input, a failure, a closed output
        self._lag = Lag()  # how late timed answers came past their hard limit lately
        self._stopped_before = 0  # a go read before this line starts stopped (a stop came)
        self._quitting = False  # the worker drops what is left
        self._start_lock = threading.Lock()  # a search's start against a stop
        self._progress = threading.Condition()
        self._queued = 0  # commands given to the worker
        self._handled = 0  # ... and done by it
        self._behind = False  # the worker waits for a search to end

    # -- output ---------------------------------------------------------------------------------
    def send(self, line: str) -> None:
        with self._lock:
            lost = self._write(line)
        if lost:
            self._lose_output()

    def _write(self, line: str) -> bool:
        """Write ``line`` (holding ``_lock``); True when this write found the output closed."""
        if self._quiet:
            return False
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except UnicodeError:  # a character the output cannot encode: the line is dropped
            return False
        except (OSError, ValueError):  # BrokenPipeError; ValueError: a closed file
            self._quiet = self.output_closed = True
            _discard_output(self.out)
            return True
        return False

    def _lose_output(self) -> None:
        """The GUI closed our output: one line on ``err``, every search stopped, the commands
        left dropped, and ``run`` ends."""
        self._quitting = True
        self._stop_before(sys.maxsize)
        try:
            self.err.write(f"{ENGINE_NAME} uci: the output was closed; the engine stops\n")
            self.err.flush()
        except (OSError, ValueError):
            pass
        self._ended.set()

    def info_string(self, text: str) -> None:
        """``info string`` with ``text`` on one line, cut to ``INFO_MAX`` characters (it may
        echo input) and with what the output could not encode replaced."""
        text = " ".join(text.split())
        if len(text) > INFO_MAX:
            head, tail = INFO_MAX * 3 // 5, INFO_MAX // 4
            text = f"{text[:head]} …({len(text):,} characters)… {text[-tail:]}"
        self.send("info string " + text.encode("utf-8", "replace").decode("utf-8"))

    # -- reading --------------------------------------------------------------------------------
    def run(self) -> None:
        """Python's cycle collector runs only between games (``ucinewgame``): left automatic,
        its pass over a search's new objects lands in a move's time, 30-60 ms after each
        search and over a second now and then (measured). Trees have no cycles, so reference
        counting frees them.

        The input is read on a thread of its own, so that a closed output ends the engine
        even while its input stays open."""
        with PausedGC():  # no timed collections: the searches' own PausedGC sees it off
            worker = threading.Thread(target=self._work, name="uci-worker", daemon=True)
            worker.start()
            reader = threading.Thread(target=self._read_input, name="uci-reader", daemon=True)
            reader.start()
            self._ended.wait()
            self._commands.put(None)  # the worker runs what is queued, then ends the search
            worker.join()
            with self._lock:
                self._quiet = True
            self._finish_search()
        if self._noted:
            gc.unfreeze()  # the engine's heap is the process's again (tests run many engines)

    def _read_input(self) -> None:
        """Read commands until ``quit``, the end of input or a searcher that cannot search."""
        reconfigure = getattr(self.inp, "reconfigure", None)
        if reconfigure is not None:  # bytes that are not UTF-8 are garbage, not the end
            try:
                reconfigure(errors="replace")
            except (OSError, ValueError):
                pass
        try:
            for raw in self.inp:
                if self._ended.is_set():  # the output was closed
                    return
                line = raw.strip()
                if not line:
                    continue
                self._read += 1
                try:
                    if not self._take(line, time.monotonic()):
                        return
                except Exception as exc:  # the engine must survive anything a GUI sends
                    self.info_string(f"error: {exc!r} on {line!r}")
        except (OSError, ValueError):  # the input is gone: as its end
            pass
        finally:
            self._ended.set()

    def _take(self, line: str, read_at: float) -> bool:
        """Answer ``isready`` and ``stop`` here, queue the rest for the worker; False: the
        end (``quit``, or a searcher that cannot search)."""
        command = line.split()[0]
        if command == "quit":  # what came before is answered: a search stops and answers
            self._stop_before(self._read)
            return False
        if command == "isready":
            # every command before it done (or waiting behind a search) first: a searcher that
            # fails ends the engine, and 'uci' read before must still have had its 'uciok'
            with self._progress:
                self._progress.wait_for(lambda: self._behind or self._handled == self._queued)
            if not self._searcher_ready():
                return self._fail()
            self.send("readyok")
        elif command == "stop":
            self._stop_before(self._read)
        else:
            if command == "go" and not self._searcher_ready():
                return self._fail()
            with self._progress:
                self._queued += 1
            self._commands.put((self._read, line, read_at))
        return True

    def _fail(self) -> bool:
        """The searcher cannot search: the engine stops, with nothing more written (a GUI or
        a match then sees a broken engine)."""
        with self._lock:
            self._quiet = True
        self._quitting = True
        self._stop_before(sys.maxsize)
        return False

    def _stop_before(self, number: int) -> None:
        """``stop`` read as line ``number``: the running search ends now, and so does any
        ``go`` read before it that the worker has not started yet (each still answers)."""
        with self._start_lock:
            self._stopped_before = number
            self._stop.set()
            self._ponder_end.set()

    def _work(self) -> None:
        """The worker: the queued commands in order, then (end of input) the pending go."""
        while (item := self._commands.get()) is not None:
            self._number, line, self._read_at = item
            try:
                if not self._quitting:
                    self.handle(line)
            except Exception as exc:  # the engine must survive anything a GUI sends
                self.info_string(f"error: {exc!r} on {line!r}")
            finally:
                with self._progress:
                    self._handled += 1
                    self._progress.notify_all()
        self._finish_search()

    # -- commands -------------------------------------------------------------------------------
    def handle(self, line: str) -> None:
        """Handle one command of the worker's (``isready``, ``stop`` and ``quit`` are the
        reader's)."""
        command, *args = line.split()
        if command == "uci":
            self.send(f"id name {ENGINE_NAME}")
            self.send("id author the frugalzero developers")
            for option in self.options.values():
                self.send(option.line())
            self.send("uciok")
        elif command == "ucinewgame":
            self._finish_search()
            self.searcher.new_game()
            self.history = GameHistory(self._start_board())
            gc.collect()  # no clock is running between games
        elif command == "setoption":
            self._set_option(args)
        elif command == "position":
            self._position(args)
        elif command == "go":
            self._go(args)
        elif command == "ponderhit":
            self._ponderhit()
        elif command in ("debug", "register"):
            pass
        else:
            self.info_string(f"unknown command {command!r} ignored")

    def _searcher_ready(self) -> bool:
        """Wait for the searcher (the network loads in the background after 'uci'). One that
        cannot search, its network unreadable, ends the engine with the reason: a GUI or a
        match then sees a broken engine, not one that plays its first legal move."""
        wait_ready = getattr(self.searcher, "wait_ready", None)
        if wait_ready is not None:
            try:
                wait_ready()
            except Exception as exc:
                self.info_string(f"error: {exc}; the engine stops")
                self.failed = True
                return False
        if not self._noted:
            self._noted = True
            # what exists once the engine can search (torch, the network: ~170,000 objects)
            # lives as long as the engine: the collections between games skip it, which took
            # a ucinewgame's collection, and the readyok behind it, from 0.5 s to nothing
            gc.freeze()
            note = getattr(self.searcher, "note", None)
            if note:
                self.info_string(note)
        return True

    def _start_board(self) -> chess.Board:
        odds = self.values.get("odds", "none")
        if odds == "none":
            return chess.Board()
        giver = chess.WHITE if self.values.get("oddsgiver", "white") == "white" else chess.BLACK
        return odds_board(odds, giver)

    def _set_option(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            self.info_string("setoption: expected 'name'")
            return
        if "value" in args:
            split = args.index("value")
            name, value = " ".join(args[1:split]), " ".join(args[split + 1 :])
        else:
            name, value = " ".join(args[1:]), ""
        option = self.options.get(name.lower())
        if option is None:
            self.info_string(f"setoption: unknown option {name!r} ignored")
            return
        try:
            value = option.check(value)
        except ValueError as exc:
            self.info_string(f"setoption: {exc}; kept {self.values[option.name.lower()]}")
            return
        if option.name == "UCI_Chess960" and value == "true":
            self.info_string("UCI_Chess960 is not supported")
            return
        if option not in ENGINE_OPTIONS:
            try:
                self.searcher.set_option(option.name, value)
            except ValueError as exc:  # a value the searcher cannot use, e.g. not a number
                kept = self.values[option.name.lower()]
                self.info_string(f"setoption: {option.name} {exc}; kept {kept}")
                return
        self.values[option.name.lower()] = value

    def _position(self, args: list[str]) -> None:
        self._wait_search()
        try:
            board, moves = parse_position(args, self._start_board())
        except ValueError as exc:  # the GUI's game is not the last position either
            self.history = None
            self.info_string(f"{exc}; no position until the next valid one")
            return
        history = GameHistory(board)
        for move in moves:
            history.push(move)
        refusal = getattr(self.searcher, "refusal", None)
        reason = refusal(history) if refusal is not None else None
        if reason is not None:  # refused like a bad FEN: go answers bestmove 0000, saying why
            self.history = None
            self.info_string(f"{reason}; no position until the next valid one")
            return
        self.history = history

    def _go(self, args: list[str]) -> None:
        self._wait_search()
        limits = parse_go(args)
        for note in limits.notes:
            self.info_string(note)
        history = self.history or GameHistory(self._start_board())
        legal = list(history.board.legal_moves)
        if self.history is None or not legal:  # bestmove 0000, after stop for go infinite
            problem = "go: no position (the last position command was refused)"
            self.info_string(problem if self.history is None else "no legal moves in this position")
            if limits.infinite or limits.ponder:
                self._start(_Go(history, limits, [], None, "bestmove 0000"))
            else:
                self.send("bestmove 0000")
            return
        searchmoves = [
            chess.Move.from_uci(u)
            for u in limits.searchmoves
            if _is_uci(u) and chess.Move.from_uci(u) in legal
        ]
        if limits.searchmoves and not searchmoves:
            self.info_string("go searchmoves: no legal move among them; searching every move")
        job = _Go(history.copy(), limits, searchmoves, None)
        if not limits.ponder:
            job.request = self._request(job, self._read_at)
        self._start(job)

    def _start(self, job: _Go) -> None:
        """Run ``job`` on the search thread; stopped at once if a stop came after its go."""
        limits = job.limits
        with self._start_lock:
            self._stop.clear()
            self._ponder_end.clear()
            if self._number < self._stopped_before:  # a stop came after it: ends at once
                self._stop.set()
                self._ponder_end.set()
            self._job = job
            self._pondering = limits.ponder
            self._infinite = limits.infinite or limits.ponder
            self._thread = threading.Thread(target=self._search, args=(job,), daemon=True)
            self._thread.start()
        self._guard(job)

    def _request(self, job: _Go, clock_start: float) -> SearchRequest:
        """The search of ``job`` with its clock started at ``clock_start`` (the ``go`` read,
        or the ponderhit): what went by since is spent. The overhead left on the clock is
        ``MoveOverhead`` and the lateness of the last answers (``Lag``)."""
        limits = job.limits
        overhead = int(self.values["moveoverhead"]) + self._lag.ms
        planned = time_budget(limits, job.history.board.turn, overhead)
        job.clock_start, job.planned = clock_start, planned
        budget = None if planned is None else planned.spent(time.monotonic() - clock_start)
        nodes, mate, depth = limits.nodes, limits.mate, limits.depth
        bounded = limits.infinite or budget is not None or nodes is not None
        if not bounded and (mate is not None or depth is not None):
            nodes = MATE_NODES  # where there is no mate (or the line stays short), it ends
        elif not bounded:
            self.info_string("go without limits: searching the default node count")
        return SearchRequest(
            job.history, nodes, budget, limits.infinite, job.searchmoves, mate, depth
        )

    def _guard(self, job: _Go) -> None:
        """Hold ``job``'s search to the wall clock from when its clock started: at the budget's
        latest moment, answer for it and stop it (a guard thread; none without a clock or
        movetime, nor for ``go infinite``). The hard limit is the searcher's own (it searches
        one move however short the clock, as Stockfish completes depth 1): a ``stop`` there
        would end a search that has not searched a move."""
        planned = job.planned
        if job.request is None or planned is None or job.request.infinite:
            return

        def watch() -> None:
            if job.done.wait(max(0.0, job.clock_start + planned.answer_by - time.monotonic())):
                return
            move = self._best_seen(job).uci()
            self._answer(job, f"bestmove {move}", f"info string {LATE_NOTE}; playing {move}")
            with self._start_lock:  # and the search stops (its own answer is dropped)
                if self._job is job:
                    self._stop.set()

        threading.Thread(target=watch, name="uci-clock", daemon=True).start()

    def _best_seen(self, job: _Go) -> chess.Move:
        """The move the guard plays: the main line's first of the search's last ``info``, else
        the first of ``searchmoves`` or of the legal moves."""
        moves = job.searchmoves or list(job.history.board.legal_moves)
        return job.seen if job.seen in moves else moves[0]

    def _answer(self, job: _Go, line: str, note: str | None = None) -> None:
        """Write ``job``'s one ``bestmove`` (after ``note``), unless it was written already;
        under a clock, how late it came past the hard limit is remembered."""
        with self._lock:
            if job.answered:
                return
            job.answered = True
            lost = (note is not None and self._write(note)) or self._write(line)
            if job.planned is not None:  # before the search's thread ends: the next go sees it
                self._lag.observe(time.monotonic() - job.clock_start - job.planned.hard)
        job.done.set()
        if lost:
            self._lose_output()

    def _info(self, job: _Go, line: str) -> None:
        """The searcher's ``info`` line for ``job``: written (none after its ``bestmove``),
        its main line's first move kept for the guard."""
        move = _main_line_move(line)
        with self._lock:
            if job.answered:
                return
            if move is not None:
                job.seen = move
            lost = self._write(line)
        if lost:
            self._lose_output()

    def _search(self, job: _Go) -> None:
        line = job.answer or self._searched(job)
        if job.limits.ponder:
            self._ponder_end.wait()  # UCI: no bestmove while pondering (a failed search too)
        if job.limits.infinite:
            self._stop.wait()  # UCI: no bestmove before 'stop' in infinite mode
        self._answer(job, line)

    def _searched(self, job: _Go) -> str:
        """The ``bestmove`` line of ``job``'s search (its first legal move if it failed)."""
        board = job.history.board
        try:
            best = self._ponder(job) if job.request is None else None
            if best is None:
                if job.request is None:  # ponderhit: the clock runs from it
                    job.request = self._request(job, self._hit_at)
                    self._guard(job)
                best = self.searcher.search(job.request, self._stop, lambda t: self._info(job, t))
            if best.move not in board.legal_moves:
                raise RuntimeError(f"searcher returned illegal move {best.move}")
        except Exception as exc:  # never leave the GUI without a bestmove
            self.info_string(f"search failed: {exc!r}; playing the first legal move")
            best = BestMove(next(iter(board.legal_moves)))
        return _bestmove_line(board, best)

    def _ponder(self, job: _Go) -> BestMove | None:
        """``go ponder``: search the predicted position without limits until ``ponderhit`` or
        ``stop`` (each sets ``_ponder_end``). After stop: its move, answered at once; after
        ponderhit: None, and the timed search goes on from the same tree, so the time spent
        pondering is a bonus."""
        request = SearchRequest(job.history, None, None, True, job.searchmoves, job.limits.mate)
        best = self.searcher.search(request, self._ponder_end, lambda t: self._info(job, t))
        self._ponder_end.wait()  # a search that ended by itself (a proven root) still ponders
        return best if self._stop.is_set() else None

    def _ponderhit(self) -> None:
        """The predicted move was played: the pondering search becomes the timed search of
        the ``go ponder`` limits, its clock starting now."""
        if self._thread is None or not self._pondering or self._job is None:
            return
        self._hit_at = time.monotonic()
        self._pondering = False
        self._infinite = self._job.limits.infinite
        self._ponder_end.set()

    def _wait_search(self) -> None:
        """A command that needs the engine idle lets a bounded search finish and stops an
        infinite one; meanwhile ``isready`` is answered and ``stop`` read (the reader)."""
        thread = self._thread
        if thread is None:
            return
        if self._infinite:
            self._finish_search()
            return
        with self._behind_search():
            thread.join()
        self._thread = None

    def _finish_search(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._ponder_end.set()
            with self._behind_search():
                thread.join()
        self._pondering = False

    @contextmanager
    def _behind_search(self) -> Iterator[None]:
        """The worker waits for a search to end: ``isready`` need not wait for it."""
        with self._progress:
            self._behind = True
            self._progress.notify_all()
        try:
            yield
        finally:
            with self._progress:
                self._behind = False


def _bestmove_line(board: chess.Board, best: BestMove) -> str:
    """``bestmove X``, with ``ponder Y`` when the searcher expects a legal reply ``Y``."""
    line = f"bestmove {best.move.uci()}"
    if best.ponder is not None:
        after = board.copy(stack=False)
        after.push(best.move)
        if best.ponder in after.legal_moves:
            line += f" ponder {best.ponder.uci()}"
    return line


def _main_line_move(line: str) -> chess.Move | None:
    """The first move of an ``info … pv …`` line's main line (``multipv 1``, or none given)."""
    words = line.split()
    if words[:1] != ["info"] or "pv" not in words or "string" in words[:2]:
        return None
    if "multipv" in words:
        at = words.index("multipv")
        if words[at + 1 : at + 2] != ["1"]:
            return None
    at = words.index("pv")
    try:
        return chess.Move.from_uci(words[at + 1]) if at + 1 < len(words) else None
    except ValueError:
        return None


def _discard_output(out: TextIO) -> None:
    """Point a closed output's descriptor at /dev/null: what its buffer still holds is then
    flushed there at exit, not reported as a second BrokenPipeError."""
    try:
        fd = out.fileno()
    except (OSError, ValueError, AttributeError):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


def _is_uci(text: str) -> bool:
    try:
        chess.Move.from_uci(text)
        return True
    except ValueError:
        return False
