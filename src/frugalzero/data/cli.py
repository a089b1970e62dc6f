"""``frugalzero import-pgn`` (PGN games to shards) and ``frugalzero shards`` (inspect, verify)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    imp = subparsers.add_parser(
        "import-pgn",
        help="turn PGN games into training shards (one record per played move)",
        description="Stream PGN files of any size (also .gz, .bz2, .xz) into shards with "
        "several processes. Games that cannot be used are skipped, counted with their reason "
        "and number, and listed in OUT/pgn-*-skipped.tsv.",
    )
    imp.add_argument("files", nargs="+", metavar="FILE.pgn")
    imp.add_argument("--out", required=True, help="directory for the shards")
    imp.add_argument(
        "--min-elo",
        type=int,
        default=0,
        help="keep games where both players' WhiteElo/BlackElo headers are at least this",
    )
    imp.add_argument("--workers", type=int, default=0, help="parsing processes; 0 = one per core")
    imp.add_argument("--json", action="store_true", help="print one JSON object")
    imp.set_defaults(handler=_import)

    info = subparsers.add_parser(
        "shards", help="list and verify the shards under directories (checksums included)"
    )
    info.add_argument("paths", nargs="+", metavar="DIR_OR_SHARD")
    info.add_argument("--window", type=int, default=0, help="also size this replay window")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(handler=_shards)


def _import(args: argparse.Namespace) -> int:
    from frugalzero.data.importer import import_pgn
    from frugalzero.errors import UserError
    from frugalzero.output import emit
    from frugalzero.runtime.lock import DirectoryLock

    if args.min_elo < 0 or args.workers < 0:
        raise UserError("--min-elo and --workers must not be negative")
    with DirectoryLock(args.out):
        summary = import_pgn(
            args.files, args.out, min_elo=args.min_elo, workers=args.workers, show_progress=True
        )
    damaged = len(summary["damaged_files"])
    if not args.json:
        summary = {k: v for k, v in summary.items() if k not in ("skipped_games", "files")}
        summary["damaged_files"] = damaged
    emit(summary, args.json, title="import-pgn")
    return 1 if damaged else 0


def _shards(args: argparse.Namespace) -> int:
    from frugalzero.data.selection import replay_window, select_all
    from frugalzero.data.shards import shard_paths
    from frugalzero.output import emit

    found = shard_paths(args.paths)
    selection = select_all(args.paths)
    methods: dict[str, int] = {}
    for part in selection:
        for name, count in part.shard.methods.items():
            methods[name] = methods.get(name, 0) + count
    size = sum(p.shard.size for p in selection)
    result = {
        "shards": len(selection),
        "damaged": len(found) - len(selection),
        "games": selection.games,
        "positions": selection.positions,
        "bytes": size,
        "bytes_per_position": round(size / max(1, selection.positions), 2),
        "games_by_method": methods,
    }
    if args.window:
        window = replay_window(selection, args.window)
        result["window_positions"] = window.positions
        result["window_games"] = window.games
        result["window_shards"] = len(window)
    emit(result, args.json, title="shards")
    return 1 if result["damaged"] else 0
