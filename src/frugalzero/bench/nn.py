"""Network and evaluator throughput against the machine's matmul peak; --compare: precision error.

With ``--compare PRECISION`` it times nothing: it runs the net at that precision and at the
reference's (``--precision``, 'auto' by default) on held-out positions and prints how far the
outputs are apart, as KataGo's ``testgpuerror`` does (``frugalzero.nn.compare``).
"""

from __future__ import annotations

import argparse
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any

from frugalzero.nn.config import ARCHITECTURES
from frugalzero.nn.shipped import NET_HELP

HELDOUT = "benchmarks/results/history/heldout-games.jsonl"
"""1,000 positions of Stockfish games no shipped net trained on, nor calibrated int8 on
(benchmarks/history_fill.py)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", default="small", choices=sorted(ARCHITECTURES))
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=9, help="interleaved measurement rounds")
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "fp32", "bf16", "fp16", "int8"],
        help="int8 also times the net at 'auto' (bf16 on this kind of CPU) in the same rounds, "
        "each against its own matmul peak: reference_*, over_reference; with --compare, the "
        "reference's precision",
    )
    parser.add_argument(
        "--plain-int8",
        action="store_true",
        help="with --precision int8: also time the int8 net with every layer int8 (the recipe "
        "before issue 71's, nn.quantize.PLAIN) in the same rounds: plain_int8_positions_per_s, "
        "over_plain_int8",
    )
    parser.add_argument("--backend", default="auto", choices=["auto", "process", "inline"])
    parser.add_argument("--compile", default="auto", choices=["auto", "on", "off"])
    parser.add_argument("--threads", type=int, default=0, help="0 = the evaluator's default")
    parser.add_argument("--in-flight", type=int, default=2, help="batches submitted ahead")
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="also time the net exported to ONNX in onnxruntime (CPU, same threads): "
        "onnx_positions_per_s, onnx_over_net",
    )
    parser.add_argument(
        "--compare",
        choices=["fp32", "bf16", "fp16", "int8"],
        help="time nothing: run the net at this precision and at --precision (the reference) on "
        "--positions and print KataGo's testgpuerror statistics (winrate error and top policy "
        "delta in points, policy KL; mean, p90, p99, max), the share of top moves changed, and "
        "KataGo's gates (p99 winrate error <= 2, top policy delta <= 2.5, ...) with pass/fail",
    )
    parser.add_argument(
        "--net",
        help="with --compare: " + NET_HELP + " (default: the --arch net's random weights)",
    )
    parser.add_argument(
        "--positions",
        default=HELDOUT,
        help="with --compare: JSON lines, each a game's 'moves' in UCI from the start position "
        "(and optionally the 'fen' they reach), run with their history",
    )
    parser.add_argument("--limit", type=int, default=0, help="with --compare: first N positions")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.compare:
        return compare(args)
    import torch

    from frugalzero.bench.timing import matmul_gflops, median
    from frugalzero.chess.history import net_input_from_board
    from frugalzero.chess.positions import random_boards
    from frugalzero.nn.config import architecture
    from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig, pack_inputs
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.nn.throughput import BareNet
    from frugalzero.runtime.timing import best_rate, rate

    torch.manual_seed(0)
    net_config = architecture(args.arch)
    net = PolicyValueNet(net_config).eval()
    config = EvaluatorConfig(
        device=args.device,
        precision=args.precision,
        backend=args.backend,
        threads=args.threads,
        compile=args.compile,
        cache_size=0,
    )
    boards = random_boards(args.batch * 4, seed=1)  # distinct positions; the cache is off anyway
    batches = [boards[i : i + args.batch] for i in range(0, len(boards), args.batch)]
    stream = batches * 4
    flops = net_config.flops_per_position()

    with Evaluator(net, config) as evaluator:
        # the raw network exactly as the evaluator runs it: device, precision, layout, threads,
        # compilation; its input planes are ready in advance
        bare = BareNet(net, config, evaluator.threads, args.batch, evaluator.compiled)
        runner, planes = bare.runner, bare.planes
        reference = None
        if runner.precision == "int8":  # the default precision, as its evaluator would run it
            compiles = config.compile == "on" or (
                config.compile == "auto" and evaluator.backend == "process"
            )
            auto = replace(config, precision="auto")
            reference = BareNet(net, auto, evaluator.threads, args.batch, compiles)

        def evaluate_stream() -> None:
            in_flight: deque = deque()
            for batch in stream:  # keep batches in flight so neither side waits
                in_flight.append(evaluator.submit(batch))
                if len(in_flight) > args.in_flight:
                    in_flight.popleft().result()
            while in_flight:
                in_flight.popleft().result()

        def client_only() -> None:  # the caller's share of the work: moves, frames, packing
            for batch in batches:
                pack_inputs([net_input_from_board(b) for b in batch])

        onnx = _onnx_forward(net, planes.cpu().numpy(), evaluator.threads) if args.onnx else None
        plain = _plain_int8(runner, planes) if args.plain_int8 and reference else None
        evaluate_stream()
        rounds: dict[str, list[float]] = {"peak": [], "net": [], "eval": [], "client": []}
        rounds["onnx"], rounds["ref_peak"], rounds["ref_net"], rounds["plain"] = [], [], [], []
        for _ in range(args.rounds):
            rounds["peak"].append(matmul_gflops(runner.dtype, runner.device, min_seconds=0.2))
            rounds["net"].append(bare.positions_per_s())
            if reference is not None:
                ref = reference.runner
                rounds["ref_peak"].append(matmul_gflops(ref.dtype, ref.device, min_seconds=0.2))
                rounds["ref_net"].append(reference.positions_per_s())
            if plain is not None:
                rounds["plain"].append(best_rate(plain, args.batch))
            if onnx is not None:
                rounds["onnx"].append(rate(onnx, args.batch, min_seconds=0.3))
            rounds["eval"].append(rate(evaluate_stream, len(stream) * args.batch, 0.3, warmup=0))
            rounds["client"].append(rate(client_only, len(boards), min_seconds=0.2, warmup=0))

    net_gflops = [r * flops / 1e9 for r in rounds["net"]]
    extra = {}
    if rounds["onnx"]:
        extra["onnx_positions_per_s"] = round(median(rounds["onnx"]), 1)
        ratios = [o / n for o, n in zip(rounds["onnx"], rounds["net"])]
        extra["onnx_over_net"] = round(median(ratios), 3)
    if reference is not None:
        extra.update(_reference(reference, rounds, flops))
    if rounds["plain"]:
        extra["plain_int8_positions_per_s"] = round(median(rounds["plain"]), 1)
        ratios = [n / p for n, p in zip(rounds["net"], rounds["plain"])]
        extra["over_plain_int8"] = round(median(ratios), 3)
    # int8: this process's own quantize and compile of the bare net (the evaluator's inference
    # process paid the same once)
    extra.update({f"int8_{k}": round(v, 2) for k, v in runner.timings.items()})
    return {
        "arch": args.arch,
        "batch": args.batch,
        "device": str(runner.device),
        "precision": runner.precision,
        "compiled": runner.compiled,
        "backend": evaluator.backend,
        "threads": evaluator.threads,
        "net_positions_per_s": round(median(rounds["net"]), 1),
        "evaluator_positions_per_s": round(median(rounds["eval"]), 1),
        "client_positions_per_s": round(median(rounds["client"]), 1),
        "matmul_gflops": round(median(rounds["peak"]), 1),
        "net_gflops": round(median(net_gflops), 1),
        "fraction_of_peak": round(median([g / p for g, p in zip(net_gflops, rounds["peak"])]), 3),
        "evaluator_over_net": round(
            median([e / n for e, n in zip(rounds["eval"], rounds["net"])]), 3
        ),
        "net_flops_per_position": flops,
        **extra,
        "rounds": args.rounds,
    }


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """The net at ``args.compare`` against the net at ``args.precision`` (the reference), each
    as ``NetRunner`` runs it for an evaluator (its history rule, layout, compilation), on the
    same positions: ``nn.compare``'s report."""
    import torch

    from frugalzero.nn import compare as stats
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.config import EvaluatorConfig, architecture
    from frugalzero.nn.evaluator import pack_inputs
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.nn.runner import NetRunner
    from frugalzero.nn.shipped import resolve_net_path
    from frugalzero.runtime.cores import available_cores

    inputs = read_positions(args.positions, args.limit)
    if args.net:
        net, meta = load_net(resolve_net_path(args.net))
        name, net_id = args.net, meta.net_id
    else:
        torch.manual_seed(0)
        net, name, net_id = PolicyValueNet(architecture(args.arch)).eval(), None, None
    backend = args.backend
    if backend == "auto":
        backend = "process" if available_cores() >= 2 else "inline"
    # compiled as an evaluator with these settings would compile it (the UCI engine: 'off')
    compiles = args.compile == "on" or (args.compile == "auto" and backend == "process")
    threads = args.threads or available_cores()
    runners = {}
    for side, precision in (("reference", args.precision), ("compared", args.compare)):
        config = EvaluatorConfig(
            device=args.device, precision=precision, compile=args.compile, cache_size=0
        )
        runners[side] = NetRunner(net, config, threads, compile=compiles)
    parts = []
    for start in range(0, len(inputs), args.batch):
        batch = pack_inputs(inputs[start : start + args.batch])
        ref_priors, ref_values, _ = runners["reference"].run(*batch)
        priors, values, _ = runners["compared"].run(*batch)
        parts.append(stats.position_errors(ref_values, ref_priors, values, priors))
    ref, other = runners["reference"], runners["compared"]
    result: dict[str, Any] = {
        "net": name or f"random {args.arch}",
        "net_id": net_id,
        "arch": f"{net.config.blocks}x{net.config.filters}",
        "positions_file": args.positions,
        "precision": other.precision,
        "reference_precision": ref.precision,
        "compiled": other.compiled,
        "reference_compiled": ref.compiled,
        "int8_graph": other.int8_graph or ref.int8_graph,
        "history_fill": ref.history_fill,
        "device": str(ref.device),
        "threads": threads,
        **stats.report(stats.concatenate(parts)),
    }
    return _rounded(result)


def read_positions(path: str, limit: int = 0) -> list:
    """The positions of a JSON-lines file, each reached by its game's ``moves`` (UCI, from the
    start position) so it keeps its history; a line's ``fen``, when given, must be the
    position reached. ``limit``: the first N lines only (0: all)."""
    import json

    import chess

    from frugalzero.chess.history import GameHistory
    from frugalzero.errors import UserError

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(
            f"{path}: cannot read the positions ({exc.strerror}); see --positions"
        ) from None
    inputs = []
    for number, line in enumerate(lines, 1):
        if limit and len(inputs) >= limit:
            break
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            history = GameHistory(chess.Board())
            for uci in row["moves"]:
                move = chess.Move.from_uci(uci)
                if not history.board.is_legal(move):
                    raise ValueError(f"illegal move {uci}")
                history.push(move)
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{path}:{number}: not a game's moves ({exc})") from None
        if "fen" in row and history.board.fen() != row["fen"]:
            raise UserError(f"{path}:{number}: its moves do not reach its fen")
        if not any(history.board.legal_moves):
            raise UserError(f"{path}:{number}: the game is over there (no legal move)")
        inputs.append(history.net_input())
    if not inputs:
        raise UserError(f"{path}: no positions")
    return inputs


def _rounded(result: dict[str, Any]) -> dict[str, Any]:
    """Figures to the digits that mean something: points to 3 decimals, KL to 4 significant."""
    for key in ("winrate_error", "top_policy_delta"):
        result[key] = {k: round(v, 3) for k, v in result[key].items()}
    result["policy_kl"] = {k: float(f"{v:.4g}") for k, v in result["policy_kl"].items()}
    result["top_move_changed_pct"] = round(result["top_move_changed_pct"], 2)
    return result


def _reference(reference, rounds: dict[str, list[float]], flops: int) -> dict:
    """The int8 net's reference, timed in the same rounds: the net at precision 'auto' against
    its own matmul peak, and int8's positions/s over it (the median of the rounds' ratios)."""
    from frugalzero.bench.timing import median

    ref_gflops = [r * flops / 1e9 for r in rounds["ref_net"]]
    return {
        "reference_precision": reference.runner.precision,
        "reference_compiled": reference.runner.compiled,
        "reference_net_positions_per_s": round(median(rounds["ref_net"]), 1),
        "reference_matmul_gflops": round(median(rounds["ref_peak"]), 1),
        "reference_fraction_of_peak": round(
            median([g / p for g, p in zip(ref_gflops, rounds["ref_peak"])]), 3
        ),
        "over_reference": round(
            median([n / r for n, r in zip(rounds["net"], rounds["ref_net"])]), 3
        ),
    }


def _plain_int8(runner, planes):
    """A call that runs ``planes`` through ``runner``'s net quantized with every layer int8
    (``nn.quantize.PLAIN``), built as the runner built its own (compiled or lowered), run as
    the runner runs an int8 net (channels-last, no autocast)."""
    import torch

    from frugalzero.nn.quantize import PLAIN, int8_model

    model = int8_model(runner.net, compile=runner.int8_graph == "aoti", recipe=PLAIN).model
    x = planes.contiguous(memory_format=torch.channels_last) if runner.channels_last else planes

    def forward() -> None:
        with torch.inference_mode():
            model(x)

    return forward


def _onnx_forward(net, planes, threads: int):
    """A call that runs ``planes`` through ``net`` exported to ONNX, in onnxruntime on the CPU
    with ``threads`` threads (float32: the file's precision)."""
    import tempfile
    from pathlib import Path

    import onnxruntime

    from frugalzero.nn.checkpoint import NetMeta
    from frugalzero.nn.export import INPUT, export_onnx

    with tempfile.TemporaryDirectory() as folder:
        path = export_onnx(net, NetMeta(net.config), Path(folder) / "net.onnx")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
    feed = {INPUT: planes.astype("float32")}
    return lambda: session.run(None, feed)
