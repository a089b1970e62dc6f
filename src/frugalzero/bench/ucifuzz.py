"""The UCI engine fuzzed: a seeded run of random commands against ``frugalzero uci``.

Random interleavings of ``position``, ``go`` (every limit, hostile numbers), ``stop``,
``ponderhit``, ``isready``, ``setoption`` (garbage, hostile values for every listed option, and
option changes interleaved with searches: sane new values of ``Threads``, ``BatchSize``,
``NNCacheSize`` … set while one runs, then ``isready`` and a search under them),
``ucinewgame``, garbage, ``quit`` and the end of input (``frugalzero.uci.fuzz``), checked after
every sequence: one ``bestmove`` per ``go`` (those before ``quit`` too), ``readyok`` within
``--ready-s``, the engine alive until ``quit`` or the end of its input, and the RSS of the
engine and its inference processes under its start plus ``RamLimitMb``. Not a speed figure
but a soak: its figures (commands, ``go``s, ``bestmove``s, missing and extra ones, the
slowest ``readyok``, the peak RSS against its limit, seconds) go to docs/reliability.md, and
each failure comes with its seed and the commands that reproduce it, shrunk.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from frugalzero.nn.shipped import NET_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--net", default="small", help=NET_HELP)
    parser.add_argument("--commands", type=int, default=100_000, help="commands to send in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--session-commands",
        type=int,
        default=5_000,
        help="commands per engine process before quit or the end of its input",
    )
    parser.add_argument(
        "--ram-limit-mb", type=int, default=512, help="RamLimitMb set on the engine"
    )
    parser.add_argument(
        "--ready-s", type=float, default=1.0, help="seconds within which isready is answered"
    )
    parser.add_argument("--max-failures", type=int, default=3, help="failures before the run stops")
    parser.add_argument(
        "--shrink-tries",
        type=int,
        default=12,
        help="fresh engines a failure's commands may be replayed on to shrink them",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    from frugalzero.runtime.interpreter import own_code_env
    from frugalzero.runtime.progress import progress_bar
    from frugalzero.uci.fuzz.driver import Bounds
    from frugalzero.uci.fuzz.run import FuzzSettings, fuzz

    command = [sys.executable, "-m", "frugalzero", "uci", "--net", args.net]
    settings = FuzzSettings(
        command,
        args.seed,
        args.commands,
        session_commands=args.session_commands,
        ram_limit_mb=args.ram_limit_mb,
        bounds=Bounds(ready_s=args.ready_s),
        max_failures=args.max_failures,
        shrink_tries=args.shrink_tries,
        env=own_code_env(),
    )
    with progress_bar("uci fuzz", "count", "elapsed", "remaining") as bar:
        task = bar.add_task("fuzz", total=args.commands)
        report = fuzz(settings, lambda done: bar.update(task, completed=done))
    return {
        "engine": f"frugalzero uci --net {args.net}",
        **report.as_dict(),
        "readyok_bound_s": args.ready_s,
        "ok": not report.failures,
    }
