"""``frugalzero run``: train an engine end to end, or resume a run that was stopped."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="train an engine: generate -> train -> evaluate, until a budget (resumable)",
        description="Iterations of data generation, training and evaluation. Resume a stopped "
        "run with `frugalzero run --dir DIR` (its config.toml is reused; --set may change the "
        "budget).",
    )
    parser.add_argument("--preset", help="configs/NAME.toml or a TOML file (new runs)")
    parser.add_argument("--method", help="selfplay, contempt, gumbel, eps-explore, sfgames, pgn")
    parser.add_argument("--dir", help="run directory (default runs/PRESET-DATE)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. budget.iterations=3",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON summary object")
    parser.add_argument(  # Ray (issue 9): sets the config's `ray` field
        "--ray", metavar="ADDRESS", help="generate on Ray: 'local', or a head's HOST:6379"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from frugalzero.config import load_config, read_toml
    from frugalzero.errors import UserError
    from frugalzero.pipeline.config import RunConfig
    from frugalzero.pipeline.loop import RunLoop
    from frugalzero.report import to_json

    overrides = list(args.set)
    if args.method:
        overrides.append(f"method={args.method}")
    if args.ray:  # Ray (issue 9)
        overrides.append(f"ray={args.ray}")
    run_dir = Path(args.dir) if args.dir else None
    saved = run_dir / "config.toml" if run_dir else None
    if saved is not None and saved.exists():
        if args.preset:
            raise UserError(f"{run_dir} already holds a run; resume it without --preset")
        config = load_config(RunConfig, None, overrides, base=read_toml(saved))
    else:
        preset = args.preset or "demo"
        if run_dir is None:
            run_dir = Path("runs") / f"{Path(preset).stem}-{time.strftime('%Y%m%d-%H%M%S')}"
        config = load_config(RunConfig, preset, overrides)
    run_dir.mkdir(parents=True, exist_ok=True)
    console = Console(file=sys.stderr)
    loop = RunLoop(config, run_dir, console)
    loop.write_config()
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
    return 0
