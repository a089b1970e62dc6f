"""``frugalzero selfplay``: play games with a network and write them as training shards."""

from __future__ import annotations

import argparse

from frugalzero.config_cli import add_config_flags, config_from_args
from frugalzero.nn.shipped import NET_HELP
from frugalzero.runtime.lock import hold, holds_locks

# short flags of the docs and scripts
ALIASES = {
    "search.simulations": ("--sims",),
    "search.nscl": ("--nscl",),
    "search.gumbel": ("--gumbel",),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "selfplay",
        help="play self-play games and write training records",
        description="Self-play with PUCT MCTS (optionally search-contempt or Gumbel root "
        "search); many games at once share network batches. Writes shards of GameRecords, the "
        "resolved config and the statistics to --out.",
    )
    parser.add_argument("--net", required=True, help=NET_HELP)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--pgn",
        metavar="DIR",
        help="also write the games as PGN files here (both players named with the search settings)",
    )
    # Ray: the games on Ray workers, the shards written here
    parser.add_argument(
        "--ray", metavar="ADDRESS", help="play on Ray: 'local' starts a runtime, HOST:PORT joins"
    )
    parser.add_argument("--ray-workers", type=int, help="Ray workers (default: one per CPU)")
    add_config_flags(parser, "frugalzero.selfplay.config:SelfPlayConfig", ALIASES)
    parser.set_defaults(handler=_selfplay)


@holds_locks
def _selfplay(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from frugalzero.config import dump_toml, to_dict
    from frugalzero.data.shards import ShardWriter
    from frugalzero.layout import refuse_run_files
    from frugalzero.nn.shipped import resolve_net_path
    from frugalzero.output import emit, to_json
    from frugalzero.runtime.files import atomic_write_text
    from frugalzero.runtime.progress import progress_bar
    from frugalzero.scale.config import RayConfig
    from frugalzero.scale.runner import runner_for
    from frugalzero.selfplay.stats import selfplay_stats

    config = config_from_args(args)
    net_path = resolve_net_path(args.net)
    out = Path(args.out)
    if args.pgn:
        refuse_run_files(args.pgn)
    hold(out)  # one writer at a time
    stamp = time.strftime("%Y%m%d-%H%M%S")
    prefix = f"{config.method}-{stamp}-s{config.seed}"
    atomic_write_text(out / f"{prefix}.config.toml", dump_toml(to_dict(config)))

    records = []
    start = time.perf_counter()
    columns = ("count", "games  {task.fields[positions]} positions", "elapsed")
    with (
        progress_bar("self-play", *columns) as bar,
        ShardWriter(out, prefix, games_per_shard=config.games_per_shard) as writer,
    ):
        task = bar.add_task("games", total=config.games, positions=0)

        pgn = None
        if args.pgn:
            from frugalzero.data.pgnwriter import PgnWriter

            pgn = PgnWriter(args.pgn, prefix, config.games_per_shard, player_name(config))

        def on_game(record) -> None:
            records.append(record)
            writer.add(record)
            if pgn is not None:
                pgn.add(record)

        def progress(done: int) -> None:
            bar.update(task, completed=done, positions=writer.positions)

        with runner_for(args.ray, RayConfig(workers=args.ray_workers or 0)) as runner:
            run = runner.selfplay(net_path, config, on_game, progress)
        pgn_paths = pgn.close() if pgn is not None else []
    seconds = time.perf_counter() - start
    stats = selfplay_stats(records)
    result = {
        **stats,
        "method": config.method,
        "simulations": config.search.simulations,
        "nscl": config.search.nscl,
        "workers": run.workers,
        **run.extra,  # the shared inference process; on Ray: worker deaths, replayed games
        "seconds": round(seconds, 2),
        "positions_per_s": round(stats["positions"] / seconds, 2) if seconds else None,
        "simulations_per_s": round(run.simulations / seconds, 1) if seconds else None,
        "shards": [str(p) for p in writer.paths],
        "pgn": [str(p) for p in pgn_paths],
        "net": str(net_path),
    }
    atomic_write_text(out / f"{prefix}.stats.json", to_json(result) + "\n")
    emit(result, args.json, title="self-play")
    return 0


def player_name(config) -> str:
    """Both players of a self-play game in its PGN: the search that played."""
    search = config.search
    parts = [f"frugalzero sims={search.simulations}"]
    if search.gumbel:
        parts.append("gumbel")
    elif search.nscl != float("inf"):
        parts.append(f"nscl={search.nscl:g}")
    parts.append(f"temp={search.temperature:g}/{search.temperature_plies}")
    if search.temperature_decay_plies:
        parts.append(f"decay={search.temperature_decay_plies}")
    if search.final_temperature:
        parts.append(f"final_temp={search.final_temperature:g}")
    if not search.root_noise:
        parts.append("noise=off")
    return " ".join(parts)
