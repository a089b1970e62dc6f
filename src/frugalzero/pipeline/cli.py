"""``frugalzero run``: train an engine end to end, or resume a run that was stopped."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from frugalzero.config_cli import add_config_flags, config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="train an engine: generate -> train -> evaluate, until a budget (resumable)",
        description="Iterations of data generation, training and evaluation. Resume a stopped "
        "run with `frugalzero run --dir DIR` (or the command that started it): its config.toml "
        "is the run, so a resume takes no preset, flag or --set that would change it (only "
        "--ray, where generation runs).",
        usage="frugalzero run [-h] [--config PRESET_OR_TOML] [--dir DIR] [--json] "
        "[--ray ADDRESS] [--SECTION.FIELD VALUE ...] [--set KEY=VALUE ...]",
    )
    parser.add_argument("--dir", help="run directory (default runs/PRESET-DATE)")
    parser.add_argument("--json", action="store_true", help="print one JSON summary object")
    parser.add_argument(  # sets the config's `ray` field
        "--ray", metavar="ADDRESS", help="generate on Ray: 'local', or a head's HOST:6379"
    )
    # every field of every section: long, but --help is where a setting is looked up
    add_config_flags(
        parser, "frugalzero.pipeline.config:RunConfig", skip=("ray",), config_aliases=("--preset",)
    )
    parser.set_defaults(handler=_run)


def run_config(args: argparse.Namespace):
    """(run directory, config) of ``frugalzero run``: a saved run's config.toml stands where a
    new run's preset (default: demo) would, and a preset given again (the command that started
    the run, rerun after Ctrl-C) is resolved as it was then. Whether that config is the saved
    run's own is ``RunLoop``'s check (``pipeline.identity``). A new run's files are checked
    here, before its directory is made (``pipeline.inputs``)."""
    from frugalzero.config import read_toml
    from frugalzero.layout import RunLayout
    from frugalzero.pipeline.inputs import check_inputs

    if args.ray:
        args.set.append(f"ray={args.ray}")
    run_dir = Path(args.dir) if args.dir else None
    if run_dir is not None and RunLayout(run_dir).is_run():
        if args.config:  # compared field by field with the saved one when the run opens
            return run_dir, config_from_args(args)
        saved = RunLayout(run_dir).config
        return run_dir, config_from_args(args, read_toml(saved) if saved.is_file() else {})
    args.config = args.config or "demo"
    if run_dir is None:
        run_dir = Path("runs") / f"{Path(args.config).stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    config = config_from_args(args)
    check_inputs(config)
    return run_dir, config


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from frugalzero.output import to_json
    from frugalzero.pipeline.loop import RunLoop
    from frugalzero.runtime.lock import DirectoryLock
    from frugalzero.runtime.progress import stderr_console

    run_dir, config = run_config(args)
    with DirectoryLock(run_dir):
        console = stderr_console()
        loop = RunLoop(config, run_dir, console, preset=args.config)
        resumed = loop.state.iteration or loop.state.step != "generate"
        console.print(
            f"{'resuming' if resumed else 'starting'} run {run_dir} "
            f"({config.method}, {config.net.arch})"
        )
        summary = loop.run()
    if args.json:
        print(to_json(summary), flush=True)
        return 0
    out = Console()
    if not out.is_terminal:
        out = Console(width=140)  # a piped table keeps its columns readable
    out.print(loop.table())
    final = loop.state.final
    for name, result in final.items():
        print(
            f"final net {name.replace('_', ' ')}: {result['wins']}-{result['draws']}-"
            f"{result['losses']} (score {100 * result['score']:.0f}%)"
        )
    print(f"\nplay the final net:  frugalzero uci --net {summary['final_net']}")
    print(f"rate it:             frugalzero ladder 'net:{summary['final_net']}?nodes=400'")
    if loop.layout.report.is_file():
        print(f"see the run:         {loop.layout.report} (open it in a browser)")
    return 0
