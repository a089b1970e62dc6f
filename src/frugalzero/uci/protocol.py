"""The UCI protocol: reading commands, keeping the position, options, the clock, and a search
thread that can be stopped at once. What searches is a ``Searcher`` (``frugalzero.uci.searcher``
has ours); this module knows nothing of networks or trees.

Input is always read. The reading thread answers ``isready`` and ``stop`` itself, whatever
runs: ``readyok`` once every earlier command is done or waits behind a search, ``stop`` at
once, for the running search and any ``go`` read before it. The other commands go, in order,
to a worker thread; one that needs the engine idle (``position``, ``go``) lets a bounded search
finish first (GUIs wait for ``bestmove`` anyway; piped scripts may not), and stops an infinite
or pondering one (as ``ucinewgame`` stops any).

Every ``go`` ends in exactly one ``bestmove``. Anything malformed (an unknown command, a bad
FEN, an illegal move) is answered with ``info string …`` and ignored; a ``go``'s bad numbers
are dropped or clamped, with an ``info string`` each (``frugalzero.uci.limits``), and the
``go`` is searched. No search is unbounded unless told ``go infinite`` or ``go ponder`` (until
``stop`` or ``ponderhit``): ``go nodes 0`` searches one node, ``go mate N`` stops at the proven
mate or after ``MATE_NODES``, ``go mate 0`` is a plain search. A refused ``position`` (bad, or
one the searcher says it cannot search) leaves no position (a ``go`` then answers ``bestmove
0000`` with the reason, never a move of the previous position). The end of input lets the
commands read before it run, then answers a pending ``go`` before the engine exits, as
Stockfish does; ``quit`` ends at once, with nothing more written."""

from __future__ import annotations

import gc
import queue
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
from frugalzero.uci.timeman import TimeBudget

ENGINE_NAME = "frugalzero"
MATE_NODES = 1_000_000
"""Nodes a ``go mate N`` without another limit searches at most, where no mate is proven."""


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
    ) -> None:
        self.searcher = searcher
        self.inp = inp
        self.out = out
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
        self._quiet = False  # after quit: nothing more is written
        self.failed = False  # the searcher could not start: the engine stopped
        self._noted = False  # the searcher's note (which net plays) was said
        self.history: GameHistory | None = GameHistory(self._start_board())
        # the reader and the worker (see the module's docstring)
        self._commands: queue.Queue[tuple[int, str] | None] = queue.Queue()
        self._read = 0  # lines read: each command's number
        self._number = 0  # the number of the command the worker is handling
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
            if self._quiet:
                return
            self.out.write(line + "\n")
            self.out.flush()

    def info_string(self, text: str) -> None:
        self.send("info string " + " ".join(text.split()))

    # -- reading --------------------------------------------------------------------------------
    def run(self) -> None:
        """Python's cycle collector runs only between games (``ucinewgame``): left automatic,
        its pass over a search's new objects lands in a move's time, 30-60 ms after each
        search and over a second now and then (measured). Trees have no cycles, so reference
        counting frees them."""
        with PausedGC():  # no timed collections: the searches' own PausedGC sees it off
            worker = threading.Thread(target=self._work, name="uci-worker", daemon=True)
            worker.start()
            if self._read_input():  # quit (or a searcher that cannot search): end now
                with self._lock:
                    self._quiet = True  # UCI: no bestmove (nor anything else) after quit
                self._quitting = True
                self._stop_before(self._read + 1)
            self._commands.put(None)  # the worker runs what is queued, then ends the search
            worker.join()
            with self._lock:
                self._quiet = True
            self._finish_search()

    def _read_input(self) -> bool:
        """Read commands until ``quit`` (True) or the end of input (False)."""
        for raw in self.inp:
            line = raw.strip()
            if not line:
                continue
            self._read += 1
            try:
                if not self._take(line):
                    return True
            except Exception as exc:  # the engine must survive anything a GUI sends
                self.info_string(f"error: {exc!r} on {line!r}")
        return False

    def _take(self, line: str) -> bool:
        """Answer ``isready`` and ``stop`` here, queue the rest for the worker; False: quit."""
        command = line.split()[0]
        if command == "quit":
            return False
        if command == "isready":
            # every command before it done (or waiting behind a search) first: a searcher that
            # fails ends the engine, and 'uci' read before must still have had its 'uciok'
            with self._progress:
                self._progress.wait_for(lambda: self._behind or self._handled == self._queued)
            if not self._searcher_ready():
                return False
            self.send("readyok")
        elif command == "stop":
            self._stop_before(self._read)
        else:
            if command == "go" and not self._searcher_ready():
                return False
            with self._progress:
                self._queued += 1
            self._commands.put((self._read, line))
        return True

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
            self._number, line = item
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
        if wait_ready is None:
            return True
        try:
            wait_ready()
        except Exception as exc:
            self.info_string(f"error: {exc}; the engine stops")
            self.failed = True
            return False
        note = getattr(self.searcher, "note", None)
        if note and not self._noted:
            self.info_string(note)
            self._noted = True
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
            job.request = self._request(job, time.monotonic())
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

    def _request(self, job: _Go, clock_start: float) -> SearchRequest:
        """The search of ``job`` with its clock started at ``clock_start`` (now, or the
        ponderhit)."""
        limits = job.limits
        budget = time_budget(limits, job.history.board.turn, int(self.values["moveoverhead"]))
        if budget is not None:
            budget = budget.spent(time.monotonic() - clock_start)
        nodes, mate = limits.nodes, limits.mate
        bounded = limits.infinite or budget is not None or nodes is not None
        if not bounded and mate is not None:
            nodes = MATE_NODES  # where there is no mate, the search still ends
        elif not bounded:
            self.info_string("go without limits: searching the default node count")
        return SearchRequest(job.history, nodes, budget, limits.infinite, job.searchmoves, mate)

    def _search(self, job: _Go) -> None:
        line = job.answer or self._searched(job)
        if job.limits.ponder:
            self._ponder_end.wait()  # UCI: no bestmove while pondering (a failed search too)
        if job.limits.infinite:
            self._stop.wait()  # UCI: no bestmove before 'stop' in infinite mode
        self.send(line)

    def _searched(self, job: _Go) -> str:
        """The ``bestmove`` line of ``job``'s search (its first legal move if it failed)."""
        board = job.history.board
        try:
            best = self._ponder(job) if job.request is None else None
            if best is None:
                request = job.request or self._request(job, self._hit_at)
                best = self.searcher.search(request, self._stop, self.send)
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
        best = self.searcher.search(request, self._ponder_end, self.send)
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


def _is_uci(text: str) -> bool:
    try:
        chess.Move.from_uci(text)
        return True
    except ValueError:
        return False
