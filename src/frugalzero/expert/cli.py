"""``frugalzero explore`` (ε-Explore labels) and ``frugalzero sfgames`` (Stockfish's games)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from frugalzero.config_cli import add_config_flags, config_from_args
from frugalzero.nn.shipped import NET_HELP
from frugalzero.runtime.lock import hold, holds_locks

# short flags of the docs and scripts
EXPLORE_ALIASES = {
    "engine.command": ("--engine",),
    "engine.nodes": ("--engine-nodes",),
    "engine.depth": ("--engine-depth",),
    "engine.movetime_ms": ("--engine-ms",),
}
SFGAMES_ALIASES = {
    "engine.command": ("--engine",),
    "engine.nodes": ("--nodes",),
    "engine.depth": ("--depth",),
    "engine.movetime_ms": ("--movetime",),
}


LIMITS = (("engine.nodes", "engine.depth", "engine.movetime_ms"),)
"""A limit given on the command line is the engine's only one."""


def _common_options(parser: argparse.ArgumentParser, config: str, aliases: dict) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    # Ray: the playouts on Ray workers, the shards written here
    parser.add_argument(
        "--ray", metavar="ADDRESS", help="label on Ray: 'local' starts a runtime, HOST:PORT joins"
    )
    parser.add_argument("--ray-workers", type=int, help="Ray workers (default: one per CPU)")
    add_config_flags(parser, config, aliases, exclusive=LIMITS)


def _runner(args: argparse.Namespace):
    """Where the playouts run: Ray workers with --ray, else this machine's engines."""
    from frugalzero.scale.config import RayConfig
    from frugalzero.scale.runner import runner_for

    return runner_for(args.ray, RayConfig(workers=args.ray_workers or 0))


def register(subparsers: argparse._SubParsersAction) -> None:
    explore = subparsers.add_parser(
        "explore", help="ε-Explore: the network explores, Stockfish labels playouts"
    )
    explore.add_argument("--net", default="small", help=NET_HELP)
    explore.add_argument("--steps", type=int, required=True, help="exploration moves")
    explore.add_argument("--out", required=True, help="directory for the shards")
    _common_options(explore, "frugalzero.expert.explore:ExploreConfig", EXPLORE_ALIASES)
    explore.set_defaults(handler=_explore)

    games = subparsers.add_parser(
        "sfgames", help="Stockfish-vs-Stockfish games, written as PGN and shards"
    )
    games.add_argument("--games", type=int, required=True, help="number of games")
    games.add_argument("--out", required=True, help="directory for the shards and PGN")
    _common_options(games, "frugalzero.expert.sfgames:SfGamesConfig", SFGAMES_ALIASES)
    games.set_defaults(handler=_sfgames)


def _check_count(name: str, value: int) -> None:
    from frugalzero.errors import UserError

    if value < 1:
        raise UserError(f"--{name} must be at least 1, not {value}")


@contextmanager
def _progress(total: int, what: str, start: float) -> Iterator[Callable[[int, int], None]]:
    """A bar of ``what`` done out of ``total`` with the labels made and their rate since
    ``start``; yields ``update(done, labels)``."""
    from frugalzero.runtime.progress import progress_bar

    rate = "{task.fields[labels]:,} labels  {task.fields[rate]:,.0f}/s"
    with progress_bar(f"[bold]{what}", "count", rate, "elapsed") as progress:
        bar = progress.add_task(what, total=total, labels=0, rate=0.0)

        def update(done: int, labels: int) -> None:
            elapsed = max(time.perf_counter() - start, 1e-9)
            progress.update(bar, completed=done, labels=labels, rate=labels / elapsed)

        yield update


def _write_config(out: Path, name: str, config, notes: dict) -> None:
    """The resolved config (loadable with --config), run facts as comments above it."""
    from frugalzero.config import dump_toml, to_dict
    from frugalzero.runtime.files import atomic_write_text

    head = "".join(f"# {key}: {value}\n" for key, value in notes.items())
    atomic_write_text(out / name, head + dump_toml(to_dict(config)))


@holds_locks
def _explore(args: argparse.Namespace) -> int:
    from frugalzero.chess.positions import load_book
    from frugalzero.data.shards import ShardWriter
    from frugalzero.expert.explore import EpsExplore, summary
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.shipped import resolve_net_path
    from frugalzero.output import emit

    _check_count("steps", args.steps)
    config = config_from_args(args)
    net_path = resolve_net_path(args.net)
    net, meta = load_net(net_path)
    openings = load_book(config.openings) if config.openings else None
    out = Path(args.out)
    hold(out)  # one writer at a time
    prefix = f"explore-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"  # a later run adds
    _write_config(out, f"{prefix}.toml", config, {"net": str(net_path), "steps": args.steps})

    begin = time.perf_counter()
    with (
        _runner(args) as runner,
        runner.playout_pool(config.engine, config.workers) as pool,
        EpsExplore(net, config, meta.net_id, pool=pool, openings=openings) as run,
    ):
        start = time.perf_counter()  # rates count labelling, not starting processes
        writer = ShardWriter(out, prefix)
        try:
            with _progress(args.steps, "explore", start) as update:
                stats = run.run(
                    args.steps, writer.add, lambda s: update(run.explorer.steps, s.labels)
                )
                update(args.steps, stats.labels)
        finally:
            shards = writer.close()  # finished playouts are written even on Ctrl+C
        elapsed = time.perf_counter() - start
        result = {
            "steps": run.explorer.steps,
            **summary(stats, elapsed, run.pool.stats()),
            "setup_s": round(start - begin, 2),
            "exploration_games": run.explorer.games_started,
            "net": str(net_path),
            "net_id": meta.net_id,
            "engine": run.pool.engine_name,
            "limit": config.engine.describe_limit(),
            "workers": run.pool.size,
            "shards": len(shards),
            "out": str(out),
        }
    emit(result, args.json, title="explore")
    return 0


@holds_locks
def _sfgames(args: argparse.Namespace) -> int:
    from frugalzero.chess.positions import load_book
    from frugalzero.expert.explore import summary
    from frugalzero.expert.sfgames import write_games
    from frugalzero.output import emit

    _check_count("games", args.games)
    config = config_from_args(args)
    openings = load_book(config.openings) if config.openings else None
    out = Path(args.out)
    hold(out)  # one writer at a time
    prefix = f"sfgames-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"  # a later run adds
    _write_config(out, f"{prefix}.toml", config, {"games": args.games})

    begin = time.perf_counter()
    with _runner(args) as runner, runner.playout_pool(config.engine, config.workers) as pool:
        start = time.perf_counter()
        with _progress(args.games, "sfgames", start) as update:
            written = write_games(
                pool,
                config,
                args.games,
                out,
                prefix,
                openings,
                lambda s: update(s.playouts, s.labels),
            )
        stats = written.stats
        elapsed = time.perf_counter() - start
        base = summary(stats, elapsed, pool.stats())
        result = {
            "games": stats.playouts,
            "positions": base.pop("labels"),
            "wdl": base.pop("wdl"),
            "games_per_s": base.pop("playouts_per_s"),
            "positions_per_s": base.pop("labels_per_s"),
            "mean_game_plies": base.pop("mean_playout_plies"),
            **{k: v for k, v in base.items() if k != "playouts"},
            "setup_s": round(start - begin, 2),
            "engine": pool.engine_name,
            "limit": config.engine.describe_limit(),
            "workers": pool.size,
            "openings": config.openings or f"random {config.random_plies} plies",
            "shards": len(written.shards),
            "pgn_files": len(written.pgn),
            "out": str(out),
        }
    emit(result, args.json, title="sfgames")
    return 0
