"""search-contempt's mechanism on one frozen net: what its self-play data is made of, beside
PUCT's, and beside PUCT made as decisive by a hotter move temperature.

    .venv/bin/python benchmarks/mechanism.py                 # the study: 7 settings x 500 games
    .venv/bin/python benchmarks/mechanism.py --markdown      # its table, for CONTEMPT.md
    .venv/bin/python benchmarks/mechanism.py --recount       # the table again, from the PGN

Every setting plays ``--games`` self-play games with the same net (``--net``, the shipped
``small`` by default), search size (``--simulations``) and seed, as a training run's
generation would (``frugalzero.selfplay.play.run_selfplay``: root noise, the training
temperature, resignation), and differs from ``puct`` in one thing:

* ``puct``: PUCT, AlphaZero's root noise, temperature 1 for 30 plies;
* ``contempt-K``: the same with search-contempt at N_scl = K (``search.nscl``); at K >= the
  simulations no node of the opponent's gets past K visits, so ``contempt-32`` at 32
  simulations is PUCT again: the control;
* ``puct-matched``: PUCT with its move temperature moved until its (W+L)/D is contempt-5's,
  found by bisecting ``search.temperature`` (geometrically, between 1 and
  ``--match-max-temperature``, or between ``--match-min-temperature`` and 1 when contempt-5's
  games are less decisive than PUCT's at 1) over ``--match-rounds`` rounds of
  ``--match-games`` games, each round recorded. The temperature rather than
  ``temperature_plies``: it keeps the plies that are randomised (the first 30, as in
  training) and changes how random they are, so the matched setting differs from ``puct``
  in one number and leaves the middlegame, where search-contempt acts, to the search. A
  round's (W+L)/D is a noisy measure: the bisection finds a temperature within its noise,
  and the line records the rounds to judge by.

Each setting's statistics (``frugalzero.selfplay.stats.selfplay_stats``: W/D/L, (W+L)/D,
distinct openings and positions, decisive value targets, root KL, ...) are one JSON line of
``OUT/stats.jsonl`` with its resolved config, net and command; its games are PGN in ``OUT/NAME/``
(each game's root KL, full searches and resignation flags in its headers), from which
``--recount`` computes the table again. The study resumes: a setting in the file is skipped, a
setting killed midway is played again from its start (its partial games are dropped).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from frugalzero.config import load_config, to_dict
from frugalzero.data.pgnwriter import PgnWriter, record_to_pgn
from frugalzero.data.records import GameRecord, PlyTarget, one_hot
from frugalzero.output import to_json
from frugalzero.results import VALUE
from frugalzero.runtime.files import atomic_write_text
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.stats import FULL_SEARCHES, KL_PLIES, KL_SUM, selfplay_stats

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "mechanism"
STATS = "stats.jsonl"
CONTEMPT = {"contempt-2": 2.0, "contempt-5": 5.0, "contempt-10": 10.0, "contempt-32": 32.0}
SETTINGS = ("puct", *CONTEMPT, "puct-matched")
MATCH_TARGET = "contempt-5"
EXTRA_HEADERS = {
    KL_SUM: "FzKlSum",
    KL_PLIES: "FzKlPlies",
    FULL_SEARCHES: "FzFullSearches",
    "resign": "FzResign",
    "would_resign": "FzWouldResign",
}
"""The record's ``extra`` that the statistics read, kept as PGN headers (``record_to_pgn``
writes the termination and opening itself)."""
TRAINED = PlyTarget(*one_hot(0))
"""A recounted game's target: the PGN holds which positions had one, not the policy, and the
statistics only count them."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=500, help="games per setting (500)")
    parser.add_argument("--simulations", type=int, default=32, help="simulations a move (32)")
    parser.add_argument("--concurrent", type=int, default=64, help="games at once (64)")
    parser.add_argument("--net", default="small", help="shipped net name or file ('small')")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder ({OUT})")
    parser.add_argument(
        "--settings", default=",".join(SETTINGS), help=f"comma-separated, of {', '.join(SETTINGS)}"
    )
    parser.add_argument("--seed", type=int, default=0, help="every setting's seed (0)")
    parser.add_argument("--match-rounds", type=int, default=4, help="bisection rounds (4)")
    parser.add_argument("--match-games", type=int, default=300, help="games a round (300)")
    parser.add_argument(
        "--match-max-temperature", type=float, default=4.0, help="bisection's upper bound (4)"
    )
    parser.add_argument(
        "--match-min-temperature",
        type=float,
        default=0.25,
        help="bisection's lower bound, used when contempt-5 is less decisive than puct (0.25)",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="any SelfPlayConfig field"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print the recorded table as markdown, no play"
    )
    parser.add_argument(
        "--recount", action="store_true", help="the table computed again from the PGN, no play"
    )
    args = parser.parse_args(argv)
    args.settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    unknown = [s for s in args.settings if s not in SETTINGS]
    if unknown:
        parser.error(f"unknown settings {', '.join(unknown)}; known: {', '.join(SETTINGS)}")
    if min(args.games, args.simulations, args.concurrent, args.match_games) < 1:
        parser.error("--games, --simulations, --concurrent and --match-games must be >= 1")
    if args.match_rounds < 0 or not args.match_max_temperature > 1.0:
        parser.error("--match-rounds must be >= 0 and --match-max-temperature > 1")
    if not 0.0 < args.match_min_temperature < 1.0:
        parser.error("--match-min-temperature must be in (0, 1)")
    return args


# -- the record ---------------------------------------------------------------------------------


def read_lines(out: Path) -> dict[str, dict]:
    """The settings (and bisection rounds) already played, by name."""
    path = out / STATS
    if not path.is_file():
        return {}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {line["setting"]: line for line in lines}


def write_line(out: Path, line: dict) -> None:
    """Add ``line`` to the stats file, the whole file rewritten atomically (a kill leaves the
    old file or the new one)."""
    path = out / STATS
    old = path.read_text() if path.is_file() else ""
    atomic_write_text(path, old + to_json(line) + "\n")


def commit() -> str:
    try:
        run = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
        return run.stdout.strip()
    except OSError:
        return ""


def pgn_text(record: GameRecord, player: str) -> str:
    """A game as PGN with round "?" (``PgnWriter.add_text`` numbers it) and the headers the
    statistics need."""
    game = record_to_pgn(record, "?", player)
    for key, header in EXTRA_HEADERS.items():
        if key in record.extra:
            game.headers[header] = record.extra[key]
    return f"{game}\n\n"


def pgn_records(folder: Path) -> list[GameRecord]:
    """A setting's games back from its PGN, as much of each record as the statistics read."""
    records = []
    for path in sorted(folder.glob("*.pgn")):
        with open(path, encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                nodes = list(game.mainline())
                headers = game.headers
                extra = {key: headers[h] for key, h in EXTRA_HEADERS.items() if h in headers}
                extra["termination"] = headers.get("Termination", "")
                records.append(
                    GameRecord(
                        start_fen=game.board().fen(),
                        moves=[node.move.uci() for node in nodes],
                        targets=[None if n.comment == "opening" else TRAINED for n in nodes],
                        result=VALUE.get(headers.get("Result", "*")),
                        method="pgn",
                        extra=extra,
                    )
                )
    return records


# -- playing ------------------------------------------------------------------------------------


def base_config(args: argparse.Namespace) -> SelfPlayConfig:
    """The self-play every setting starts from: ``--set`` values, then the study's own."""
    config = load_config(SelfPlayConfig, overrides=args.set)
    search = dataclasses.replace(config.search, simulations=args.simulations)
    return dataclasses.replace(
        config, games=args.games, concurrent=args.concurrent, seed=args.seed, search=search
    )


def setting_config(base: SelfPlayConfig, name: str, temperature: float | None = None):
    """``base`` changed in the one thing setting ``name`` changes."""
    search = dataclasses.replace(base.search, nscl=CONTEMPT.get(name, math.inf))
    if temperature is not None:
        search = dataclasses.replace(search, temperature=temperature)
    return dataclasses.replace(base, search=search)


def play(args: argparse.Namespace, name: str, config: SelfPlayConfig, **fields: Any) -> dict:
    """Play setting ``name`` (its partial games from a killed run dropped first), keep its
    games as PGN in ``OUT/NAME/``, and record its line."""
    from frugalzero.nn.shipped import resolve_net_path
    from frugalzero.selfplay.cli import player_name
    from frugalzero.selfplay.play import run_selfplay

    net = resolve_net_path(args.net.removeprefix("net:"))
    folder, partial = args.out / name, args.out / f"{name}.partial"
    for stale in (folder, partial):
        if stale.exists():
            shutil.rmtree(stale)
    player = player_name(config)
    writer = PgnWriter(partial, name, per_file=1000, player=player)
    records: list[GameRecord] = []

    def on_game(record: GameRecord) -> None:
        records.append(record)
        writer.add_text(pgn_text(record, player))

    def progress(done: int) -> None:
        if done % 50 == 0 or done == config.games:
            print(f"  {name}: {done}/{config.games} games", file=sys.stderr, flush=True)

    started = time.perf_counter()
    run = run_selfplay(net, config, on_game, progress)
    writer.close()
    partial.rename(folder)
    line = {
        "setting": name,
        **fields,
        **selfplay_stats(records),
        "simulations_per_s": round(run.simulations / max(run.seconds, 1e-9), 1),
        "seconds": round(time.perf_counter() - started, 1),
        "net": str(args.net),
        "net_id": records[0].net_id if records else "",
        "pgn": name,  # the folder beside the stats file
        "config": to_dict(config),
        "command": " ".join(sys.argv),
        "commit": commit(),
    }
    write_line(args.out, line)
    return line


def check_same_study(out: Path, line: dict, config: SelfPlayConfig, net: str) -> None:
    """Refuse a recorded line played at another size or with another net: a resumed study
    must not mix them."""
    old = line.get("config", {})
    if (
        line.get("net") != net
        or old.get("games") != config.games
        or old.get("search", {}).get("simulations") != config.search.simulations
    ):
        raise SystemExit(
            f"{out / STATS} holds {line['setting']} played at another size or with another "
            "net; use another --out"
        )


def ratio(line: dict) -> float:
    value = line["w_plus_l_over_d"]
    return math.inf if value in (None, "inf") else float(value)


def matched(args: argparse.Namespace, base: SelfPlayConfig, done: dict[str, dict]) -> dict:
    """puct-matched: bisect the move temperature on rounds of ``--match-games`` games until
    PUCT's (W+L)/D is contempt-5's, then play the study's games at the bisection's answer."""
    target_line = done.get(MATCH_TARGET)
    if target_line is None:
        raise SystemExit(f"puct-matched needs {MATCH_TARGET} played first (--settings)")
    check_same_study(args.out, target_line, base, args.net)
    target = ratio(target_line)
    # the (W+L)/D of PUCT grows with its temperature: bisect above 1 when contempt-5 is more
    # decisive than PUCT at 1, below it when it is less (a strong net's short searches with
    # resignation are decisive already: net:small at 32 simulations, 11.5 against 9.4)
    puct = done.get("puct")
    if puct is not None and target < ratio(puct):
        low, high = args.match_min_temperature, 1.0
    else:
        low, high = 1.0, args.match_max_temperature
    rounds = []
    for r in range(1, args.match_rounds + 1):
        temperature = math.sqrt(low * high)
        name = f"puct-matched-round-{r}"
        round_config = dataclasses.replace(
            setting_config(base, "puct", temperature), games=args.match_games
        )
        line = done.get(name)
        if line is not None:
            check_same_study(args.out, line, round_config, args.net)
        else:
            print(f"{name}: temperature {temperature:.3f}", file=sys.stderr)
            line = play(args, name, round_config, kind="round", temperature=temperature)
        rounds.append(
            {k: line[k] for k in ("temperature", "games", "wdl", "w_plus_l_over_d", "setting")}
        )
        if ratio(line) < target:
            low = temperature
        else:
            high = temperature
    temperature = math.sqrt(low * high)
    config = setting_config(base, "puct-matched", temperature)
    fields = {"kind": "setting", "temperature": temperature, "target": target, "rounds": rounds}
    return play(args, "puct-matched", config, **fields)


def run_study(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    base = base_config(args)
    for name in args.settings:
        done = read_lines(args.out)
        line = done.get(name)
        if line is not None:
            check_same_study(args.out, line, base, args.net)
            print(f"{name}: recorded, skipped", file=sys.stderr)
            continue
        print(f"{name}: {base.games} games", file=sys.stderr)
        if name == "puct-matched":
            matched(args, base, done)
        else:
            config = setting_config(base, name)
            play(args, name, config, kind="setting", temperature=config.search.temperature)


# -- the table ----------------------------------------------------------------------------------

COLUMNS = (
    ("setting", "setting"),
    ("N_scl", "nscl"),
    ("τ", "temperature"),
    ("games", "games"),
    ("W/D/L", "wdl"),
    ("(W+L)/D", "w_plus_l_over_d"),
    ("openings (10 plies)", "distinct_opening_share"),
    ("positions /1000", "distinct_positions_per_1000"),
    ("decisive targets", "decisive_targets"),
    ("root KL", "root_kl"),
    ("plies", "mean_length"),
)


def cell(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key == "wdl":
        return "-".join(str(x) for x in value)
    if key == "nscl":
        return "∞" if value in (math.inf, "inf") else f"{float(value):g}"
    if key == "w_plus_l_over_d":
        return "∞" if value in (math.inf, "inf") else f"{float(value):.2f}"
    if key in ("distinct_opening_share", "decisive_targets"):
        return f"{100 * float(value):.1f}%"
    if key in ("temperature", "root_kl"):
        return f"{float(value):.3f}"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def table_rows(lines: dict[str, dict]) -> list[list[str]]:
    rows = []
    for name in SETTINGS:
        line = lines.get(name)
        if line is None:
            continue
        line = {**line, "nscl": line.get("config", {}).get("search", {}).get("nscl")}
        rows.append([cell(key, line.get(key)) for _, key in COLUMNS])
    return rows


def table(lines: dict[str, dict], markdown: bool) -> str:
    heads = [head for head, _ in COLUMNS]
    rows = table_rows(lines)
    if markdown:
        out = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [heads, *rows])


def recount(out: Path, lines: dict[str, dict]) -> dict[str, dict]:
    """Every recorded setting's statistics again, from its PGN alone (the config and
    temperature from its line)."""
    again = {}
    for name, line in lines.items():
        records = pgn_records(out / line["pgn"])
        again[name] = {**line, **selfplay_stats(records)}
    return again


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.recount and not args.markdown:
        run_study(args)
    lines = read_lines(args.out)
    if args.recount:
        lines = recount(args.out, lines)
    print(table(lines, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
