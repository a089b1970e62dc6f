"""Self-play speed against the bare evaluator: how much the search costs beside the network.

Rounds alternate, in one run: self-play for a few seconds (games continue across rounds), then
the evaluator alone streaming distinct positions in batches of the same size with two in
flight, as ``bench nn`` does. ``ratio`` = positions_per_s * sims_per_move /
evaluator_positions_per_s: 1.0 means a simulation costs exactly one network evaluation's
throughput, i.e. the tree search is hidden entirely behind the network.

``--workers 1,2`` measures the multi-process layout instead, each count in turn round by round:
that many worker processes, each playing ``--games`` games, on one shared inference process
(as ``frugalzero selfplay --workers N`` runs them), against the same raw evaluator stream.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections import deque
from dataclasses import replace
from typing import Any

from frugalzero.nn.config import ARCHITECTURES


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
    parser.add_argument(
        "--workers",
        help="comma-separated worker counts (e.g. 1,2): worker processes on one shared "
        "inference process, measured in alternating rounds",
    )


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
    if args.workers:
        return run_workers(args)
    from frugalzero.bench.timing import median, rate
    from frugalzero.nn.evaluator import Evaluator
    from frugalzero.selfplay.play import SelfPlayLoop

    net, config, evaluator_config, stream, batch = _setup(args)
    positions = 0

    def count(record) -> None:
        nonlocal positions
        positions += record.positions

    with (
        Evaluator(net, evaluator_config) as evaluator,
        Evaluator(net, replace(evaluator_config, cache_size=0)) as reference,
    ):
        loop = SelfPlayLoop(evaluator, _starts(0), config, count, net_id="bench")

        def evaluate_stream() -> None:
            _evaluate_stream(reference, stream)

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
        "device": _device(evaluator_config),
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


def _setup(args: argparse.Namespace):
    """The bench's net, self-play settings, evaluator settings and the raw evaluator's stream."""
    import torch

    from frugalzero.chess.positions import random_boards
    from frugalzero.nn.config import architecture
    from frugalzero.nn.evaluator import EvaluatorConfig
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.search.config import SearchConfig
    from frugalzero.selfplay.config import SelfPlayConfig

    torch.manual_seed(0)
    net = PolicyValueNet(architecture(args.arch)).eval()
    batch = max(1, args.games // args.groups)
    search = SearchConfig(simulations=args.sims, nscl=args.nscl, gumbel=args.gumbel)
    evaluator = EvaluatorConfig(
        device=args.device, precision=args.precision, backend=args.backend, compile=args.compile
    )
    config = SelfPlayConfig(
        games=1 << 30, concurrent=args.games, groups=args.groups, search=search, evaluator=evaluator
    )
    boards = random_boards(batch * 4, seed=1)
    stream = [boards[i : i + batch] for i in range(0, len(boards), batch)] * 2
    return net, config, evaluator, stream, batch


def _evaluate_stream(reference, stream) -> None:
    """The raw evaluator on distinct positions, two batches in flight, as ``bench nn`` runs it,
    under the search's collector policy (``PausedGC``): otherwise the collector's passes over
    the self-play trees, still alive in this process, would land in the stream's time."""
    from frugalzero.runtime.collector import PausedGC

    in_flight: deque = deque()
    with PausedGC():
        for chunk in stream:
            in_flight.append(reference.submit(chunk))
            if len(in_flight) > 2:
                in_flight.popleft().result()
        while in_flight:
            in_flight.popleft().result()


def _bench_worker(index: int, client, config, conn) -> None:
    """A bench worker: its games on the shared inference process, one timed round per request;
    answers (moves, simulations, leaves, CPU seconds) per round."""
    from frugalzero.nn.evaluator import Evaluator
    from frugalzero.selfplay.play import SelfPlayLoop

    with Evaluator.connect(client, config.evaluator) as evaluator:
        loop = SelfPlayLoop(evaluator, _starts(index + 1), config, lambda _: None, "bench")
        while (seconds := conn.recv()) is not None:
            moves0, sims0, leaves0 = loop.progress(), _sims(loop), loop.driver.leaves
            deadline, cpu = time.perf_counter() + seconds, time.process_time()
            loop.run(stop=lambda end=deadline: time.perf_counter() >= end)
            cpu = time.process_time() - cpu
            done = (loop.progress() - moves0, _sims(loop) - sims0, loop.driver.leaves - leaves0)
            conn.send((*done, cpu))


class _Layout:
    """``workers`` bench workers on one inference process, driven round by round."""

    def __init__(self, net, config, workers: int) -> None:
        import multiprocessing as mp

        from frugalzero.nn.server import InferenceServer
        from frugalzero.runtime.cores import available_cores

        threads = config.evaluator.threads or max(1, available_cores() - workers)
        self.server = InferenceServer(net, config.evaluator, threads, clients=workers)
        ctx = mp.get_context("spawn")
        self.conns, self.procs = [], []
        for i, client in enumerate(self.server.clients):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_bench_worker, args=(i, client, config, theirs), daemon=True)
            proc.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(proc)
        self.threads = threads

    def round(self, seconds: float) -> dict[str, float]:
        busy0 = self.server.owner.stats()["busy_s"]
        start = time.perf_counter()
        for conn in self.conns:
            conn.send(seconds)
        done = [conn.recv() for conn in self.conns]
        wall = time.perf_counter() - start
        stats = self.server.owner.stats()
        moves, sims, leaves, cpu = (sum(d[i] for d in done) for i in range(4))
        return {
            "pos": moves / wall,
            "sims": sims / wall,
            "leaves": leaves / wall,
            "busy": (stats["busy_s"] - busy0) / wall,
            "cpu": cpu / max(sims, 1),
        }

    def close(self) -> dict[str, float]:
        stats = self.server.owner.stats()
        for conn in self.conns:
            conn.send(None)
        for proc in self.procs:
            proc.join(timeout=30)
        self.server.close()
        return stats


def _device(evaluator_config) -> str:
    from frugalzero.runtime.device import resolve_device

    return str(resolve_device(evaluator_config.device, "evaluator"))


def run_workers(args: argparse.Namespace) -> dict[str, Any]:
    from frugalzero.bench.timing import median, rate
    from frugalzero.nn.evaluator import Evaluator

    counts = [int(w) for w in str(args.workers).split(",")]
    net, config, evaluator_config, stream, batch = _setup(args)
    layouts = {n: _Layout(net, config, n) for n in counts}
    rounds: dict[int, dict[str, list[float]]] = {n: {} for n in counts}
    evals: list[float] = []
    with Evaluator(net, replace(evaluator_config, cache_size=0)) as reference:

        def evaluate_stream() -> None:
            _evaluate_stream(reference, stream)

        for layout in layouts.values():
            layout.round(args.seconds)  # warm-up: trees grow, the caches fill
        evaluate_stream()
        for _ in range(args.rounds):
            for n, layout in layouts.items():
                for key, value in layout.round(args.seconds).items():
                    rounds[n].setdefault(key, []).append(value)
            evals.append(rate(evaluate_stream, len(stream) * batch, 1.0, warmup=0))
    totals = {n: layout.close() for n, layout in layouts.items()}
    evaluator_rate = median(evals)
    result: dict[str, Any] = {
        "arch": args.arch,
        "games_per_worker": args.games,
        "batch": batch,
        "sims_per_move": args.sims,
        "method": config.method,
        "device": _device(evaluator_config),
        "evaluator_positions_per_s": round(evaluator_rate, 1),
        "rounds": args.rounds,
        "seconds_per_round": args.seconds,
        "workers": {},
    }
    for n in counts:
        r, stats = rounds[n], totals[n]
        result["workers"][str(n)] = {
            "server_threads": layouts[n].threads,
            "simulations_per_s": round(median(r["sims"]), 1),
            "positions_per_s": round(median(r["pos"]), 2),
            "positions_per_s_per_worker": round(median(r["pos"]) / n, 2),
            "network_leaves_per_s": round(median(r["leaves"]), 1),
            "leaves_over_net": round(median(r["leaves"]) / evaluator_rate, 3),
            "server_busy_share": round(median(r["busy"]), 3),
            "positions_per_forward": round(stats["positions"] / max(1, stats["batches"]), 1),
            "client_cpu_us_per_simulation": round(1e6 * median(r["cpu"]), 1),
        }
    if len(counts) > 1:
        base = result["workers"][str(counts[0])]["simulations_per_s"]
        for n in counts[1:]:
            speed = result["workers"][str(n)]["simulations_per_s"]
            result[f"speedup_{n}_over_{counts[0]}"] = round(speed / base, 3) if base else None
    return result
