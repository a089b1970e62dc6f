"""The ``frugalzero`` command. Each concern registers its own subcommands; handlers import
their heavy dependencies lazily so ``frugalzero --help`` stays instant."""

from __future__ import annotations

import argparse
import importlib
import sys

from frugalzero import __version__
from frugalzero.config_cli import CommandParser
from frugalzero.errors import UserError, os_error_line

# modules with register(subparsers)
COMMANDS = [
    "frugalzero.config_cli",
    "frugalzero.pipeline.cli",
    "frugalzero.experiment.cli",
    "frugalzero.selfplay.cli",
    "frugalzero.expert.cli",
    "frugalzero.data.cli",
    "frugalzero.train.cli",
    "frugalzero.evaluate.cli",
    "frugalzero.uci.cli",
    "frugalzero.nn.cli",
    "frugalzero.bench.cli",
    "frugalzero.report.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="frugalzero",
        description="Train AlphaZero-style chess engines on modest compute, and play them.",
    )
    parser.add_argument("--version", action="version", version=f"frugalzero {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UserError as exc:
        print(f"frugalzero: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the machine refused a file operation: say which, on what, why
        print(f"frugalzero: error: {os_error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("frugalzero: interrupted", file=sys.stderr)
        return 130
