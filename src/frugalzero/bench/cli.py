"""``frugalzero bench WHAT``: speed measurements that print JSON.

Machines are noisy, so every benchmark measures its reference (matmul peak, raw network
throughput, ...) in the same run, interleaved round by round with the thing measured, and
reports medians of the per-round figures and of the per-round ratios.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import ModuleType

from frugalzero.bench import data, label, movegen, nn, selfplay, sfgames, train, uci, ucifuzz

# name -> module with add_arguments(parser) and run(args) -> dict
BENCHES: dict[str, ModuleType] = {
    "nn": nn,
    "selfplay": selfplay,
    "data": data,
    "label": label,
    "sfgames": sfgames,
    "train": train,
    "uci": uci,
    "uci-fuzz": ucifuzz,
    "movegen": movegen,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="measure speed; prints JSON with --json")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="WHAT")
    for name, module in BENCHES.items():
        sub = benches.add_parser(name, help=module.__doc__.strip().splitlines()[0])
        module.add_arguments(sub)
        sub.add_argument("--json", action="store_true", help="print one JSON object")
        sub.set_defaults(handler=_runner(name, module))


def _runner(name: str, module: ModuleType) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        from frugalzero.output import emit

        result = module.run(args)
        emit(result, args.json, title=f"bench {name}")
        return 0 if result.get("ok", True) else 1  # a check (uci-fuzz) that failed

    return handler
