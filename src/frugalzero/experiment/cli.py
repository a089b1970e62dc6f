"""``frugalzero experiment SPEC``: a paired, multi-seed comparison of data methods."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "experiment",
        help="compare data methods at equal compute: paired seeds, a verdict (resumable)",
        description="Run the arms of an experiment spec (configs/experiments/*.toml, "
        "docs/experiment.md) seed by seed, an iteration at a time, rate every kept net the same "
        "way and apply the spec's decision rule. Rerun the same command to resume it.",
    )
    parser.add_argument("spec", help="spec file, or a shipped spec's name (e.g. smoke)")
    parser.add_argument("--dir", help="experiment directory (default runs/experiments/NAME)")
    parser.add_argument(
        "--ray", metavar="ADDRESS", default="", help="generate on Ray: 'local' or HOST:6379"
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="also keep the record (spec, experiment.json, page, rating games) in DIR, "
        "updated after every step (e.g. benchmarks/results/experiments/NAME); a new --dir "
        "starts from the record's finished units",
    )
    parser.add_argument("--json", action="store_true", help="print experiment.json's verdict")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from frugalzero.experiment.runner import PAGE, Experiment
    from frugalzero.experiment.spec import load_spec, spec_path
    from frugalzero.experiment.summary import summary_table
    from frugalzero.output import to_json
    from frugalzero.runtime.progress import stderr_console

    spec = load_spec(args.spec)
    directory = Path(args.dir) if args.dir else Path("runs") / "experiments" / spec.name
    console = stderr_console()
    record = Path(args.record) if args.record else None
    experiment = Experiment(
        spec, spec_path(args.spec), directory, console, ray=args.ray, record=record
    )
    console.print(f"experiment {spec.name} in {directory}")
    results = experiment.run()
    if args.json:
        print(to_json(results.to_dict()["verdict"]), flush=True)
        return 0
    import sys

    from rich.console import Console

    # a log (not a terminal) gets the whole table: rich would fit it to 80 columns
    out = Console() if sys.stdout.isatty() else Console(width=160)
    out.print(summary_table(results))
    if results.verdict is not None:
        print(f"\n{results.verdict.text}")
    print(f"see it: {directory / PAGE} (open it in a browser)")
    return 0
