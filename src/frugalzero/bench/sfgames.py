"""Stockfish's games: positions labelled per second against the bound Stockfish's own CPU sets.

Each round plays ``--games`` games through the pool exactly as ``frugalzero sfgames`` does
(random openings, every move a label, ``write_games``: shards and PGN in game order) and
reads, from /proc, the CPU time of the engines, of the worker processes that drive them and of
this process (the pool's loop, the ordering, the shards and the PGN). Stockfish
alone on the same cores could label ``cores / (engine CPU a label)`` positions a second;
``over_stockfish_bound`` is the pipeline's rate over that, measured on the same positions
in the same round: 1.0 would mean the Python around the engines costs nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--games", type=int, default=64, help="games per round")
    parser.add_argument("--rounds", type=int, default=3, help="measurement rounds")
    parser.add_argument("--nodes", type=int, default=400, help="Stockfish nodes per move")
    parser.add_argument("--workers", type=int, default=0, help="engines (0 = CPU cores)")
    parser.add_argument("--max-plies", type=int, default=300, help="engine moves per game")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from pathlib import Path

    from frugalzero.bench.timing import median
    from frugalzero.expert.engine import EngineConfig
    from frugalzero.expert.pool import StockfishPool
    from frugalzero.expert.sfgames import SfGamesConfig, write_games

    engine = EngineConfig(nodes=args.nodes)
    rounds: dict[str, list[float]] = {
        "rate": [],
        "engine_us": [],
        "driver_us": [],
        "main_us": [],
        "ratio": [],
    }
    with (
        StockfishPool(engine, args.workers) as pool,
        tempfile.TemporaryDirectory(prefix="frugalzero-bench-sfgames-") as out,
    ):
        cores = pool.size

        def cpu() -> tuple[float, float, float]:
            own = resource.getrusage(resource.RUSAGE_SELF)
            drivers = sum(process_cpu_s(pid) for pid in pool.driver_pids())
            engines = sum(process_cpu_s(pid) for pid in pool.engine_pids())
            return engines, drivers, own.ru_utime + own.ru_stime

        for number in range(args.rounds + 1):  # round 0 warms the engines up, not counted
            config = SfGamesConfig(seed=1000 + number, max_plies=args.max_plies, engine=engine)
            before = cpu()
            start = time.perf_counter()
            stats = write_games(pool, config, args.games, Path(out), f"bench-{number}").stats
            elapsed = time.perf_counter() - start
            engine_s, driver_s, main_s = (b - a for a, b in zip(before, cpu(), strict=True))
            if number == 0:
                continue
            rate = stats.labels / elapsed
            rounds["rate"].append(rate)
            rounds["engine_us"].append(engine_s / stats.labels * 1e6)
            rounds["driver_us"].append(driver_s / stats.labels * 1e6)
            rounds["main_us"].append(main_s / stats.labels * 1e6)
            rounds["ratio"].append(rate * engine_s / stats.labels / cores)
        pool_stats = pool.stats()
        name = pool.engine_name
    return {
        "positions_per_s": round(median(rounds["rate"]), 1),
        "over_stockfish_bound": round(median(rounds["ratio"]), 3),
        "ratios": [round(r, 3) for r in rounds["ratio"]],
        "stockfish_cpu_us_per_position": round(median(rounds["engine_us"]), 1),
        "driver_cpu_us_per_position": round(median(rounds["driver_us"]), 1),
        "main_cpu_us_per_position": round(median(rounds["main_us"]), 1),
        "games_per_round": args.games,
        "rounds": args.rounds,
        "engine": name,
        "limit": engine.describe_limit(),
        "workers": cores,
        "engine_restarts": pool_stats["restarts"],
    }
