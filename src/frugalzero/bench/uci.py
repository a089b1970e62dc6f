"""The UCI engine's nodes per second against its network's raw throughput, in the same run.

A real search, as ``frugalzero uci`` runs it with its default options: one game, a fixed time per
position, from the same middlegame positions every time. The reference is the bare network at the
engine's leaf-batch size with every core of the machine, the most the network alone could give
(the best of several short windows each round, so a busy moment cannot drag it down);
``nps_over_net`` says how much of it the engine turns into search (above 1 where the engine's
evaluation cache saves network calls).
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from frugalzero.nn.shipped import NET_HELP

# Middlegame positions after eight moves each side (Stockfish's 8moves_v3 book, every 4,000th
# line), and the position of the first report, 1.e4 e5 2.Nf3.
POSITIONS = (
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
    "r1bq1rk1/ppp2pbp/3p1np1/4n3/4P3/N1PB1N2/PP3PPP/R1BQ1RK1 w - - 0 9",
    "r2qkbnr/pp3ppp/4p3/3pPb2/3n4/4B3/PPP1BPPP/RN1Q1RK1 w kq - 0 9",
    "1rbq1rk1/pp2ppbp/2np1np1/2p5/4P3/2NP2P1/PPP1NPBP/1RBQ1RK1 w - - 2 9",
    "r1bqk1nr/pp3ppp/1bn5/1B1p4/8/1N6/PPP1NPPP/R1BQK2R w KQkq - 2 9",
    "r1bqk2r/2pp1ppp/p4n2/1p2p3/B2bP3/3P4/PPPN1PPP/R1BQ1RK1 w kq - 0 9",
    "rn1qk2r/pbp2ppp/1p2p3/3pP3/1b1P4/2NB1N2/PPPnQPPP/R3K2R w KQkq - 0 9",
    "r1b1kb1r/ppp2ppp/4p3/4P3/2Pn4/8/PP1P1PPP/R1B1KBNR w KQkq - 0 9",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--net", default="small", help=NET_HELP)
    parser.add_argument("--seconds", type=float, default=1.0, help="search time per position")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measurement rounds")
    parser.add_argument(
        "--positions", type=int, default=len(POSITIONS), help="how many of the positions"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a UCI option set before searching (repeatable), e.g. BatchSize=32",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses
    import gc

    import chess

    from frugalzero.bench.timing import median
    from frugalzero.chess.history import GameHistory
    from frugalzero.nn.throughput import BareNet
    from frugalzero.runtime.cores import available_cores
    from frugalzero.uci import NetSearcher, SearchRequest
    from frugalzero.uci.timeman import TimeBudget

    fens = POSITIONS[: max(1, args.positions)]
    movetime = TimeBudget(args.seconds, args.seconds, managed=False)
    automatic = gc.isenabled()
    searcher = NetSearcher(args.net)
    for text in args.option:
        name, _, value = text.partition("=")
        searcher.set_option(name.strip(), value.strip())
    try:
        searcher.search(  # options take effect with the first search
            SearchRequest(GameHistory(chess.Board()), 1, None, False),
            threading.Event(),
            lambda line: None,
        )
        evaluator = searcher.evaluator
        batch = searcher.batch
        cores = available_cores()
        net = searcher.net  # the engine's own (``default``: the one chosen for this machine)
        config = dataclasses.replace(evaluator.config, threads=cores)
        bare = BareNet(net, config, cores, batch, evaluator.compiled)
        runner = bare.runner

        def search_round() -> tuple[float, int]:
            nodes = 0
            seconds = 0.0
            for fen in fens:
                searcher.new_game()
                evaluator.clear_cache()  # earlier rounds searched these positions already
                gc.collect()  # as the engine does between games; off while it searches
                lines: list[str] = []
                history = GameHistory(chess.Board(fen))
                request = SearchRequest(history, None, movetime, False, [])
                searcher.search(request, threading.Event(), lines.append)
                words = lines[-1].split()
                nodes += int(words[words.index("nodes") + 1]) - 1  # the root's own evaluation
                seconds += int(words[words.index("time") + 1]) / 1000
            return nodes / seconds, nodes

        gc.disable()  # the engine's policy (frugalzero.uci.protocol.UciEngine.run)
        search_round()  # warm-up: caches, allocators, the inference process
        rounds: dict[str, list[float]] = {"nps": [], "net": [], "nodes": []}
        for _ in range(args.rounds):
            nps, nodes = search_round()
            rounds["nps"].append(nps)
            rounds["nodes"].append(nodes)
            rounds["net"].append(bare.positions_per_s())
    finally:
        searcher.close()
        if automatic:
            gc.enable()
    return {
        "net": args.net,
        "batch": batch,
        "device": str(runner.device),
        "precision": runner.precision,
        "compiled": runner.compiled,
        "engine_processes": evaluator.config.servers,
        "engine_threads_each": evaluator.threads,
        "net_threads": cores,
        "seconds_per_position": args.seconds,
        "positions": len(fens),
        "nps": round(median(rounds["nps"]), 1),
        "net_positions_per_s": round(median(rounds["net"]), 1),
        "nps_over_net": round(median([s / n for s, n in zip(rounds["nps"], rounds["net"])]), 3),
        "options": args.option,
        "rounds": args.rounds,
    }
