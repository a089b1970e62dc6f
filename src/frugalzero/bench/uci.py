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


def run(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses
    import gc

    import chess

    from frugalzero.bench.timing import median
    from frugalzero.chess.history import GameHistory
    from frugalzero.nn.throughput import BareNet
    from frugalzero.runtime.cores import available_cores
    from frugalzero.runtime.interpreter import own_code_env
    from frugalzero.uci import NetSearcher, SearchRequest
    from frugalzero.uci.timeman import TimeBudget

    engines = {"": [sys.executable]}
    if args.reference_python:
        engines["reference_"] = [args.reference_python]
    lifecycle: dict[str, list[dict[str, Any]]] = {prefix: [] for prefix in engines}
    for _ in range(args.rounds):  # alternated, before the in-process engine starts
        for prefix, python in engines.items():
            command = [*python, "-m", "frugalzero", "uci", "--net", args.net]
            env = None if prefix else own_code_env()  # the reference runs its own code
            lifecycle[prefix].append(engine_lifecycle(command, env))
    fens = POSITIONS[: max(1, args.positions)]
    movetime = TimeBudget(args.seconds, args.seconds, managed=False)
    automatic = gc.isenabled()
    searcher = NetSearcher(args.net)
    for text in args.option:
        name, _, value = text.partition("=")
        searcher.set_option(name.strip(), value.strip())
    try:
        evaluator = searcher.settle()  # the options' evaluator, its inference processes up
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
    figures: dict[str, Any] = {}
    for prefix, rounds_of in lifecycle.items():
        figures.update(_lifecycle_figures(prefix, rounds_of))
    return {
        **figures,
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
