"""The ``frugalzero`` command. Each concern registers its own subcommands; handlers import
their heavy dependencies lazily so ``frugalzero --help`` stays instant."""

from __future__ import annotations

import argparse
import importlib
import sys

from frugalzero import __version__
from frugalzero.errors import UserError

# modules with register(subparsers); a part that is not built yet is simply absent
COMMANDS = [
    "frugalzero.pipeline.cli",
    "frugalzero.selfplay.cli",
    "frugalzero.expert.cli",
    "frugalzero.data.cli",
    "frugalzero.train.cli",
    "frugalzero.evaluate.cli",
    "frugalzero.uci",
    "frugalzero.nn.cli",
    "frugalzero.bench.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="frugalzero",
        description="Train AlphaZero-style chess engines on modest compute, and play them.",
    )
    parser.add_argument("--version", action="version", version=f"frugalzero {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UserError as exc:
        print(f"frugalzero: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("frugalzero: interrupted", file=sys.stderr)
        return 130
