"""Stockfish playouts on Ray: a drop-in for ``StockfishPool`` where playouts are concerned.

``label_playouts`` (Stockfish's games) and ``EpsExplore`` (ε-Explore) take it as their pool:
they only call ``map_unordered``, ``size``, ``stats`` and ``engine_name``. Each Ray worker runs
its own ``StockfishPool`` (one engine per CPU it reserves), so an engine that crashes or hangs
is restarted on its machine as before; a worker that dies altogether is replaced here, and the
playouts it had not finished are played again from the same position (so the same game:
Stockfish at a node limit barely varies). ε-Explore's network stays on the driver: it spends
one evaluation per labelled playout of a hundred-odd engine moves, so the driver never waits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from frugalzero.expert.engine import EngineConfig
from frugalzero.expert.pool import LabelError
from frugalzero.scale.config import RayConfig


class RayPlayoutPool:
    """Playout workers on the connected Ray cluster (``connect`` first)."""

    def __init__(self, engine: EngineConfig | None = None, ray: RayConfig | None = None) -> None:
        from frugalzero.scale.actors import PlayoutWorker
        from frugalzero.scale.cluster import worker_count
        from frugalzero.scale.workers import RayWorkers

        self.config = engine = engine or EngineConfig()
        self.ray = ray = ray or RayConfig()
        self.workers = worker_count(ray)
        self.size = self.workers * ray.cpus_per_worker
        self.chunk = ray.chunk or 4 * ray.cpus_per_worker
        self.pool = RayWorkers(
            PlayoutWorker,
            self.workers,
            ray,
            args=(engine, ray.cpus_per_worker),
            name="Stockfish worker",
        )
        self.engine_name = str(self.pool.info[0].get("engine", "")) if self.pool.info else ""

    def __enter__(self) -> RayPlayoutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map_unordered(
        self, tasks: Iterable[Any], max_pending: int = 0
    ) -> Iterator[tuple[Any, Future]]:
        """(task, finished future) pairs in completion order, as ``StockfishPool`` gives them.
        Tasks are drawn lazily, a chunk per free worker (at most ``workers x chunk`` in flight,
        ``max_pending`` permitting)."""
        chunk = self.chunk
        if max_pending:
            chunk = max(1, min(chunk, max_pending // self.workers))
        results = self.pool.map_unordered(
            tasks, key=lambda t: t.game_id, method="play", chunk=chunk
        )
        for task, record, error in results:
            future: Future = Future()
            if record is None:
                future.set_exception(LabelError(error))
            else:
                future.set_result(record)
            yield task, future

    def stats(self) -> dict[str, int]:
        """The engines' counters summed over workers, and the workers' own deaths."""
        counts = {k: int(v) for k, v in self.pool.counters.items()}
        counts["worker_deaths"] = counts.get("worker_deaths", 0) + self.pool.deaths
        counts["replayed"] = self.pool.replayed
        return counts

    def pids(self) -> list[int]:
        return self.pool.pids()

    def close(self) -> None:
        self.pool.close()
