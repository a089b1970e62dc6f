"""``frugalzero uci``: the protocol loop with our network searcher, on stdin and stdout."""

from __future__ import annotations

import argparse
import sys

from frugalzero.nn.shipped import DEFAULT_NET, NET_HELP


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("uci", help="play as a UCI engine on stdin/stdout")
    parser.add_argument("--net", default=DEFAULT_NET, help=NET_HELP)
    parser.add_argument(
        "--nodes",
        metavar="N",
        help="nodes per move without a clock (the Nodes option's default; 1..10,000,000; 400)",
    )
    parser.add_argument(
        "--ram-limit-mb",
        metavar="MB",
        help="memory the search tree and the evaluation cache may hold, in MB (the "
        "RamLimitMb option's default): at the limit the search stops growing and plays what "
        "it has; by default a quarter of the machine's memory, which leaves room for a second "
        "engine, the GUI and the system",
    )
    parser.add_argument(
        "--precision",
        metavar="P",
        help="the network's precision (the Precision option's default): auto (bf16 on a CPU "
        "that has it, fp16 on CUDA), fp32, bf16, fp16, or int8 on a CPU (1.7x bf16's speed, "
        "not yet as strong; the first start with a net compiles it, about 30 s, then it is "
        "loaded from the machine's cache)",
    )
    parser.set_defaults(handler=_main)


def _main(args: argparse.Namespace) -> int:
    from frugalzero.uci.protocol import UciEngine
    from frugalzero.uci.searcher import DEFAULT_NODES, NetSearcher, searcher_options

    options = {option.name: option for option in searcher_options(DEFAULT_NODES)}
    nodes = _flag(args.nodes, options["Nodes"], "--nodes")
    ram_limit_mb = _flag(args.ram_limit_mb, options["RamLimitMb"], "--ram-limit-mb")
    precision = _flag(args.precision, options["Precision"], "--precision", kind=str)
    searcher = NetSearcher(
        args.net, default_nodes=nodes, ram_limit_mb=ram_limit_mb, precision=precision
    )
    listed = searcher_options(nodes, ram_limit_mb, precision)
    engine = UciEngine(searcher, sys.stdin, sys.stdout, listed)
    engine.run()
    searcher.close()
    return 1 if engine.failed else 0


def _flag(given: str | None, option, flag: str, kind=int):
    """A flag's value checked as its option checks ``setoption`` (one range, or one set of
    choices, for both), or the option's default when the flag is not given."""
    from frugalzero.errors import UserError

    if given is None:
        return kind(option.default)
    try:
        return kind(option.check(given))
    except ValueError as exc:
        raise UserError(f"{flag} {given}: {exc}") from None
