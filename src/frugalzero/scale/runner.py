"""Where generation runs: this machine's processes or a Ray cluster, behind one interface.

The generators (``frugalzero selfplay|explore|sfgames`` and the run's generation step) ask a
``Runner`` for games and Stockfish playouts and write the shards themselves, so their output
does not depend on where the games were played.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from frugalzero.data.records import GameRecord
from frugalzero.expert.engine import EngineConfig
from frugalzero.scale.config import RayConfig
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.play import SelfPlayRun


class Runner(Protocol):
    """What the generators need from wherever their games are played."""

    def selfplay(
        self,
        net_path: str | Path,
        config: SelfPlayConfig,
        on_game: Callable[[GameRecord], None],
        progress: Callable[[int], None] | None = None,
        numbers: Sequence[int] | None = None,
    ) -> SelfPlayRun:
        """Play ``config.games`` games (those numbered ``numbers`` of them, when given); every
        finished game goes to ``on_game`` here."""
        ...

    def playout_pool(self, engine: EngineConfig, workers: int) -> AbstractContextManager[Any]:
        """A Stockfish pool (``map_unordered``, ``size``, ``stats``, ``engine_name``), closed
        when the block ends."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Runner: ...

    def __exit__(self, *exc: object) -> None: ...


class LocalRunner:
    """This machine: a process pool for self-play, ``StockfishPool`` for playouts."""

    def selfplay(self, net_path, config, on_game, progress=None, numbers=None) -> SelfPlayRun:
        from frugalzero.selfplay.play import run_selfplay

        return run_selfplay(net_path, config, on_game, progress, numbers)

    def playout_pool(self, engine: EngineConfig, workers: int):
        from frugalzero.expert.pool import StockfishPool

        return StockfishPool(engine, workers)

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RayRunner:
    """The Ray cluster at ``address`` ('local' starts a private runtime), connected on first
    use and kept for the runner's life; a connection it made is closed by ``close``. The run's
    games report what the workers went through (deaths, replayed games) in ``SelfPlayRun.extra``.
    """

    def __init__(self, address: str, config: RayConfig | None = None) -> None:
        self.address = address
        self.config = config or RayConfig()
        self._started = False
        self._connected = False

    def _connect(self) -> None:
        if self._connected:
            return
        from frugalzero.scale.cluster import connect

        self._started = connect(self.address, self.config)
        self._connected = True

    def selfplay(self, net_path, config, on_game, progress=None, numbers=None) -> SelfPlayRun:
        from frugalzero.scale.selfplay import ray_selfplay

        self._connect()
        return ray_selfplay(net_path, config, on_game, progress, self.config, numbers=numbers)

    def playout_pool(self, engine: EngineConfig, workers: int):
        """Ray sizes the pool (``RayConfig.workers``); ``workers`` is the local pool's figure."""
        from frugalzero.scale.playouts import RayPlayoutPool

        self._connect()
        return RayPlayoutPool(engine, self.config)

    def close(self) -> None:
        if self._started:
            from frugalzero.scale.cluster import disconnect

            disconnect()
        self._started = self._connected = False

    def __enter__(self) -> RayRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def runner_for(address: str | None, ray: RayConfig | None = None) -> Runner:
    """``RayRunner`` for a Ray address (``--ray`` / ``ray = "..."``), else ``LocalRunner``."""
    if address:
        return RayRunner(address, ray)
    return LocalRunner()
