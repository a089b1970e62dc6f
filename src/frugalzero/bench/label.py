"""ε-Explore labels per second against Stockfish alone labelling the same positions.

Each round runs the full pipeline (the network explores, the pool plays the positions out,
records go to shards) for ``--steps`` exploration moves, and lets the same pool (same engines,
limit and cores) play out the positions the latest pipeline run explored with nothing else
running; the two alternate in order from round to round. ``ratio`` is the median of the
per-round ratios: 1.0 means exploration costs no labels at all.
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from frugalzero.nn.shipped import NET_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--net", default="small", help=NET_HELP)
    parser.add_argument("--steps", type=int, default=32, help="exploration moves per round")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved measurement rounds")
    parser.add_argument("--nodes", type=int, default=1000, help="Stockfish nodes per move")
    parser.add_argument("--workers", type=int, default=0, help="engines (0 = CPU cores)")
    parser.add_argument("--games", type=int, default=8, help="exploration games side by side")
    parser.add_argument("--device", default="auto", help="where the network runs")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import time

    from frugalzero.bench.timing import median
    from frugalzero.data.shards import ShardWriter
    from frugalzero.expert.engine import EngineConfig
    from frugalzero.expert.explore import EpsExplore, ExploreConfig, label_playouts
    from frugalzero.expert.pool import StockfishPool
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.shipped import resolve_net_path

    config = ExploreConfig(
        games=args.games,
        workers=args.workers,
        device=args.device,
        engine=EngineConfig(nodes=args.nodes),
    )
    net, meta = load_net(resolve_net_path(args.net))
    rounds: dict[str, list[float]] = {"pipeline": [], "reference": [], "ratio": [], "plies": []}
    with (
        StockfishPool(config.engine, config.workers) as pool,
        EpsExplore(net, config, meta.net_id, pool=pool) as explore,
        tempfile.TemporaryDirectory(prefix="frugalzero-bench-label-") as out,
    ):
        queue = explore.queue_size()
        explored: list = []
        explore.run(config.games, lambda record: None)  # warm up the net and the engines

        def pipeline(number: int) -> tuple[float, float]:
            explored.clear()
            writer = ShardWriter(out, f"bench-{number}")
            start = time.perf_counter()
            tasks = _tee(explore.explorer.tasks(args.steps), explored)
            stats = label_playouts(pool, tasks, writer.add, queue)
            writer.close()
            return stats.labels / (time.perf_counter() - start), stats.labels / stats.playouts

        def stockfish_alone() -> float:
            start = time.perf_counter()
            alone = label_playouts(pool, list(explored), lambda record: None, queue)
            return alone.labels / (time.perf_counter() - start)

        for number in range(args.rounds):
            # alternate the order so a machine slowing down or speeding up favours neither;
            # the reference labels the positions the latest pipeline run explored
            if number % 2 == 0:
                rate, plies = pipeline(number)
                reference = stockfish_alone()
            else:
                reference = stockfish_alone()
                rate, plies = pipeline(number)
            rounds["pipeline"].append(rate)
            rounds["reference"].append(reference)
            rounds["ratio"].append(rate / reference)
            rounds["plies"].append(plies)
        device = args.device
        if device == "auto":
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        pool_stats = pool.stats()
    return {
        "labels_per_s": round(median(rounds["pipeline"]), 1),
        "stockfish_only_labels_per_s": round(median(rounds["reference"]), 1),
        "ratio": round(median(rounds["ratio"]), 3),
        "ratios": [round(r, 3) for r in rounds["ratio"]],
        "mean_playout_plies": round(median(rounds["plies"]), 1),
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "engine": pool.engine_name,
        "limit": config.engine.describe_limit(),
        "workers": pool.size,
        "exploration_games": args.games,
        "device": device,
        "engine_restarts": pool_stats["restarts"],
    }


def _tee(tasks, into: list):
    """Pass tasks on, keeping a copy: the reference labels the same positions."""
    for task in tasks:
        into.append(task)
        yield task
