"""``frugalzero report RUN_DIR... [--out FILE]``."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="one self-contained HTML page of a run (or several runs overlaid)",
        description="Charts of where the time went, Elo with intervals, losses and data, the "
        "config, and a board viewer for the match games, in one HTML file that needs no "
        "network to view. `frugalzero run` writes RUN_DIR/report.html after every iteration.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories")
    parser.add_argument(
        "--out", help="the HTML file (default: RUN_DIR/report.html for one run, else report.html)"
    )
    parser.set_defaults(handler=_main)


def _main(args: argparse.Namespace) -> int:
    from frugalzero.layout import REPORT, RunLayout
    from frugalzero.report import write_report
    from frugalzero.runtime.files import check_destination

    runs = [Path(r) for r in args.runs]
    default = RunLayout(runs[0]).report if len(runs) == 1 else Path(REPORT)
    out = write_report(runs, check_destination(args.out or default))
    print(out)
    return 0
