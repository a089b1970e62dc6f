"""Players: one per game seat, driven by the match runner's event loop.

A UCI engine gets its own process per seat (python-chess's asyncio client), so games run in
parallel without sharing engine state; a ``net:`` engine under a clock is one too (our own
``frugalzero uci``). A player under a clock is handed both clocks with each move. Nothing the
engine does can stall the runner or grow its memory: every wait for an answer (``uciok``,
``readyok``, ``bestmove``) has a timeout, and a line of output has a length bound. A move that
does not come back in time, a process that dies, an illegal move or an overlong line raises
``PlayerFailure``: the runner scores the game as a loss for that side, kills the engine and
starts it again before its next game. ``random`` plays a uniformly random legal move from a
per-game seed. Seats of ``net`` engines with a node limit (``frugalzero.evaluate.netplayer``)
are players built on the types here; the match runner seats them all (``make_players``).

Every UCI engine runs under a keeper (``frugalzero.evaluate.keeper``, a small process of its
own): the keeper is the engine's child subreaper on Linux, so the runner owns the engine and
every process it starts, however it detaches, and ends them all when the engine ends (its leader
exiting is a crash at once, even when a child still holds its stdout) or when the runner ends
it (SIGTERM to the keeper). The runner signals a process only by its pid and never through the
transport's ``Popen``, whose ``poll`` would reap the process behind asyncio's child watcher.

What an engine writes that we cannot use (a line that is no UCI answer, ``info`` we cannot
parse, bytes that are not UTF-8) is counted per engine (``OutputNotes``): the first line of
each kind is logged, the rest only counted, and the match summarises them, instead of a
warning per line.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import random
import signal
import sys
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import chess
import chess.engine

from frugalzero.errors import UserError
from frugalzero.evaluate.keeper import CANNOT_START
from frugalzero.evaluate.specs import EngineSpec, uci_command
from frugalzero.values import score_cp

T = TypeVar("T")

MAX_LINE = 1 << 20
"""Bytes in one line of engine output: real UCI lines are under a few kB, so a longer one is a
broken engine, and keeping it whole would let it take all our memory."""
HANG_MARGIN = 5.0
"""Seconds past a timed move's time before a silent engine has hung (``MatchConfig``)."""
STDERR_LINES = 20
"""Lines of an engine's stderr passed on to our log (python-chess logs each as a warning):
enough for its error, not a flood on the user's terminal."""
QUIT_SECONDS = 2.0
"""How long a healthy engine may take to leave after ``quit`` before it is killed."""
REAP_SECONDS = 10.0
"""How long an engine's keeper, told to end it, may take to be gone with everything it kept:
at once, unless the machine is stalled (or a process is stuck in the kernel, when we give up
on it)."""
KEEPER = Path(__file__).with_name("keeper.py")


def kept(argv: list[str]) -> list[str]:
    """``argv`` run by a keeper of its own (``frugalzero.evaluate.keeper``: the stdlib alone,
    so ``-I -S``); on a system without POSIX processes, ``argv`` itself."""
    if os.name != "posix":
        return argv
    return [sys.executable, "-I", "-S", str(KEEPER), str(os.getpid()), *argv]


def _signal(transport: asyncio.SubprocessTransport, signum: int, group: bool = False) -> None:
    """Send ``signum`` to the transport's process (its group with ``group``) while asyncio
    has not reaped it, so its pid is still its own. Not ``transport.send_signal``: Popen polls
    first, and a poll that reaps the process leaves asyncio's watcher waiting on a pid that is
    gone ("Unknown child process pid ..., will report returncode 255")."""
    if transport.get_returncode() is not None:
        return
    with contextlib.suppress(OSError):
        if group:
            os.killpg(transport.get_pid(), signum)
        else:
            os.kill(transport.get_pid(), signum)


def unusable_lines(name: str, counts: Counter[str]) -> str:
    """One line for the end of a match: how many lines of each kind engine ``name`` wrote
    that we could not use (``OutputNotes.counts``)."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.most_common())
    return (
        f"engine {name!r} wrote {sum(counts.values())} lines we could not use ({kinds}); "
        "the first of each kind was shown"
    )


class OutputNotes:
    """What one engine (every seat and restart of it in a match) wrote that we could not use,
    lines counted by kind: the first line of a kind is logged, the rest only counted."""

    KINDS = {
        "Unexpected engine output": "unexpected line",
        "Exception parsing": "unparsable info",
        "Unknown score kind": "unparsable info",
    }

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def kind(self, message: object) -> str:
        text = str(message)
        return next((k for m, k in self.KINDS.items() if m in text), "other")

    def count(self, kind: str) -> bool:
        """Count one line of ``kind``: True when it is the first, to be shown."""
        self.counts[kind] += 1
        return self.counts[kind] == 1


_READING: contextvars.ContextVar[BoundedUci | None] = contextvars.ContextVar(
    "frugalzero_uci_reading", default=None
)
"""The engine whose line python-chess is handling: its warnings are that engine's."""


class _PerEngine(logging.Filter):
    """Counts python-chess's warnings about a line an engine wrote, in that engine's notes,
    and lets through only the first of each kind."""

    def filter(self, record: logging.LogRecord) -> bool:
        reader = _READING.get()
        if reader is None:
            return True
        return reader.note(reader.notes.kind(record.msg), record)


chess.engine.LOGGER.addFilter(_PerEngine())


class SpecMistake(UserError):
    """An engine refused an option of its spec: starting it again would not help."""


class CannotStart(UserError):
    """The engine's executable could not be run (its keeper said why): nor would it again."""


class StartHang(UserError):
    """An engine did not answer its handshake in time: starting it again would only wait as
    long again, so the match ends with this line instead."""


class PlayerFailure(Exception):
    """The engine lost the game by failing: ``kind`` is hang, crash, illegal move, bad output
    or error; ``detail`` says what it did."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


@dataclass
class Played:
    """A move and what the engine said about it."""

    move: chess.Move
    score: int | None = None
    """Centipawns for the side that moved (mates as +-100000); None if not reported."""
    depth: int | None = None
    nodes: int | None = None


class Player:
    """The interface the match runner drives; subclasses fill in the engine."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.name = spec.name

    async def start(self) -> None:
        pass

    async def new_game(self, seed: int) -> None:
        pass

    async def play(self, board: chess.Board, clock: chess.engine.Limit | None = None) -> Played:
        """The move at ``board``; ``clock`` holds both clocks when this player has one."""
        raise NotImplementedError

    async def restart(self) -> None:
        await self.close()
        await self.start()

    async def abandon(self) -> None:
        """Stop at once after a failure: a broken engine is not asked to quit."""
        await self.close()

    async def close(self) -> None:
        pass


class RandomPlayer(Player):
    """A uniformly random legal move: the floor of every rating list."""

    def __init__(self, spec: EngineSpec) -> None:
        super().__init__(spec)
        self._base = int(spec.params.get("seed", 0))
        self._rng = random.Random(self._base)

    async def new_game(self, seed: int) -> None:
        self._rng = random.Random(self._base * 1_000_003 + seed)

    async def play(self, board: chess.Board, clock: chess.engine.Limit | None = None) -> Played:
        return Played(self._rng.choice(list(board.legal_moves)))


class BoundedUci(chess.engine.UciProtocol):
    """python-chess's UCI client reading its engine in bounded memory and linear time: a line
    over ``MAX_LINE`` bytes kills the engine, ``fault`` saying why, instead of being kept
    whole; a read is split into lines once (python-chess copies the rest of the buffer per
    line, which makes a flood of ``info`` quadratic); only the first ``STDERR_LINES`` lines
    of stderr are logged."""

    def __init__(self, label: str = "", notes: OutputNotes | None = None) -> None:
        super().__init__()
        self.label = label
        self.notes = notes if notes is not None else OutputNotes()
        self.fault = ""
        self.cannot_start = ""
        """Why the keeper could not start the engine (its line on stderr), if it could not."""
        self.stderr_lines = 0
        self._line_kinds: set[str] = set()

    def __repr__(self) -> str:
        return f"engine {self.label!r}" if self.label else super().__repr__()

    def note(self, kind: str, record: logging.LogRecord | None = None) -> bool:
        """Count the line being read under ``kind`` (once a line); True for the first of its
        kind, which is shown (``record`` then says the rest are counted)."""
        if kind in self._line_kinds:
            return False
        self._line_kinds.add(kind)
        first = self.notes.count(kind)
        if first and record is not None and isinstance(record.msg, str):
            args = record.args if isinstance(record.args, tuple) else ()
            named = "" if any(a is self for a in args) else repr(self).replace("%", "%%") + ": "
            record.msg = f"{named}{record.msg} (lines like it are counted, not shown)"
        return first

    def error_line_received(self, line: str) -> None:
        if line.startswith(CANNOT_START):  # the keeper's, not the engine's
            self.cannot_start = line.removeprefix(CANNOT_START)
            return
        self.stderr_lines += 1
        if self.stderr_lines <= STDERR_LINES:
            super().error_line_received(line)
        elif self.stderr_lines == STDERR_LINES + 1:
            chess.engine.LOGGER.warning("%s: stderr >> (more lines not shown)", self)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if self.fault:
            return  # it is being killed: nothing more it says counts
        chunk = data.encode() if isinstance(data, str) else data
        buffer = self.buffer[fd]
        buffer.extend(chunk)
        if b"\n" in chunk:
            *lines, rest = buffer.split(b"\n")
            self.buffer[fd] = buffer = bytearray(rest)
            for line in lines:
                if len(line) > MAX_LINE:
                    return self._overflow(fd)
                self._take(fd, line.removesuffix(b"\r"))
        if len(buffer) > MAX_LINE:
            self._overflow(fd)

    def _take(self, fd: int, line: bytearray) -> None:
        self._line_kinds = set()
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            if self.note("not UTF-8"):
                chess.engine.LOGGER.warning(
                    "%s: >> %r (%s; lines like it are counted, not shown)", self, line[:200], err
                )
            return
        if fd != 1:
            self.error_line_received(text)
            return
        reading = _READING.set(self)
        try:
            self._line_received(text)
        finally:
            _READING.reset(reading)

    def _overflow(self, fd: int) -> None:
        self.fault = f"a line of output over {MAX_LINE >> 20} MiB"
        self.buffer[fd] = bytearray()
        self.end_process()

    def end_process(self) -> None:
        """Have the keeper end the engine and everything it started, at once."""
        if self.transport is not None:
            _signal(self.transport, signal.SIGTERM)


class UciPlayer(Player):
    """One process of a UCI engine, killed and started again after a failure."""

    def __init__(
        self,
        spec: EngineSpec,
        hang_seconds: float,
        hang_margin: float = HANG_MARGIN,
        notes: OutputNotes | None = None,
    ) -> None:
        super().__init__(spec)
        self.hang_seconds = hang_seconds
        self.hang_margin = hang_margin
        self.notes = notes if notes is not None else OutputNotes()
        self.limit = chess.engine.Limit(
            nodes=spec.nodes,
            depth=spec.depth,
            time=spec.movetime / 1000 if spec.movetime else None,
        )
        self._transport: asyncio.SubprocessTransport | None = None
        self._engine: BoundedUci | None = None
        self._game: object = object()

    async def start(self) -> None:
        argv, env = uci_command(self.spec)
        # in a process group of its own: Ctrl-C in a terminal reaches the runner only
        group = {"process_group": 0} if os.name == "posix" else {}
        try:
            self._transport, self._engine = await asyncio.get_running_loop().subprocess_exec(
                lambda: BoundedUci(self.name, self.notes),
                *kept(argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                **group,
            )
        except OSError as exc:
            raise UserError(f"engine {self.name!r}: could not start {argv[0]} ({exc})") from None
        try:  # whatever stops the handshake (a hang, a crash, Ctrl-C) ends the process too
            await self._handshake(self._engine)
        except BaseException:
            await self.abandon()
            raise

    async def _handshake(self, engine: BoundedUci) -> None:
        await self._starting(engine.initialize(), "uciok", "uci")
        available = engine.options  # case-insensitive: the spec's key may be lower case
        options = {
            available[k].name if k in available else k: v
            for k, v in self.spec.options.items()
            if k not in self.spec.soft_options or k in available
        }
        try:
            await engine.configure(options)
        except chess.engine.EngineError as exc:
            raise SpecMistake(f"engine {self.name!r}: {exc}") from None
        # ready before the first move: a clock must not pay for loading a network
        await self._starting(engine.ping(), "readyok", "isready")

    async def _starting(self, answer: Awaitable[None], what: str, after: str) -> None:
        """Wait for a handshake's ``what``: a hang is a ``StartHang``, a death a UserError
        (which the runner retries: an engine killed in its handshake may well start)."""
        try:
            await asyncio.wait_for(answer, self.hang_seconds)
        except TimeoutError:
            raise StartHang(
                f"engine {self.name!r}: no {what} {self.hang_seconds:g} s after {after} "
                "(raise --hang-seconds if it is only slow to start)"
            ) from None
        except chess.engine.EngineError as exc:
            if self._engine is not None and self._engine.cannot_start:
                raise CannotStart(
                    f"engine {self.name!r}: could not start {self._engine.cannot_start}"
                ) from None
            raise UserError(f"engine {self.name!r}: {self._why_failed(exc).detail}") from None

    @property
    def pid(self) -> int | None:
        """The pid of the engine's keeper (the engine is its child)."""
        return self._transport.get_pid() if self._transport else None

    async def new_game(self, seed: int) -> None:
        """``ucinewgame`` and its ``readyok`` before the game, so a hang there is named and a
        clock does not pay for the engine clearing its tables."""
        engine = self._running()
        engine.send_line("ucinewgame")
        engine.first_game, engine.game = False, self._game  # python-chess then sends no other
        what = f"no readyok {self.hang_seconds:g} s after ucinewgame"
        await self._answer(engine.ping(), self.hang_seconds, what)

    async def play(self, board: chess.Board, clock: chess.engine.Limit | None = None) -> Played:
        engine = self._running()
        limit = clock if clock is not None else self.limit
        timeout = self.move_timeout(limit, board.turn)
        result = await self._answer(
            engine.play(board, limit, game=self._game, info=chess.engine.INFO_SCORE),
            timeout,
            f"no bestmove {timeout:g} s after go",
        )
        move = result.move
        if move is None or not board.is_legal(move):
            raise PlayerFailure("illegal move", f"bestmove {move or '(none)'} in {board.fen()}")
        score = result.info.get("score")
        cp = score_cp(score.pov(board.turn)) if score is not None else None
        return Played(move, cp, result.info.get("depth"), result.info.get("nodes"))

    def move_timeout(self, limit: chess.engine.Limit, turn: chess.Color) -> float:
        """Seconds to wait for a move: its time (``movetime``, or the mover's whole clock) plus
        ``hang_margin``; ``hang_seconds`` for a node- or depth-limited move, which has no time
        to measure against."""
        own = limit.white_clock if turn == chess.WHITE else limit.black_clock
        timed = limit.time if limit.time is not None else own
        return self.hang_seconds if timed is None else timed + self.hang_margin

    def _running(self) -> BoundedUci:
        if self._engine is None or self._engine.returncode.done():
            raise PlayerFailure("crash", "engine not running")
        return self._engine

    async def _answer(self, answer: Awaitable[T], seconds: float, silence: str) -> T:
        """``answer`` within ``seconds``, or the ``PlayerFailure`` that names what went wrong
        (``silence`` is the hang's detail)."""
        try:
            return await asyncio.wait_for(answer, seconds)
        except TimeoutError:
            raise PlayerFailure("hang", silence) from None
        except chess.engine.EngineError as exc:
            raise self._why_failed(exc) from None

    def _why_failed(self, exc: chess.engine.EngineError) -> PlayerFailure:
        engine = self._engine
        if engine is not None and engine.fault:
            return PlayerFailure("bad output", engine.fault)
        if isinstance(exc, chess.engine.EngineTerminatedError):
            code = engine.returncode.result() if engine and engine.returncode.done() else None
            if code is not None and code < 0:
                return PlayerFailure(
                    "crash", f"its process was killed ({signal.Signals(-code).name})"
                )
            return PlayerFailure("crash", f"its process ended (exit code {code})")
        if str(exc).startswith(("illegal uci", "invalid uci")):  # python-chess's bestmove check
            return PlayerFailure("illegal move", f"bestmove not legal here ({exc})")
        return PlayerFailure("error", str(exc))

    async def abandon(self) -> None:
        await self._stop(ask=False)

    async def close(self) -> None:
        await self._stop(ask=True)

    async def _stop(self, ask: bool) -> None:
        """End the engine (asked to ``quit`` first when ``ask``) with every process it
        started, and see its keeper reaped before returning: no engine process outlives its
        player, and the event loop closing after us does not log "Loop ... that handles pid
        ... is closed". Cancelled meanwhile (another seat failed; Ctrl-C), it still ends the
        engine, then re-raises."""
        engine, transport = self._engine, self._transport
        self._engine = self._transport = None
        if transport is None:
            return
        ending = asyncio.ensure_future(_end_process(engine, transport, ask))
        try:
            await asyncio.shield(ending)
        except asyncio.CancelledError:
            await asyncio.wait([ending])
            raise


async def _end_process(
    engine: BoundedUci | None, transport: asyncio.SubprocessTransport, ask: bool
) -> None:
    try:
        if engine is not None and ask and not engine.returncode.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(engine.quit(), QUIT_SECONDS)
    finally:
        _signal(transport, signal.SIGTERM)  # the keeper: the engine and all it started, at once
        try:
            if engine is not None and not await _gone(engine, REAP_SECONDS):
                chess.engine.LOGGER.warning(
                    "%s: not gone %g s after it was told to end: killing its group",
                    engine,
                    REAP_SECONDS,
                )
                _signal(transport, signal.SIGKILL, group=True)
                await _gone(engine, REAP_SECONDS)
        finally:
            transport.close()


async def _gone(engine: BoundedUci, seconds: float) -> bool:
    """Has the engine's process been reaped and its pipes closed within ``seconds``? (Its
    keeper exits only once everything it kept is gone.)"""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(engine.returncode), seconds)
    return engine.returncode.done()
