"""``frugalzero uci``: the protocol loop with our network searcher, on stdin and stdout."""

from __future__ import annotations

import argparse
import sys

from frugalzero.nn.shipped import DEFAULT_NET, NET_HELP


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("uci", help="play as a UCI engine on stdin/stdout")
    parser.add_argument("--net", default=DEFAULT_NET, help=NET_HELP)
    parser.add_argument("--nodes", type=int, default=400, help="nodes per move without a clock")
    parser.set_defaults(handler=_main)


def _main(args: argparse.Namespace) -> int:
    from frugalzero.uci.protocol import UciEngine
    from frugalzero.uci.searcher import NetSearcher, searcher_options

    searcher = NetSearcher(args.net, default_nodes=args.nodes)
    engine = UciEngine(searcher, sys.stdin, sys.stdout, searcher_options(args.nodes))
    engine.run()
    searcher.close()
    return 1 if engine.failed else 0
