"""``frugalzero match``, ``frugalzero elo``, ``frugalzero ladder`` and ``frugalzero games``."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from frugalzero.config_cli import add_config_flags, config_from_args

ENGINE_HELP = (
    "engine spec: net:PATH[?nodes=400], stockfish[?elo=1500|skill=5|nodes=..|depth=..], "
    "fairy[?skill=-20..20&movetime=..], glaurung[?nodes=..], uci:PATH[?Option=Value&..], random; "
    "tc=BASE+INC (seconds, e.g. net:default?tc=10+0.1) plays under a clock instead of a "
    "per-move limit"
)


def _add_match_options(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_flags(parser, "frugalzero.evaluate.match:MatchConfig", skip=skip)


def register(subparsers: argparse._SubParsersAction) -> None:
    match = subparsers.add_parser("match", help="play a match between two engines")
    match.add_argument("engine_a", metavar="A", help=ENGINE_HELP)
    match.add_argument("engine_b", metavar="B", help="the opponent, same syntax")
    _add_match_options(match)
    match.add_argument("--sprt", metavar="ELO0,ELO1", help="stop early by an SPRT of these bounds")
    match.add_argument("--alpha", type=float, default=0.05, help="SPRT false-positive rate")
    match.add_argument("--beta", type=float, default=0.05, help="SPRT false-negative rate")
    match.add_argument(
        "--resume",
        action="store_true",
        help="go on from this match's finished games in --pgn: play only the missing ones of "
        "--games, each from the opening it would have had",
    )
    match.set_defaults(handler=_match)

    elo = subparsers.add_parser("elo", help="maximum-likelihood ratings from PGN files")
    elo.add_argument("pgn", nargs="+", help="PGN files (any source)")
    elo.add_argument(
        "--anchor",
        action="append",
        default=[],
        metavar="NAME=ELO",
        help="hold a player at a rating (repeatable); default: the average is 0",
    )
    elo.add_argument("--json", action="store_true", help="print one JSON object")
    elo.set_defaults(handler=_elo)

    games = subparsers.add_parser(
        "games",
        help="results, decisiveness and repeated openings of a set of games (PGN)",
        description="Counts what search-contempt's paper reports: W/D/L from White's view with "
        "95%% intervals, (wins + losses) / draws, and the share of games whose first k plies "
        "another game also played. Unreadable or unfinished games are skipped and counted.",
    )
    games.add_argument("pgn", nargs="+", help="PGN files, or folders of them")
    games.add_argument("--plies", type=int, default=30, help="repeated-openings curve length")
    games.add_argument(
        "--player",
        help="count from this player's side (its name as in White/Black): wins, draws, losses "
        "in the games it played, whatever its colour",
    )
    games.add_argument("--json", action="store_true", help="print one JSON object")
    games.set_defaults(handler=_games)

    epd = subparsers.add_parser(
        "eval-epd",
        help="how often an engine plays a suite's best move (EPD bm), or label a suite",
        description="Each position of the EPD files is a new game for the engine; its move "
        "counts when it is one of the line's bm moves. net:default?nodes=1 is the raw policy. "
        "--write saves the engine's moves as bm, which labels held-out positions with a "
        "strong engine (e.g. stockfish?depth=12).",
    )
    epd.add_argument("epd", nargs="+", help="EPD files")
    epd.add_argument("--engine", required=True, help=ENGINE_HELP)
    epd.add_argument("--limit", type=int, default=0, help="first N positions of each file")
    epd.add_argument("--seats", type=int, default=0, help="positions at once (0: one per core)")
    epd.add_argument(
        "--write", metavar="OUT.epd", help="write the positions with the engine's moves as bm"
    )
    epd.add_argument("--json", action="store_true", help="print one JSON object")
    epd.set_defaults(handler=_eval_epd)

    ladder = subparsers.add_parser(
        "ladder", help="rate an engine against calibrated rungs (or --calibrate them)"
    )
    ladder.add_argument("engine", nargs="?", help=ENGINE_HELP)
    ladder.add_argument("--rungs", help="comma-separated rung specs (or indices) to use")
    ladder.add_argument("--games-per-rung", type=int, default=20, help="games per nearby rung")
    ladder.add_argument("--neighbours", type=int, default=3, help="rungs that get full games")
    ladder.add_argument("--table", help="calibration table (default: the shipped one)")
    ladder.add_argument("--list", action="store_true", help="show the rungs and exit")
    ladder.add_argument("--calibrate", action="store_true", help="run the calibration")
    ladder.add_argument("--state", default="ladder-calibration", help="calibration folder")
    ladder.add_argument("--out", default="ladder.json", help="where --calibrate writes the table")
    ladder.add_argument(
        "--games-per-pair", type=int, default=100, help="calibration games between neighbours"
    )
    ladder.add_argument(
        "--max-minutes", type=float, default=0.0, help="stop the calibration after this long"
    )
    ladder.add_argument(
        "--table-only",
        action="store_true",
        help="with --calibrate: remake the table from the games in --state, play none",
    )
    ladder.add_argument(
        "--add-rung",
        metavar="TABLE",
        help="after rating ENGINE, write the table with it as a new rung to TABLE (the other "
        "rungs held at their ratings; its games against each rung go with it)",
    )
    ladder.add_argument(
        "--resume",
        action="store_true",
        help="count the engine's games already in --pgn and play only those still missing "
        "(a killed rating goes on; more --games-per-rung narrows a finished one)",
    )
    _add_match_options(ladder, skip=("games",))  # the ladder decides games per rung
    ladder.set_defaults(handler=_ladder)


def _parse_sprt(text: str, alpha: float, beta: float):
    from frugalzero.errors import UserError
    from frugalzero.evaluate.sprt import SprtConfig

    try:
        elo0, elo1 = (float(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--sprt {text!r}: expected ELO0,ELO1, e.g. 0,10") from None
    if elo1 <= elo0 or not (0 < alpha < 0.5 and 0 < beta < 0.5):
        raise UserError("--sprt: need ELO0 < ELO1 and 0 < alpha, beta < 0.5")
    return SprtConfig(elo0, elo1, alpha, beta)


def _match(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from frugalzero.errors import UserError
    from frugalzero.evaluate.match import check_inputs, play_match
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.output import emit
    from frugalzero.runtime.files import check_destination

    config = config_from_args(args)
    if args.resume and not config.pgn:
        raise UserError("match --resume: name the earlier match's games with --pgn FILE")
    specs = [parse_spec(args.engine_a), parse_spec(args.engine_b)]
    check_inputs(specs, config)  # before any engine or net starts
    if config.pgn:
        check_destination(config.pgn)  # before the games
    if args.sprt:
        config = replace(config, sprt=_parse_sprt(args.sprt, args.alpha, args.beta))
    resumed = _resumed_match(config, *specs) if args.resume else None
    result = play_match(*specs, config, progress=True, resumed=resumed)
    emit(result.summary(), args.json, title=f"{result.engine_a} vs {result.engine_b}")
    return 0


def _resumed_match(config, spec_a, spec_b):
    """The match's games already in ``config.pgn``, said in a line on stderr (none when the
    file is not there yet: the match starts from its first game)."""
    from frugalzero.evaluate.resume import Resumed, resumed_games
    from frugalzero.runtime.progress import stderr_console

    console = stderr_console()
    if not Path(config.pgn).is_file():
        console.print(
            f"note: no {config.pgn} yet: the match starts from its first game", markup=False
        )
        return Resumed(config.pgn)
    resumed = resumed_games(config.pgn, spec_a, spec_b, config.event)
    kept = resumed.within(config.games)
    notes = [
        f"{resumed.other} of other players or events passed over" if resumed.other else "",
        f"{resumed.skipped} unfinished or unreadable skipped" if resumed.skipped else "",
        f"{len(resumed.games) - kept} past --games {config.games} left out"
        if len(resumed.games) > kept
        else "",
        f"the last, cut off mid-write, set apart in {config.pgn}.torn"
        if resumed.torn_at is not None
        else "",
    ]
    notes = [note for note in notes if note]
    console.print(
        f"resumed {kept} of {config.games} games from {config.pgn}"
        + (f" ({'; '.join(notes)})" if notes else ""),
        markup=False,
    )
    return resumed


def _elo(args: argparse.Namespace) -> int:
    from frugalzero.errors import UserError
    from frugalzero.evaluate.elo import mle_ratings
    from frugalzero.evaluate.pgn import PgnStats, read_results
    from frugalzero.output import emit
    from frugalzero.runtime.progress import stderr_console

    anchors = {}
    for text in args.anchor:
        name, sep, value = text.rpartition("=")
        try:
            anchors[name] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise UserError(f"--anchor {text!r}: expected NAME=ELO")
    stats = PgnStats()
    games = list(read_results(args.pgn, stats))
    if not games:
        raise UserError(f"no finished games in {', '.join(args.pgn)}")
    unknown = sorted(set(anchors) - {p for g in games for p in g[:2]})
    if unknown:
        raise UserError(f"--anchor {unknown[0]!r}: no such player in the games")
    ratings = mle_ratings(games, anchors)
    if ratings.unbounded:
        stderr_console().print(
            f"note: {', '.join(ratings.unbounded)} won or lost every game against the rest, so "
            f"their exact ratings are infinite; added {ratings.prior_draws:g} virtual draw to each "
            "of their pairings (BayesElo's remedy; nobody else's rating moves)"
        )
    if len(ratings.groups) > 1:
        stderr_console().print(
            f"note: the games form {len(ratings.groups)} separate groups of players; ratings "
            "compare only within a group"
        )
    order = sorted(ratings.players, key=lambda n: -ratings.players[n].elo)
    out = {
        "ratings": {
            name: {
                "elo": round(p.elo, 1),
                "ci95": [round(p.ci95[0], 1), round(p.ci95[1], 1)],
                "games": p.games,
                "score": round(p.score, 4),
            }
            for name in order
            for p in [ratings.players[name]]
        },
        "los": {a: round(ratings.los(a, b), 4) for a, b in zip(order, order[1:])},
        "games": stats.read,
        "skipped": stats.skipped,
        "anchors": anchors,
        "prior_draws": ratings.prior_draws,
        "groups": len(ratings.groups),
    }
    if args.json:
        emit(out, True)
    else:
        _ratings_table(out, order)
    return 0


def _ratings_table(out: dict, order: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{out['games']} games ({out['skipped']} skipped)")
    for column in ("#", "player", "Elo", "95% interval", "games", "score", "LOS next"):
        if column == "player":
            table.add_column(column, overflow="fold")
        else:
            table.add_column(column, justify="right", no_wrap=True)
    for rank, name in enumerate(order, 1):
        r = out["ratings"][name]
        lo, hi = r["ci95"]
        table.add_row(
            str(rank),
            name,
            _elo_text(r["elo"]),
            f"{_elo_text(lo)} .. {_elo_text(hi)}",
            str(r["games"]),
            f"{100 * r['score']:.1f}%",
            f"{100 * out['los'][name]:.1f}%" if name in out["los"] else "",
        )
    Console(file=sys.stdout).print(table)


def _games(args: argparse.Namespace) -> int:
    from frugalzero.errors import UserError
    from frugalzero.evaluate.gameset import game_set
    from frugalzero.output import emit

    if args.plies < 1:
        raise UserError("--plies must be at least 1")
    out = game_set(args.pgn, args.player or "", args.plies)
    if not args.json:
        out.pop("repeated_by_ply")
    emit(out, args.json, title="games")
    return 0


def _eval_epd(args: argparse.Namespace) -> int:
    import asyncio

    from frugalzero.errors import UserError
    from frugalzero.evaluate.epd import best_moves, read_epd, write_epd
    from frugalzero.evaluate.match import check_inputs
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.output import emit
    from frugalzero.runtime.cores import available_cores
    from frugalzero.runtime.files import check_destination
    from frugalzero.stats import wilson

    check_inputs([parse_spec(args.engine)])  # before its net loads or its process starts
    if args.write:
        check_destination(args.write)  # before the engine's moves are searched
    positions, skipped = [], 0
    for name in args.epd:
        found, bad = read_epd(Path(name), args.limit)
        positions += found
        skipped += bad
    if not positions:
        raise UserError(f"no readable positions in {', '.join(args.epd)}")
    seats = args.seats or available_cores()
    moves = asyncio.run(best_moves(args.engine, [p.board for p in positions], seats))
    graded = [(p, m) for p, m in zip(positions, moves, strict=True) if p.best]
    solved = sum(m in p.best for p, m in graded)
    low, high = wilson(solved, len(graded))
    out = {
        "engine": args.engine,
        "positions": len(positions),
        "skipped": skipped,
        "with_bm": len(graded),
        "solved": solved,
        "top1_pct_ci95": [
            round(100 * solved / max(1, len(graded)), 1),
            round(100 * low, 1),
            round(100 * high, 1),
        ],
    }
    if args.write:
        write_epd(Path(args.write), positions, moves)
        out["written"] = args.write
    emit(out, args.json, title="eval-epd")
    return 0


def _elo_text(value: float) -> str:
    return f"{value:.0f}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def _ladder(args: argparse.Namespace) -> int:
    from frugalzero.errors import UserError

    if args.calibrate:
        return _calibrate(args)
    from frugalzero.evaluate.ladder import load_table

    table = load_table(args.table)
    if args.list:
        return _list_rungs(table, args.json)
    if not args.engine:
        raise UserError("ladder: name an ENGINE to rate (or --list, or --calibrate)")
    return _climb(args, table)


LIST_META = ("date", "command", "games", "partial", "unmeasured", "added")


def _list_rungs(table, as_json: bool) -> int:
    from frugalzero.output import emit
    from frugalzero.stats import Z95

    out: dict = {}
    for r in table.rungs:
        out[r.name] = {"elo": r.elo, "sigma": r.sigma, "games": r.games}
        added = table.added.get(r.name)
        if added:  # rated on the calibrated rungs afterwards: against whom, how
            out[r.name]["added"] = added
    if not as_json:
        from rich.console import Console
        from rich.table import Table

        view = Table(title="ladder rungs (Elo, 95% half-width, games)")
        for column in ("rung", "Elo", "±", "games", "rated"):
            view.add_column(
                column, overflow="fold", justify="left" if column == "rung" else "right"
            )
        for name, row in out.items():
            added = row.get("added")
            how = "calibration"
            if added:
                how = "added: " + ", ".join(
                    f"{g['games']} vs {rung} ({100 * g['score']:.0f}%)"
                    for rung, g in added["against"].items()
                )
            view.add_row(
                name, f"{row['elo']:.0f}", f"{Z95 * row['sigma']:.0f}", str(row["games"]), how
            )
        Console(file=sys.stdout).print(view)
        emit({k: table.meta[k] for k in LIST_META if k in table.meta}, False)
        return 0
    emit(
        {"rungs": out, **{k: table.meta[k] for k in LIST_META if k in table.meta}},
        as_json,
    )
    return 0


def _climb(args: argparse.Namespace, table) -> int:
    from frugalzero.errors import UserError
    from frugalzero.evaluate.ladder import (
        LadderConfig,
        resumed_tallies,
        run_ladder,
        select_rungs,
    )
    from frugalzero.evaluate.match import check_inputs, play_match
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.output import emit
    from frugalzero.runtime.files import check_destination
    from frugalzero.runtime.progress import stderr_console

    if args.add_rung and (added := parse_spec(args.engine).name) in table.by_name():
        raise UserError(f"ladder --add-rung: {added} is a rung already")
    rungs = select_rungs(table, args.rungs.split(",") if args.rungs else None)
    adjudication = table.meta.get("adjudication")
    base = {"adjudication": adjudication} if adjudication else {}
    match = config_from_args(args, base)
    # every rung it may play, before the first game: not a missing engine an hour in
    check_inputs([parse_spec(args.engine), *(parse_spec(r.name) for r in rungs)], match)
    for path in (match.pgn, args.add_rung):
        if path:
            check_destination(path)
    config = LadderConfig(games_per_rung=args.games_per_rung, neighbours=args.neighbours)
    console = stderr_console()
    resumed = None
    if args.resume:
        if not match.pgn:
            raise UserError("ladder --resume: name the earlier rating's games with --pgn FILE")
        if Path(match.pgn).is_file():
            resumed, stats = resumed_tallies([match.pgn], args.engine, rungs)
            games = sum(t.games for t in resumed.values())
            console.print(
                f"resumed {games} games of {args.engine} from {match.pgn}"
                + (f" ({stats.skipped} unfinished or unreadable skipped)" if stats.skipped else "")
            )

    def play(a, b, cfg):
        return play_match(a, b, cfg, progress=True)

    def step(rung: str, tally, guess: float) -> None:
        console.print(
            f"  vs {rung}: +{tally.wins} ={tally.draws} -{tally.losses}  estimate {guess:.0f}"
        )

    result = run_ladder(args.engine, rungs, config, match, play=play, on_step=step, resumed=resumed)
    summary = result.summary()
    if args.add_rung:
        _add_rung(args, result, match.pgn)
        summary["added_to"] = args.add_rung
    if args.json:
        emit(summary, True)
        return 0
    _rung_table(summary["rungs"])
    emit({k: v for k, v in summary.items() if k != "rungs"}, False, title=result.engine)
    return 0


def _add_rung(args: argparse.Namespace, result, pgn: str | None) -> None:
    import json

    from frugalzero.evaluate.ladder import table_path, with_rung
    from frugalzero.output import to_json
    from frugalzero.runtime.files import atomic_write_text

    source = Path(args.table) if args.table else table_path()
    data = json.loads(source.read_text(encoding="utf-8"))
    command = (
        f"frugalzero ladder '{args.engine}' --games-per-rung {args.games_per_rung} "
        f"--neighbours {args.neighbours} --add-rung TABLE"
    )
    table = with_rung(data, result, command, pgn)
    atomic_write_text(Path(args.add_rung), to_json(table, indent=1) + "\n")


def _rung_table(rungs: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="games against the rungs")
    table.add_column("rung", overflow="fold")
    for column in ("rung Elo", "games", "+", "=", "-", "score", "LOS"):
        table.add_column(column, justify="right", no_wrap=True)
    for name, r in rungs.items():
        table.add_row(
            name,
            f"{r['elo']:.0f}",
            str(r["games"]),
            str(r["wins"]),
            str(r["draws"]),
            str(r["losses"]),
            f"{100 * r['score']:.1f}%",
            f"{100 * r['los']:.1f}%",
        )
    Console(file=sys.stdout).print(table)


def _calibrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from frugalzero.errors import UserError
    from frugalzero.evaluate.calibrate import (
        RUNGS,
        STATE_FILE,
        CalibrationConfig,
        make_table,
        run_calibration,
    )
    from frugalzero.evaluate.match import check_inputs
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.output import emit, to_json
    from frugalzero.runtime.files import atomic_write_text, check_destination

    check_destination(args.out)  # before hours of games
    if not args.table_only:  # every rung's engine, before the first game
        check_inputs([parse_spec(name) for name in RUNGS])
    config = CalibrationConfig(
        games=args.games_per_pair,
        far_games=max(2, 2 * (args.games_per_pair // 5)),
        concurrency=config_from_args(args).concurrency,
    )
    if args.table_only and not (Path(args.state) / STATE_FILE).is_file():
        raise UserError(f"{args.state}: no calibration {STATE_FILE} to make a table from")
    state, complete = run_calibration(
        args.state, config, max_minutes=args.max_minutes, play=not args.table_only
    )
    command = f"frugalzero ladder --calibrate --games-per-pair {args.games_per_pair}"
    table = make_table(state, config, command)
    atomic_write_text(Path(args.out), to_json(table, indent=1) + "\n")
    rungs = {
        r["name"]: f"{r['elo']:.0f} ± {r['ci95'][1] - r['elo']:.0f} ({r['games']} games)"
        for r in table["rungs"]
    }
    out = {
        "complete": complete,
        "table": args.out,
        "games": table["games"],
        "unmeasured": table["unmeasured"],
        "rungs": rungs,
    }
    emit(out, args.json)
    return 0
