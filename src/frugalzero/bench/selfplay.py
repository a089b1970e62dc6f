"""Self-play speed against the bare evaluator: how much the search costs beside the network.

Rounds alternate, in one run: self-play for a few seconds (games continue across rounds), then
the evaluator alone streaming distinct positions in batches of the same size with two in
flight, as ``bench nn`` does. ``ratio`` = positions_per_s * sims_per_move /
evaluator_positions_per_s: 1.0 means a simulation costs exactly one network evaluation's
throughput, i.e. the tree search is hidden entirely behind the network.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections import deque
from typing import Any

from frugalzero.nn.model import ARCHITECTURES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", default="small", choices=sorted(ARCHITECTURES))
    parser.add_argument("--sims", type=int, default=64, help="simulations per move")
    parser.add_argument("--games", type=int, default=256, help="games played at once")
    parser.add_argument("--groups", type=int, default=2, help="batches alternating in flight")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved measurement rounds")
    parser.add_argument("--seconds", type=float, default=4.0, help="self-play time per round")
    parser.add_argument("--nscl", type=float, default=float("inf"), help="search-contempt N_scl")
    parser.add_argument("--gumbel", action="store_true", help="Gumbel root search")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    parser.add_argument("--backend", default="auto", choices=["auto", "process", "inline"])
    parser.add_argument("--compile", default="auto", choices=["auto", "on", "off"])
    parser.add_argument("--profile", help="write a cProfile of the self-play rounds here")


def _starts(seed: int):
    """Endless, varied starts: short random openings (the cache cannot make every game the same
    position, as 256 games from the initial position would for their first moves)."""
    from frugalzero.chess.positions import Opening, random_boards
    from frugalzero.selfplay.game import GameStart

    for index in itertools.count():
        board = random_boards(1, seed=seed * 1_000_003 + index, max_plies=12)[0]
        moves = tuple(m.uci() for m in board.move_stack)
        yield GameStart(index, Opening(board.root().fen(), moves, name="random"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from frugalzero.bench.timing import median, rate
    from frugalzero.chess.positions import random_boards
    from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
    from frugalzero.nn.model import PolicyValueNet, architecture
    from frugalzero.search.config import SearchConfig
    from frugalzero.selfplay.config import SelfPlayConfig
    from frugalzero.selfplay.play import SelfPlayLoop

    torch.manual_seed(0)
    net = PolicyValueNet(architecture(args.arch)).eval()
    batch = max(1, args.games // args.groups)
    search = SearchConfig(simulations=args.sims, nscl=args.nscl, gumbel=args.gumbel)
    config = SelfPlayConfig(games=1 << 30, concurrent=args.games, groups=args.groups, search=search)
    common = dict(
        device=args.device, precision=args.precision, backend=args.backend, compile=args.compile
    )
    boards = random_boards(batch * 4, seed=1)
    stream = [boards[i : i + batch] for i in range(0, len(boards), batch)] * 2
    positions = 0

    def count(record) -> None:
        nonlocal positions
        positions += record.positions

    with (
        Evaluator(net, EvaluatorConfig(**common)) as evaluator,
        Evaluator(net, EvaluatorConfig(**common, cache_size=0)) as reference,
    ):
        loop = SelfPlayLoop(evaluator, _starts(0), config, count, net_id="bench")

        def evaluate_stream() -> None:  # the reference, exactly as bench nn streams it
            in_flight: deque = deque()
            for chunk in stream:
                in_flight.append(reference.submit(chunk))
                if len(in_flight) > 2:
                    in_flight.popleft().result()
            while in_flight:
                in_flight.popleft().result()

        def selfplay_round() -> tuple[float, float, float, float, float]:
            busy0 = evaluator.server_stats().get("busy_s", 0.0)
            leaves0, sims0, moves0 = loop.driver.leaves, _sims(loop), loop.progress()
            start, cpu = time.perf_counter(), time.process_time()
            loop.run(stop=lambda: time.perf_counter() - start >= args.seconds)
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu
            stats = evaluator.server_stats()
            busy = (stats.get("busy_s", 0.0) - busy0) / stats.get("servers", 1)
            return (
                (loop.progress() - moves0) / seconds,
                (_sims(loop) - sims0) / seconds,
                (loop.driver.leaves - leaves0) / seconds,
                busy / seconds,
                cpu / max(_sims(loop) - sims0, 1),
            )

        selfplay_round()  # warm-up: trees grow, the cache fills, the games spread out
        evaluate_stream()
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
        rounds: dict[str, list[float]] = {
            k: [] for k in ("pos", "sims", "leaves", "busy", "cpu", "eval")
        }
        for _ in range(args.rounds):
            if profiler is not None:
                profiler.enable()
            pos, sims, leaves, busy, cpu = selfplay_round()
            if profiler is not None:
                profiler.disable()
            rounds["pos"].append(pos)
            rounds["sims"].append(sims)
            rounds["leaves"].append(leaves)
            rounds["busy"].append(busy)
            rounds["cpu"].append(cpu)
            rounds["eval"].append(rate(evaluate_stream, len(stream) * batch, 1.0, warmup=0))
        if profiler is not None:
            profiler.dump_stats(args.profile)
        hits = evaluator.hits / max(1, evaluator.hits + evaluator.misses)

    ratios = [p * args.sims / e for p, e in zip(rounds["pos"], rounds["eval"])]
    sims_per_s = median(rounds["sims"])
    return {
        "arch": args.arch,
        "games": args.games,
        "batch": batch,
        "groups": args.groups,
        "sims_per_move": args.sims,
        "method": config.method,
        "precision": evaluator.precision,
        "compiled": evaluator.compiled,
        "backend": evaluator.backend,
        "positions_per_s": round(median(rounds["pos"]), 2),
        "simulations_per_s": round(sims_per_s, 1),
        "network_leaves_per_s": round(median(rounds["leaves"]), 1),
        "evaluator_positions_per_s": round(median(rounds["eval"]), 1),
        "ratio": round(median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "server_busy_share": round(median(rounds["busy"]), 3),
        "wall_us_per_simulation": round(1e6 / sims_per_s, 1) if sims_per_s else None,
        "client_cpu_us_per_simulation": round(1e6 * median(rounds["cpu"]), 1),
        "cache_hit_rate": round(hits, 3),
        "games_finished": loop.games,
        "rounds": args.rounds,
        "seconds_per_round": args.seconds,
    }


def _sims(loop) -> float:
    """Simulations so far: finished searches plus the current ones."""
    return loop.stats["sims"] + sum(slot.tree.started for slot in loop._active)
