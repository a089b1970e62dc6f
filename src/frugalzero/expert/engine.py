"""One UCI engine process that survives crashes and hangs.

``EngineSession`` drives a Stockfish (or any UCI engine) through ``uci_client``.
Every request has a deadline; an engine that dies or misses it is killed, restarted with the
same options, and the request is retried, so a flaky engine costs time but never a label.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field

import chess

from frugalzero.config import bounded, check
from frugalzero.errors import UserError
from frugalzero.expert.uci_client import Reply, UciEngine, UciError, UciPosition, go_command
from frugalzero.values import VALUE_SCALE


@dataclass
class EngineConfig:
    """How every engine of a pool runs. Set one limit (nodes, depth or movetime); with several,
    the engine stops at whichever comes first."""

    command: str = "stockfish"
    """Engine executable: a path, or a name looked up on PATH and then in /usr/games."""
    nodes: int = bounded(1000, 0, 10**10)
    """Nodes searched per move (0 = no node limit)."""
    depth: int = bounded(0, 0, 1000)
    """Search depth per move (0 = no depth limit)."""
    movetime_ms: int = bounded(0, 0, 86_400_000)
    """Milliseconds per move (0 = no time limit)."""
    hash_mb: int = 16
    """Transposition table per engine (UCI ``Hash``); small so memory stays bounded."""
    threads: int = 1
    """Search threads per engine (UCI ``Threads``); parallelism comes from more engines."""
    options: dict[str, str | int | bool] = field(default_factory=dict)
    """Further UCI options, e.g. {"SyzygyPath" = "/tb"}."""
    timeout_s: float = 20.0
    """Seconds an answer may take beyond the movetime before the engine counts as hung and is
    killed and restarted (also bounds the start-up handshake)."""
    retries: int = 3
    """Restarts tried for one position before it is given up (and counted)."""
    value_scale: float = VALUE_SCALE
    """Centipawns at which a label's value is 0.82: v = 2 / (1 + 10^(-cp/scale)) - 1."""
    multipv: int = 1
    """Candidate moves the engine scores per labelled position (UCI MultiPV). With more than
    one, the policy target is a softmax over the candidates' scores at ``policy_temperature``
    (the other legal moves get none); 1 = the engine's move alone (one-hot)."""
    policy_temperature: float = 50.0
    """Centipawns that divide the candidates' scores in that softmax: a move this much worse
    than the best gets 1/e of its weight (not yet tuned)."""
    wdl: bool = True
    """Ask the engine for its own win/draw/loss estimate (UCI_ShowWDL, where it has the
    option) and store it with each label: a WDL value head learns it."""

    def __post_init__(self) -> None:
        names = ("nodes", "depth", "movetime_ms", "hash_mb", "threads", "retries", "multipv")
        checks = [
            (getattr(self, n) >= 0, f"engine.{n} must be >= 0, not {getattr(self, n)}")
            for n in names
        ]
        checks += [
            (
                bool(self.nodes or self.depth or self.movetime_ms),
                "set a limit (engine.nodes, engine.depth or engine.movetime_ms)",
            ),
            (self.threads >= 1 and self.hash_mb >= 1, "threads and hash_mb must be at least 1"),
            (self.timeout_s > 0 and self.value_scale > 0, "timeout_s and value_scale must be > 0"),
            (self.multipv >= 1, "multipv must be at least 1"),
            (self.policy_temperature > 0, "policy_temperature must be > 0"),
        ]
        check(self, "engine", checks)

    def describe_limit(self) -> str:
        parts = [
            f"{name}={value}"
            for name, value in (
                ("nodes", self.nodes),
                ("depth", self.depth),
                ("movetime_ms", self.movetime_ms),
            )
            if value
        ]
        return ",".join(parts)

    def deadline(self) -> float:
        """Seconds one move may take before the engine is declared hung."""
        return self.timeout_s + self.movetime_ms / 1000


def resolve_command(command: str) -> str:
    """Absolute path of an engine executable, or a UserError saying how to get one."""
    if os.sep in command:
        if os.path.isfile(command) and os.access(command, os.X_OK):
            return os.path.abspath(command)
        raise UserError(f"engine {command}: no such executable")
    found = shutil.which(command) or shutil.which(command, path="/usr/games:/usr/local/games")
    if found:
        return found
    hint = " (apt-get install stockfish)" if command == "stockfish" else ""
    raise UserError(f"engine {command!r} not found on PATH or in /usr/games{hint}")


class EngineFailed(RuntimeError):
    """The engine failed on one request ``retries + 1`` times in a row, or cannot start."""


class EngineUnavailable(EngineFailed):
    """The engine cannot be started at all: no point going on with other positions."""


@dataclass
class EngineStats:
    """What went wrong so far (and was repaired)."""

    moves: int = 0
    restarts: int = 0
    crashes: int = 0
    timeouts: int = 0

    def take(self) -> dict[str, int]:
        """The counters, reset to zero (the pool sums them across workers)."""
        out = dict(self.__dict__)
        self.moves = self.restarts = self.crashes = self.timeouts = 0
        return out


class EngineSession:
    """An engine process plus everything needed to replace it."""

    def __init__(
        self, config: EngineConfig, command: str, on_start: Callable[[int], None] | None = None
    ) -> None:
        self.config = config
        self.command = command
        self.go = go_command(config.nodes, config.depth, config.movetime_ms)
        self.on_start = on_start
        self.stats = EngineStats()
        self.name = ""
        self.pid = 0
        self._engine: UciEngine | None = None
        self._game: object = None
        self._fresh = True  # no request since the engine started
        self._started = False

    def start(self) -> None:
        """Start (or restart) the engine and set its options; EngineFailed if it cannot."""
        self.kill()
        if self._started:
            self.stats.restarts += 1
        self._started = True
        options: dict[str, str | int | bool] = {
            "Hash": self.config.hash_mb,
            "Threads": self.config.threads,
        }
        options.update(self.config.options)
        if self.config.multipv > 1:
            options["MultiPV"] = self.config.multipv
        try:
            self._engine = engine = UciEngine(self.command, self.config.timeout_s)
            if self.config.wdl and "UCI_ShowWDL" in engine.options:
                options["UCI_ShowWDL"] = True
            engine.configure(options)
        except (OSError, UciError, TimeoutError) as exc:
            self.kill()
            raise EngineFailed(f"engine {self.command} failed to start ({exc})") from None
        self._game, self._fresh = None, True
        self.pid = engine.pid
        self.name = engine.name
        if self.on_start is not None:
            self.on_start(self.pid)

    def kill(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.kill()

    def quit(self) -> None:
        """Ask the engine to quit, killing it if it does not within a second."""
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.quit()

    def play(
        self, board: chess.Board, game: object = None, position: UciPosition | None = None
    ) -> Reply:
        """The engine's move (never None) and score in ``board`` (its move stack is sent as
        history, or ``position`` when the caller keeps it), and its ``multipv`` candidates
        when that is more than one. A ``game`` other than the last request's starts a new game first
        (``ucinewgame``: hash and histories cleared), so the answers do not depend on what the
        engine searched before."""
        if position is None:
            position = UciPosition(board)
        attempts = self.config.retries + 1
        failure = "no attempt"
        start_failed = False
        for _ in range(attempts):
            start_failed = False
            if self._engine is None:
                try:
                    self.start()
                except EngineFailed as exc:
                    failure = str(exc)
                    start_failed = True
                    continue
            assert self._engine is not None
            try:
                reply = self._ask(self._engine, position, board.turn, game)
            except TimeoutError:
                self.stats.timeouts += 1
                failure = f"no answer within {self.config.deadline():g} s"
                self.kill()
                continue
            except (UciError, ValueError, IndexError) as exc:
                self.stats.crashes += 1
                failure = str(exc) or type(exc).__name__
                self.kill()
                continue
            if reply.move is None:  # "bestmove (none)" in a position with legal moves
                self.stats.crashes += 1
                failure = "no move"
                self.kill()
                continue
            self.stats.moves += 1
            return reply
        if start_failed:  # the last try could not even start it
            raise EngineUnavailable(failure)
        raise EngineFailed(
            f"engine {self.command} failed {attempts} times in a row on {board.fen()}: {failure}"
        )

    def _ask(
        self, engine: UciEngine, position: UciPosition, turn: chess.Color, game: object
    ) -> Reply:
        if self._fresh or game is not self._game:  # requests without a game share one
            engine.new_game()
            self._game, self._fresh = game, False
        return engine.search(position, turn, self.go, self.config.multipv, self.config.deadline())
