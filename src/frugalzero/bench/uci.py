"""The UCI engine's nodes per second against its network's raw throughput, in the same run;
and how soon the engine is ready, and answers a short search after a ``Threads`` change.

A real search, as ``frugalzero uci`` runs it with its default options: one game, a fixed time per
position, from the same middlegame positions every time. The reference is the bare network at the
engine's leaf-batch size with every core of the machine, the most the network alone could give
(the best of several short windows each round, so a busy moment cannot drag it down);
``nps_over_net`` says how much of it the engine turns into search (above 1 where the engine's
evaluation cache saves network calls).

The lifecycle figures launch ``frugalzero uci --net NET`` as a GUI does, once a round (before
the in-process search, which would share the machine with them): ``start_s`` is the time from
launch to ``readyok`` (after ``uci`` and ``isready``, sent at once; ``start_cpu_s`` the CPU
seconds the engine and its processes had used by then, which a loaded machine stretches less),
and ``threads_change_movetime_s`` the time from ``go movetime 100`` to its ``bestmove`` right
after ``setoption name Threads`` changed the number of inference processes (issue 72's
sequence: ``go nodes 50``, ``Threads 1``, ``go movetime 100``, then ``Threads 0`` and again).
``--reference-python`` launches another checkout's engine in the same rounds, alternated (a
before-and-after on one loaded machine).

``--precision auto,int8`` measures the engine at each precision in the same rounds (launches
with ``--precision``, searches alternated), and each one's nodes/s over the first's, round by
round (``int8_over_auto_nps``). The launches and searches use a cache folder of the bench's own,
empty at first, so ``first_start_s`` is a first start (int8 quantizes and compiles the net
there, then caches it) and ``start_s`` a second one (int8 loads the cached package).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
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
    parser.add_argument(
        "--precision",
        default="auto",
        type=_precisions,
        help="the engine's Precision, or several separated by commas (e.g. auto,int8), each "
        "launched and searched in the same rounds: one set of figures each under "
        "'precisions', and each one's nodes/s over the first's (e.g. int8_over_auto_nps)",
    )
    parser.add_argument("--seconds", type=float, default=1.0, help="search time per position")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measurement rounds")
    parser.add_argument(
        "--positions", type=int, default=len(POSITIONS), help="how many of the positions"
    )
    parser.add_argument(
        "--reference-python",
        metavar="PYTHON",
        help="another checkout's interpreter: its `-m frugalzero uci` is launched in the same "
        "rounds for the start and Threads-change figures (reference_* in the result)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a UCI option set before searching (repeatable), e.g. BatchSize=32",
    )


def _precisions(text: str) -> list[str]:
    from frugalzero.uci.searcher import PRECISION_CHOICES

    names = text.split(",")
    for name in names:
        if name not in PRECISION_CHOICES:
            raise argparse.ArgumentTypeError(
                f"invalid precision {name!r} (choose from {', '.join(PRECISION_CHOICES)})"
            )
        if names.count(name) > 1:
            raise argparse.ArgumentTypeError(f"precision {name!r} given twice")
    return names


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every launch and search uses a cache folder of its own (``FRUGALZERO_CACHE``), empty at
    first: the first launch of each precision is a first start (``first_start_s``: int8
    quantizes and compiles there), the rounds' are second starts (``start_s``: int8 loads the
    package the first one cached). ``auto`` is the float precision it means before int8 was
    timed on the machine (``nn.choice``): nothing is timed in the background here."""
    import os
    import tempfile

    from frugalzero.bench.timing import median
    from frugalzero.runtime.interpreter import environment
    from frugalzero.uci.network import INT8_TIMING

    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="frugalzero-bench-uci-") as cache:
        # auto stays the float net: no compile beside the runs
        with environment({"FRUGALZERO_CACHE": cache, INT8_TIMING: "off"}):
            lifecycle = _lifecycle(args)
            searched = _search(args)
    figures: dict[str, dict[str, Any]] = {}
    for name in args.precision:
        figures[name] = {**_lifecycle_figures("", lifecycle[name]), **searched[name]["figures"]}
        figures[name]["first_start_s"] = round(lifecycle[f"first {name}"][0]["start_s"], 3)
    common = {
        "net": args.net,
        "batch": searched["batch"],
        "device": searched["device"],
        "net_threads": searched["net_threads"],
        "seconds_per_position": args.seconds,
        "positions": searched["positions"],
        "options": args.option,
        "rounds": args.rounds,
        "load_average": [round(x, 2) for x in load],
    }
    reference = (
        _lifecycle_figures("reference_", lifecycle["reference"]) if "reference" in lifecycle else {}
    )
    first, *others = args.precision
    if not others:
        return {**figures[first], **reference, **common}
    ratios = {}
    for name in others:
        nps = zip(searched[name]["rounds"], searched[first]["rounds"])
        ratios[f"{name}_over_{first}_nps"] = round(median([a / b for a, b in nps]), 3)
    return {**common, "precisions": figures, **ratios, **reference}


def _lifecycle(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Launches of ``frugalzero uci`` (each precision's first on the empty cache, then one a
    round each, alternated with the reference's), before the in-process searches, which would
    share the machine with them."""
    from frugalzero.runtime.interpreter import own_code_env

    def command(python: str, precision: str | None) -> list[str]:
        flag = ["--precision", precision] if precision is not None else []
        return [python, "-m", "frugalzero", "uci", "--net", args.net, *flag]

    launches: dict[str, list[dict[str, Any]]] = {}
    for name in args.precision:
        launches[f"first {name}"] = [engine_lifecycle(command(sys.executable, name))]
    for _ in range(args.rounds):
        for name in args.precision:
            launches.setdefault(name, []).append(engine_lifecycle(command(sys.executable, name)))
        if args.reference_python:  # the engine as it was: no --precision
            reference = engine_lifecycle(command(args.reference_python, None), own_code_env())
            launches.setdefault("reference", []).append(reference)
    return launches


def _search(args: argparse.Namespace) -> dict[str, Any]:
    """Each precision's engine in this process (its inference processes up), searching the
    positions in turn, round by round, beside its bare network at every core."""
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
    cores = available_cores()
    arms: dict[str, dict[str, Any]] = {}
    try:
        for name in args.precision:
            searcher = NetSearcher(args.net, precision=name)
            arms[name] = {"searcher": searcher, "rounds": [], "net": [], "nodes": []}
            for text in args.option:
                option, _, value = text.partition("=")
                searcher.set_option(option.strip(), value.strip())
            evaluator = searcher.settle()  # the options' evaluator, its inference processes up
            # the engine's own net (``default``: the one chosen for this machine), bare
            config = dataclasses.replace(evaluator.config, threads=cores)
            bare = BareNet(searcher.net, config, cores, searcher.batch, evaluator.compiled)
            arms[name].update(evaluator=evaluator, bare=bare)

        def search_round(arm: dict[str, Any]) -> tuple[float, int]:
            searcher, evaluator = arm["searcher"], arm["evaluator"]
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
        for arm in arms.values():
            search_round(arm)  # warm-up: caches, allocators, the inference processes
        for _ in range(args.rounds):
            for arm in arms.values():
                nps, nodes = search_round(arm)
                arm["rounds"].append(nps)
                arm["nodes"].append(nodes)
                arm["net"].append(arm["bare"].positions_per_s())
    finally:
        for arm in arms.values():
            arm["searcher"].close()
        if automatic:
            gc.enable()
    result: dict[str, Any] = {}
    for name, arm in arms.items():
        runner, evaluator = arm["bare"].runner, arm["evaluator"]
        per_round = [s / n for s, n in zip(arm["rounds"], arm["net"])]
        result[name] = {
            "rounds": arm["rounds"],
            "figures": {
                "precision": runner.precision,
                "compiled": runner.compiled,
                **({"int8_graph": runner.int8_graph} if runner.int8_graph else {}),
                "engine_processes": evaluator.config.servers,
                "engine_threads_each": evaluator.threads,
                "nps": round(median(arm["rounds"]), 1),
                "net_positions_per_s": round(median(arm["net"]), 1),
                "nps_over_net": round(median(per_round), 3),
            },
        }
        result["batch"] = arm["searcher"].batch
        result["device"] = str(runner.device)
    result.update(net_threads=cores, positions=len(fens))
    return result


MOVETIME_MS = 100  # the short search timed after a Threads change
CHANGES = ("1", "0")  # Threads values set in turn: one inference process, then two again
ANSWER_TIMEOUT = 300.0  # seconds a lifecycle step may take before the bench gives up


def engine_lifecycle(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """One launch of a UCI engine: seconds to ``readyok``; then the Threads-change sequence:
    seconds from each ``go movetime`` to its ``bestmove``, and the ``info string`` lines seen
    meanwhile (say, an engine's own notes on a late answer)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(*lines: str) -> None:
        stdin.write("".join(line + "\n" for line in lines))
        stdin.flush()

    def until(prefix: str, notes: list[str] | None = None) -> float:
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while time.monotonic() < deadline:
            line = stdout.readline()
            if not line:
                raise RuntimeError(f"{command[0]} uci exited before {prefix!r}")
            if line.startswith(prefix):
                return time.monotonic()
            if notes is not None and line.startswith("info string"):
                notes.append(line.strip())
        raise RuntimeError(f"{command[0]} uci: no {prefix!r} in {ANSWER_TIMEOUT:g} s")

    try:
        send("uci", "isready")
        start_s = until("readyok") - started
        start_cpu_s = cpu_seconds(proc.pid)
        send("position startpos", "go nodes 50")
        until("bestmove")
        answers, notes = [], []
        for threads in CHANGES:
            send(f"setoption name Threads value {threads}", "position startpos moves e2e4")
            sent = time.monotonic()
            send(f"go movetime {MOVETIME_MS}")
            answers.append(until("bestmove", notes) - sent)
        send("quit")
        proc.wait(ANSWER_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"start_s": start_s, "start_cpu_s": start_cpu_s, "answers_s": answers, "notes": notes}


def cpu_seconds(pid: int) -> float:
    """CPU seconds ``pid`` and its living descendants have used (Linux ``/proc``; 0 where it
    cannot be read): what its wall time comes down to on an idle machine, one core at a time."""
    import os
    from pathlib import Path

    tick = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        children = {
            int(child)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()
        }
    except (OSError, IndexError, ValueError):
        return 0.0
    return own + sum(cpu_seconds(child) for child in children)


def _lifecycle_figures(prefix: str, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    from frugalzero.bench.timing import median

    answers = [a for r in rounds for a in r["answers_s"]]
    return {
        f"{prefix}start_s": round(median([r["start_s"] for r in rounds]), 3),
        f"{prefix}start_max_s": round(max(r["start_s"] for r in rounds), 3),
        f"{prefix}start_cpu_s": round(median([r["start_cpu_s"] for r in rounds]), 3),
        f"{prefix}threads_change_movetime_s": round(median(answers), 3),
        f"{prefix}threads_change_movetime_max_s": round(max(answers), 3),
        f"{prefix}threads_change_notes": sorted({n for r in rounds for n in r["notes"]}),
    }
