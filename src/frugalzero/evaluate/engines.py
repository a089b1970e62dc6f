"""Players: one per game seat, driven by the match runner's event loop.

A UCI engine gets its own process per seat (python-chess's asyncio client), so games run in
parallel without sharing engine state; a ``net:`` engine under a clock is one too (our own
``frugalzero uci``). A player under a clock is handed both clocks with each move. A move that
does not come back in time, a process that dies, or an illegal move raises ``PlayerFailure``:
the runner scores the game as a loss for that side and restarts the engine before its next
game. ``random`` plays a uniformly random legal move from a per-game seed. Seats of ``net``
engines with a node limit (``frugalzero.evaluate.netplayer``) are players built on the types
here; the match runner seats them all (``make_players``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass

import chess
import chess.engine

from frugalzero.errors import UserError
from frugalzero.evaluate.specs import EngineSpec, uci_command
from frugalzero.values import score_cp


class SpecMistake(UserError):
    """An engine refused an option of its spec: starting it again would not help."""


class PlayerFailure(Exception):
    """The engine lost the game by failing: ``kind`` is crash, hang, illegal move or error."""

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


class UciPlayer(Player):
    """One process of a UCI engine, restarted after a crash or a hang."""

    def __init__(self, spec: EngineSpec, hang_seconds: float) -> None:
        super().__init__(spec)
        self.hang_seconds = hang_seconds
        self.limit = chess.engine.Limit(
            nodes=spec.nodes,
            depth=spec.depth,
            time=spec.movetime / 1000 if spec.movetime else None,
        )
        self._transport: asyncio.SubprocessTransport | None = None
        self._engine: chess.engine.UciProtocol | None = None
        self._game: object = object()

    async def start(self) -> None:
        argv, env = uci_command(self.spec)
        command = " ".join(argv)
        try:
            self._transport, self._engine = await asyncio.wait_for(
                chess.engine.popen_uci(argv, setpgrp=True, env=env), self.hang_seconds
            )
        except (TimeoutError, OSError, chess.engine.EngineError) as exc:
            raise UserError(f"engine {self.name!r}: could not start {command} ({exc})") from None
        available = self._engine.options  # case-insensitive: the spec's key may be lower case
        options = {
            available[k].name if k in available else k: v
            for k, v in self.spec.options.items()
            if k not in self.spec.soft_options or k in available
        }
        try:
            await self._engine.configure(options)
        except chess.engine.EngineError as exc:
            await self.close()
            raise SpecMistake(f"engine {self.name!r}: {exc}") from None
        try:  # ready before the first move: a clock must not pay for loading a network
            await asyncio.wait_for(self._engine.ping(), self.hang_seconds)
        except (TimeoutError, chess.engine.EngineError) as exc:
            await self.close()
            raise UserError(f"engine {self.name!r}: not ready after start ({exc!r})") from None

    @property
    def pid(self) -> int | None:
        return self._transport.get_pid() if self._transport else None

    async def new_game(self, seed: int) -> None:
        self._game = object()  # a new game object makes python-chess send ucinewgame

    async def play(self, board: chess.Board, clock: chess.engine.Limit | None = None) -> Played:
        if self._engine is None:
            raise PlayerFailure("crash", "engine not running")
        limit = clock if clock is not None else self.limit
        own = limit.white_clock if board.turn == chess.WHITE else limit.black_clock
        timeout = self.hang_seconds + (limit.time or own or 0.0)
        try:
            result = await asyncio.wait_for(
                self._engine.play(board, limit, game=self._game, info=chess.engine.INFO_SCORE),
                timeout,
            )
        except TimeoutError:
            raise PlayerFailure("hang", f"no move in {timeout:.0f} s") from None
        except chess.engine.EngineTerminatedError as exc:
            raise PlayerFailure("crash", str(exc)) from None
        except chess.engine.EngineError as exc:
            raise PlayerFailure("error", str(exc)) from None
        move = result.move
        if move is None or not board.is_legal(move):
            raise PlayerFailure("illegal move", str(move))
        score = result.info.get("score")
        cp = score_cp(score.pov(board.turn)) if score is not None else None
        return Played(move, cp, result.info.get("depth"), result.info.get("nodes"))

    async def close(self) -> None:
        engine, transport = self._engine, self._transport
        self._engine = self._transport = None
        if engine is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(engine.quit(), 2.0)
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.kill()
            if engine is not None:  # reaped before the event loop closes, which would
                with contextlib.suppress(Exception):  # otherwise log "Loop ... is closed"
                    await asyncio.wait_for(asyncio.shield(engine.returncode), 2.0)
            with contextlib.suppress(Exception):
                transport.close()
