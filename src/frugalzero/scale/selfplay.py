"""Self-play on Ray: ``run_selfplay``'s twin, the games played by Ray workers.

The network is published once (object store); the run's game starts are the local run's
(``game_starts(config)``) and go out in chunks; every finished game comes back to the calling
process, in finishing order, as it does from the local process pool. A game whose worker died
is played again from its start with the same seed, so it is the same game (same id, same
opening, same random stream): a run's set of games does not depend on which workers died, and
games cut short by a crash are not under-represented (long games would be, were they dropped).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frugalzero.data.records import GameRecord
from frugalzero.scale.config import RayConfig
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.play import SelfPlayRun


def selfplay_chunk(config: SelfPlayConfig, ray: RayConfig, games: int, workers: int) -> int:
    """Games per chunk: a worker's share of the run (full batches, like a local worker's), at
    most ``concurrent`` so that late workers and replacements still find work."""
    if ray.chunk:
        return ray.chunk
    return max(1, min(config.concurrent, math.ceil(games / workers)))


def ray_selfplay(
    net_path: str | Path,
    config: SelfPlayConfig,
    on_game: Callable[[GameRecord], None],
    progress: Callable[[int], None] | None = None,
    ray: RayConfig | None = None,
    workers_hook: Callable[[object], None] | None = None,
    numbers: Sequence[int] | None = None,
) -> SelfPlayRun:
    """Play ``config.games`` games on Ray workers (Ray must be connected: ``connect``);
    every finished game goes to ``on_game`` here. ``workers_hook`` sees the ``RayWorkers``
    once they run (tests use it to kill one). ``numbers``: only those games of the run."""
    from frugalzero.scale.actors import SelfPlayWorker
    from frugalzero.scale.cluster import worker_count
    from frugalzero.scale.netref import publish_net
    from frugalzero.scale.workers import RayWorkers
    from frugalzero.selfplay.play import selected_starts

    ray = ray or RayConfig()
    started = time.perf_counter()
    starts = selected_starts(config, numbers)
    payload, meta = publish_net(net_path)  # a bad file is reported here, before any worker
    workers = worker_count(ray, len(starts))
    chunk = selfplay_chunk(config, ray, len(starts), workers)
    total = SelfPlayRun()
    pool = RayWorkers(
        SelfPlayWorker,
        workers,
        ray,
        args=(ray.cpus_per_worker, ray.gpus_per_worker),
        num_gpus=ray.gpus_per_worker,
        name="self-play worker",
    )
    with pool:
        if workers_hook is not None:
            workers_hook(pool)
        results = pool.map_unordered(
            starts, key=lambda s: s.index, method="play", args=(payload, config), chunk=chunk
        )
        for _start, record, _error in results:
            if record is None:
                continue  # counted by the pool (failed)
            total.games += 1
            on_game(record)
            if progress is not None:
                progress(total.games)
    counters = pool.counters
    total.moves = int(counters.get("moves", 0))
    total.simulations = int(counters.get("simulations", 0))
    total.leaves = int(counters.get("leaves", 0))
    total.batches = int(counters.get("batches", 0))
    total.seconds = time.perf_counter() - started
    total.workers = workers
    total.extra = {
        "ray_workers": workers,
        "chunk": chunk,
        "net_id": meta.net_id,
        **ray_counts(pool),
    }
    return total


def ray_counts(pool) -> dict[str, Any]:
    """What a run's workers went through: deaths, games handed out again, games given up; the
    Ray nodes its workers ran on (``nodes``, counted by node id, not IP: nodes can share a
    machine) and the games each node played (``ray_nodes``: node id -> games)."""
    return {
        "worker_deaths": pool.deaths,
        "replayed": pool.replayed,
        "failed": pool.failed,
        "nodes": len({info.get("node_id") or info.get("node", "") for info in pool.info}),
        "ray_nodes": dict(sorted(pool.results_by_node.items())),
    }
