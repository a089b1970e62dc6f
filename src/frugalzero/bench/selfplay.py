"""Self-play speed against the bare network, in the same run.

Rounds alternate, in one run: self-play for a few seconds (games continue across rounds), then
the references: the bare network on ready positions at self-play's batch size with the
inference process's threads (``bench nn``'s ``net_positions_per_s``), and the evaluator
streaming distinct positions in batches of that size with two in flight. The figures:

* ``sims_over_net``: simulations per second over the bare network's positions per second. 1.0
  means the search costs nothing beside the network (cache hits can take it above 1);
* ``client_cpu_us_per_simulation``: the searching thread's CPU per simulation (tree, moves,
  inputs, everything but the network), here, where the search waits for the network;
* ``search_cpu_us_per_simulation``: the same with the network's answers ready at once
  (``bench.ready``: the net's outputs taken beforehand, the answering left out), in rounds of
  their own: the search's own cost, which bounds self-play where nothing waits (a GPU). On a
  shared machine the first is up to twice the second: trees that wait ~10 ms for their
  network are out of the CPU's caches by their next walk (``--ready-pause 10`` makes the ready
  answers take that long, the sleep's own CPU left out, and shows it);
* ``simulations_per_s_answers_ready``: simulations per second in those rounds;
* ``server_overhead_us_per_position``: the inference process's time per position outside the
  network's forward pass (planes, the logits' gather and softmax, shared memory);
* ``ratio``: positions_per_s * sims_per_move / evaluator_positions_per_s (the old figure, whose
  reference streams positions built in Python).

``--precision auto,int8`` measures each precision in turn, round by round, as above (its own
self-play, bare network and evaluator stream): one set of figures each under ``precisions``,
and ``int8_over_bf16``, the median over the rounds of int8's simulations/s over the first's.

``--workers 1,2`` measures the multi-process layout instead, each count in turn round by round:
that many worker processes, each playing ``--games`` games, on one shared inference process
(as ``frugalzero selfplay --workers N`` runs them), against the same raw evaluator stream.

``--baseline FILE`` compares the run with a committed record of the same command
(``benchmarks/results/native/selfplay-small.json`` for ``--arch small``, the last release's
figures on its machine): ``against_baseline`` holds each headline figure then and now and their
ratio, so a change that slows the search shows in the run that measures it (issue 71: a per-move
Python statistic cost 20% of the search's CPU, unseen for weeks).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections import deque
from dataclasses import replace
from typing import Any

from frugalzero.nn.config import ARCHITECTURES

BASELINE_FIGURES = (
    "search_cpu_us_per_simulation",
    "simulations_per_s_answers_ready",
    "sims_over_net",
    "client_cpu_us_per_simulation",
)
"""The figures ``--baseline`` compares: the search's own CPU a simulation and its speed on ready
answers, simulations/s over the bare net measured in the same run, and the search's CPU while
it waits for the net."""
BASELINE_SETTINGS = (
    "arch",
    "games",
    "batch",
    "groups",
    "sims_per_move",
    "method",
    "device",
    "precision",
)
"""What a baseline must have been measured with to be compared at all."""


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
    parser.add_argument(
        "--precision",
        default="auto",
        type=_precisions,
        help="the evaluator's precision (auto, fp32, bf16, fp16, int8), or several separated by "
        "commas (e.g. auto,int8), measured in alternating rounds: one result each under "
        "'precisions', and each one's simulations/s over the first's (e.g. int8_over_bf16)",
    )
    parser.add_argument("--backend", default="auto", choices=["auto", "process", "inline"])
    parser.add_argument("--compile", default="auto", choices=["auto", "on", "off"])
    parser.add_argument("--threads", type=int, default=0, help="0 = the evaluator's default")
    parser.add_argument("--profile", help="write a cProfile of the self-play rounds here")
    parser.add_argument(
        "--ready-pause",
        type=float,
        default=0.0,
        help="milliseconds each ready answer takes (asleep): what a wait as long as a forward "
        "pass does to the search's own CPU",
    )
    parser.add_argument(
        "--workers",
        help="comma-separated worker counts (e.g. 1,2): worker processes on one shared "
        "inference process, measured in alternating rounds",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="a record of this command measured before (JSON: the bench's output, or a record "
        "with it under 'result', as benchmarks/results/native/selfplay-small.json for --arch "
        "small): adds 'against_baseline', each headline figure then and now and now/then",
    )


PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")


def _precisions(text: str) -> str:
    for name in text.split(","):
        if name not in PRECISIONS:
            raise argparse.ArgumentTypeError(
                f"invalid precision {name!r} (choose from {', '.join(PRECISIONS)})"
            )
    return text


def _starts(seed: int):
    """Endless, varied starts: short random openings (the cache cannot make every game the same
    position, as 256 games from the initial position would for their first moves)."""
    from frugalzero.chess.positions import Opening, random_boards
    from frugalzero.selfplay.game import GameStart

    for index in itertools.count():
        board = random_boards(1, seed=seed * 1_000_003 + index, max_plies=12)[0]
        moves = tuple(m.uci() for m in board.move_stack)
        yield GameStart(index, Opening(board.root().fen(), moves, name="random"))


class _SelfPlay:
    """Self-play with its own evaluator (caches) on the network; with ``ready``, on that
    network's answers given at once (``bench.ready.ReadyNet``) instead."""

    def __init__(
        self, net, config, evaluator_config, ready: bool = False, pause_s: float = 0.0
    ) -> None:
        from frugalzero.bench.ready import ReadyNet
        from frugalzero.nn.evaluator import Evaluator
        from frugalzero.selfplay.play import SelfPlayLoop

        if ready:
            self.evaluator = ReadyNet(
                net, evaluator_config, evaluator_config.cache_size, pause_s=pause_s
            )
        else:
            self.evaluator = Evaluator(net, evaluator_config)
        self.loop = SelfPlayLoop(self.evaluator, _starts(0), config, lambda _: None, "bench")
        self.rounds: dict[str, list[float]] = {}

    def ready_round(self, seconds: float) -> float:
        """``seconds`` on the ready answers: the searching thread's CPU a simulation, the
        answering left out."""
        loop, evaluator = self.loop, self.evaluator
        sims0, spent0 = _sims(loop), evaluator.spent_s
        start, cpu = time.perf_counter(), time.thread_time()
        loop.run(stop=lambda: time.perf_counter() - start >= seconds)
        cpu = time.thread_time() - cpu - (evaluator.spent_s - spent0)
        sims = max(_sims(loop) - sims0, 1)
        self.rounds.setdefault("sims", []).append(sims / (time.perf_counter() - start))
        self.rounds.setdefault("cpu", []).append(cpu / sims)
        return cpu / sims

    def round(self, seconds: float, profiler=None) -> dict[str, float]:
        """``seconds`` of self-play: rates, shares and costs of that round."""
        loop, evaluator = self.loop, self.evaluator
        before = evaluator.server_stats()
        leaves0, sims0, moves0 = loop.driver.leaves, _sims(loop), loop.progress()
        # the searching thread's CPU alone: the bare net's PyTorch threads in this process spin
        # on for a while after each of its measurements, and are no part of the search
        start, cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        loop.run(stop=lambda: time.perf_counter() - start >= seconds)
        if profiler is not None:
            profiler.disable()
        wall = time.perf_counter() - start
        cpu = time.thread_time() - cpu
        sims = max(_sims(loop) - sims0, 1)
        after = evaluator.server_stats()
        servers = after.get("servers", 1)
        spent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
        positions = max(spent.get("positions", 0), 1)
        return {
            "pos": (loop.progress() - moves0) / wall,
            "sims": sims / wall,
            "leaves": (loop.driver.leaves - leaves0) / wall,
            "busy": spent.get("busy_s", 0.0) / servers / wall,
            "cpu": cpu / sims,
            "overhead": (spent.get("busy_s", 0.0) - spent.get("forward_s", 0.0)) / positions,
            "server_cpu": spent.get("cpu_s", 0.0) / positions,
        }

    def close(self) -> None:
        if hasattr(self.evaluator, "close"):
            self.evaluator.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    from frugalzero.errors import UserError

    precisions = args.precision.split(",")
    baseline = None
    if args.baseline:
        if args.workers or len(precisions) > 1:
            raise UserError("bench selfplay: --baseline compares one layout and one precision")
        baseline = read_baseline(args.baseline)  # a bad file is refused before the run
    if args.workers:
        if len(precisions) > 1:
            raise UserError("bench selfplay: --workers takes one --precision")
        return run_workers(args)
    result = _run(args, precisions)
    if baseline is not None:
        result["against_baseline"] = against_baseline(result, baseline)
    return result


def read_baseline(path: str) -> dict[str, Any]:
    """A baseline record: the bench's JSON, or a record holding it under ``result`` (with its
    ``command``, ``commit`` and ``machine``); a UserError on one line when it is none."""
    import json
    from pathlib import Path

    from frugalzero.errors import UserError

    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"bench selfplay: cannot read the baseline {path}: {exc}") from None
    result = record.get("result", record) if isinstance(record, dict) else None
    missing = [k for k in BASELINE_FIGURES if not isinstance(result, dict) or k not in result]
    if missing:
        raise UserError(f"bench selfplay: {path} is no bench selfplay result (no {missing[0]})")
    return record


def against_baseline(result: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """This run's headline figures against a baseline record of the same settings: each one
    then, now and now/then (above 1 for a CPU per simulation is slower, below 1 for a rate)."""
    from frugalzero.errors import UserError

    then = record.get("result", record)
    for key in BASELINE_SETTINGS:
        if key in then and then[key] != result.get(key):
            raise UserError(
                f"bench selfplay: the baseline was measured with {key} {then[key]}, "
                f"this run with {result.get(key)}"
            )
    figures: dict[str, Any] = {
        "commit": record.get("commit"),
        "machine": record.get("machine"),
    }
    for key in BASELINE_FIGURES:
        before, now = then[key], result[key]
        ratio = round(now / before, 3) if before else None
        figures[key] = {"baseline": before, "now": now, "now_over_baseline": ratio}
    return figures


def _run(args: argparse.Namespace, precisions: list[str]) -> dict[str, Any]:
    from frugalzero.bench.timing import median

    net, config, evaluator_config, stream, batch = _setup(args)
    _distinct(precisions, evaluator_config.device)
    arms: dict[str, _Arm] = {}
    try:
        for name in precisions:
            arm = _Arm(net, config, replace(evaluator_config, precision=name), args, batch)
            arms[arm.precision] = arm
        for arm in arms.values():
            arm.warm_up(stream)
        for _ in range(args.rounds):
            for arm in arms.values():
                arm.round(stream)
        common = {
            "arch": args.arch,
            "games": args.games,
            "batch": batch,
            "groups": args.groups,
            "sims_per_move": args.sims,
            "method": config.method,
            "device": _device(evaluator_config),
        }
        tail = {
            "rounds": args.rounds,
            "seconds_per_round": args.seconds,
            "ready_pause_ms": args.ready_pause,
        }
        if len(arms) == 1:
            return {**common, **next(iter(arms.values())).figures(), **tail}
        first, *others = arms
        base = arms[first].play.rounds["sims"]
        ratios = {
            f"{name}_over_{first}": round(
                median([s / b for s, b in zip(arms[name].play.rounds["sims"], base)]), 3
            )
            for name in others
        }
        figures = {name: arm.figures() for name, arm in arms.items()}
        return {**common, "precisions": figures, **ratios, **tail}
    finally:
        for arm in arms.values():
            arm.close()


def _distinct(precisions: list[str], device: str) -> None:
    """Refuses a list that names one precision twice ('auto' is bf16 or fp32 on a CPU)."""
    from frugalzero.errors import UserError
    from frugalzero.runtime.device import resolve_device, resolve_precision

    where = resolve_device(device, "evaluator")
    names = [resolve_precision(p, where)[0] for p in precisions]
    for name in names:
        if names.count(name) > 1:
            raise UserError(f"bench selfplay: --precision runs {name} twice")


class _Arm:
    """One precision's measurement: self-play, the same on ready answers, and its references
    (the bare network at self-play's batch, the raw evaluator's stream), round by round."""

    def __init__(self, net, config, evaluator_config, args: argparse.Namespace, batch: int):
        from frugalzero.nn.evaluator import Evaluator
        from frugalzero.nn.throughput import BareNet
        from frugalzero.selfplay.play import one_worker_evaluator

        evaluator_config = one_worker_evaluator(evaluator_config)  # as run_selfplay's one worker
        self.args = args
        self.batch = batch
        self.play = _SelfPlay(net, config, evaluator_config)
        self.ready: _SelfPlay | None = None
        self.reference = None
        try:
            pause = args.ready_pause / 1000
            self.ready = _SelfPlay(net, config, evaluator_config, True, pause)
            self.ready_seconds = min(1.0, args.seconds) if pause <= 0 else args.seconds
            evaluator = self.play.evaluator
            self.precision = evaluator.precision
            self.bare = BareNet(net, evaluator_config, evaluator.threads, batch, evaluator.compiled)
            self.reference = Evaluator(net, replace(evaluator_config, cache_size=0))
        except BaseException:
            self.close()
            raise
        self.rounds: dict[str, list[float]] = {"net": [], "eval": []}
        self.profiler = None
        if args.profile:
            import cProfile

            self.profiler = cProfile.Profile()

    def warm_up(self, stream) -> None:
        """Trees grow, the caches fill, games spread out; the compiled nets see their batches."""
        assert self.ready is not None
        self.play.round(self.args.seconds)
        self.ready.ready_round(self.ready_seconds)
        self.ready.rounds.clear()
        _evaluate_stream(self.reference, stream)

    def round(self, stream) -> None:
        from frugalzero.runtime.timing import rate

        assert self.ready is not None
        for key, value in self.play.round(self.args.seconds, self.profiler).items():
            self.play.rounds.setdefault(key, []).append(value)
        self.ready.ready_round(self.ready_seconds)
        self.rounds["net"].append(self.bare.positions_per_s())
        positions = len(stream) * self.batch
        stream_once = lambda: _evaluate_stream(self.reference, stream)  # noqa: E731
        self.rounds["eval"].append(rate(stream_once, positions, 1.0, warmup=0))

    def figures(self) -> dict[str, Any]:
        from frugalzero.bench.timing import median

        assert self.ready is not None
        evaluator = self.play.evaluator
        if self.profiler is not None:
            path = self.args.profile
            if len(self.args.precision.split(",")) > 1:
                path = f"{path}.{self.precision}"
            self.profiler.dump_stats(path)
        return {
            "precision": evaluator.precision,
            "compiled": evaluator.compiled,
            "backend": evaluator.backend,
            "server_threads": evaluator.threads,
            "net_positions_per_s": round(median(self.rounds["net"]), 1),
            "evaluator_positions_per_s": round(median(self.rounds["eval"]), 1),
            **_figures(self.play, self.rounds, self.args.sims, self.ready),
        }

    def close(self) -> None:
        self.play.close()
        if self.ready is not None:
            self.ready.close()
        if self.reference is not None:
            self.reference.close()


def _figures(
    play: _SelfPlay, rounds: dict[str, list[float]], sims_per_move: int, ready: _SelfPlay
) -> dict:
    from frugalzero.bench.timing import median

    r = play.rounds
    sims_per_s = median(r["sims"])
    evaluator = play.evaluator
    hits = evaluator.hits / max(1, evaluator.hits + evaluator.misses)
    served = evaluator.backend == "process"
    return {
        "simulations_per_s": round(sims_per_s, 1),
        "positions_per_s": round(median(r["pos"]), 2),
        "network_leaves_per_s": round(median(r["leaves"]), 1),
        "sims_over_net": round(median([s / n for s, n in zip(r["sims"], rounds["net"])]), 3),
        "ratio": round(
            median([p * sims_per_move / e for p, e in zip(r["pos"], rounds["eval"])]), 3
        ),
        "client_cpu_us_per_simulation": round(1e6 * median(r["cpu"]), 2),
        "search_cpu_us_per_simulation": round(1e6 * median(ready.rounds["cpu"]), 2),
        "simulations_per_s_answers_ready": round(median(ready.rounds["sims"]), 1),
        "wall_us_per_simulation": round(1e6 / sims_per_s, 2) if sims_per_s else None,
        "server_busy_share": round(median(r["busy"]), 3) if served else None,
        "server_overhead_us_per_position": round(1e6 * median(r["overhead"]), 2)
        if served
        else None,
        "server_cpu_us_per_position": round(1e6 * median(r["server_cpu"]), 2) if served else None,
        "cache_hit_rate": round(hits, 3),
        "games_finished": play.loop.games,
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
        device=args.device,
        precision=args.precision.split(",")[0],  # each of a list in turn: run()
        backend=args.backend,
        compile=args.compile,
        threads=args.threads,
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
    from frugalzero.bench.timing import median
    from frugalzero.nn.evaluator import Evaluator
    from frugalzero.nn.throughput import BareNet
    from frugalzero.runtime.timing import rate

    counts = [int(w) for w in str(args.workers).split(",")]
    net, config, evaluator_config, stream, batch = _setup(args)
    layouts = {n: _Layout(net, config, n) for n in counts}
    rounds: dict[int, dict[str, list[float]]] = {n: {} for n in counts}
    evals: list[float] = []
    nets: list[float] = []
    # the bare network at the batch the server can merge from the most workers' batches
    merged = batch * max(counts)
    with Evaluator(net, replace(evaluator_config, cache_size=0)) as reference:
        bare = BareNet(net, evaluator_config, layouts[max(counts)].threads, merged, False)

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
            nets.append(bare.positions_per_s())
    totals = {n: layout.close() for n, layout in layouts.items()}
    evaluator_rate = median(evals)
    net_rate = median(nets)
    result: dict[str, Any] = {
        "arch": args.arch,
        "games_per_worker": args.games,
        "batch": batch,
        "sims_per_move": args.sims,
        "method": config.method,
        "device": _device(evaluator_config),
        "evaluator_positions_per_s": round(evaluator_rate, 1),
        "net_batch": merged,
        "net_positions_per_s": round(net_rate, 1),
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
            "leaves_over_evaluator": round(median(r["leaves"]) / evaluator_rate, 3),
            "leaves_over_net": round(median(r["leaves"]) / net_rate, 3),
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
