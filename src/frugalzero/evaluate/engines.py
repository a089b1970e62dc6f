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
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

import chess
import chess.engine

from frugalzero.errors import UserError
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
"""How long a killed engine may take to be reaped: at once, unless the machine is stalled (or
the process is stuck in the kernel, when we give up on it)."""


class SpecMistake(UserError):
    """An engine refused an option of its spec: starting it again would not help."""


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

    def __init__(self) -> None:
        super().__init__()
        self.fault = ""
        self.stderr_lines = 0

    def error_line_received(self, line: str) -> None:
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
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            chess.engine.LOGGER.warning("%s: >> %r (%s)", self, line[:200], err)
            return
        if fd == 1:
            self._line_received(text)
        else:
            self.error_line_received(text)

    def _overflow(self, fd: int) -> None:
        self.fault = f"a line of output over {MAX_LINE >> 20} MiB"
        self.buffer[fd] = bytearray()
        if self.transport is not None:
            self.transport.kill()


class UciPlayer(Player):
    """One process of a UCI engine, killed and started again after a failure."""

    def __init__(
        self, spec: EngineSpec, hang_seconds: float, hang_margin: float = HANG_MARGIN
    ) -> None:
        super().__init__(spec)
        self.hang_seconds = hang_seconds
        self.hang_margin = hang_margin
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
        try:
            self._transport, self._engine = await BoundedUci.popen(argv, setpgrp=True, env=env)
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
            raise UserError(f"engine {self.name!r}: {self._why_failed(exc).detail}") from None

    @property
    def pid(self) -> int | None:
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
        """End the process (asked to ``quit`` first when ``ask``), its process group with it,
        and reap it before returning: no engine outlives its player, and the event loop
        closing after us does not log "Loop ... that handles pid ... is closed". Cancelled
        meanwhile (another seat failed; Ctrl-C), it still ends the process, then re-raises."""
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
        if transport.get_returncode() is None:  # not reaped: its pid is still its group's
            with contextlib.suppress(OSError):
                os.killpg(transport.get_pid(), signal.SIGKILL)  # a wrapper's children too
        with contextlib.suppress(Exception):
            transport.kill()
        try:
            if engine is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(engine.returncode), REAP_SECONDS)
        finally:
            transport.close()
