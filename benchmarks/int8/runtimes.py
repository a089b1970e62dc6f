"""Which int8 runtime for CPU inference (issue 64): each candidate against PyTorch bf16, in one run.

    .venv/bin/python benchmarks/int8/runtimes.py small [--only pt2e,openvino,ort] [--rounds 5]
    .venv/bin/python benchmarks/int8/runtimes.py medium --only pt2e,openvino

The net: a shipped one (``small``, ``medium``). The reference is the net exactly as the evaluator
runs it (``NetRunner``: eval mode, channels-last, bf16 autocast, torch.compile with frozen
weights), here in the same process. Every candidate runs batch 128 on 2 threads; speed is the
median over interleaved rounds (each round times every candidate for ``--seconds``), so a busy
moment hits all of them alike. Positions: those of real games (the PGNs under
benchmarks/results, up to 12 games a file, 4 positions a game, the game's history kept):
512 from one fifth of the games calibrate, 2,000 from the other games are held out for quality.
Quality against the bf16 net: top-1 over the legal moves and the value's mean absolute
difference; bf16 against fp32 (eager) is the floor any low precision starts from.

Candidates (each in try/except: an error is recorded, the others go on):
  pt2e          torchao PT2E, X86InductorQuantizer (static, per-channel int8 weights, uint8
                activations, histogram observers), torch.compile with freezing; fp32 between
  pt2e-bf16     the same compiled under bf16 autocast (what is not int8 runs in bf16)
  openvino-*    the net's ONNX export -> NNCF PTQ (512 positions) -> ov.compile_model CPU,
                1 stream, 2 threads, hint LATENCY or THROUGHPUT; openvino-fp32 for reference
  ort-*         ONNX Runtime static PTQ in formats the int8 probe did not try: QOperator u8s8,
                QDQ s8s8 (intra-op 2 threads, graph optimisation all)
Prints a table and appends one JSON line a candidate to benchmarks/int8/runtimes.jsonl.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import chess.pgn
import numpy as np
import torch

from frugalzero.bench.timing import matmul_gflops
from frugalzero.chess.encoding import encode, frames_array
from frugalzero.chess.history import GameHistory
from frugalzero.nn.checkpoint import load_net
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.nn.export import export_onnx
from frugalzero.nn.model import value_from_output
from frugalzero.nn.runner import NetRunner
from frugalzero.nn.shipped import resolve_net_path
from frugalzero.runtime.timing import rate

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BATCH, THREADS, CALIBRATION, HELD_OUT = 128, 2, 512, 2000
WORK = Path(tempfile.gettempdir()) / "frugalzero-int8"
ALL = "pt2e,pt2e-bf16,openvino-fp32,openvino-latency,openvino-throughput,ort-qop-u8s8,ort-qdq-s8s8"


# -- positions -------------------------------------------------------------------------------
def real_positions(seed: int = 7, per_file: int = 12, per_game: int = 4):
    """(calibration inputs, held-out inputs): NetInputs of positions of real games, the two
    sets from different games, no position in both."""
    rng = random.Random(seed)
    files = sorted(
        p
        for p in glob.glob(str(ROOT / "benchmarks/results/**/*.pgn"), recursive=True)
        if os.path.getsize(p) > 20_000
    )
    calibration, held, seen = [], [], set()
    game_no = 0
    for path in files:
        with open(path) as f:
            for _ in range(per_file):
                game = chess.pgn.read_game(f)
                if game is None:
                    break
                moves = list(game.mainline_moves())
                if len(moves) < 2:
                    continue
                plies = sorted(rng.sample(range(len(moves)), min(per_game, len(moves))))
                history = GameHistory(game.board())
                target = calibration if game_no % 5 == 0 else held
                game_no += 1
                for ply, move in enumerate(moves):
                    if ply in plies and any(history.board.legal_moves):
                        inp = history.net_input()
                        if inp.key not in seen:
                            seen.add(inp.key)
                            target.append(inp)
                    history.push(move)
    rng.shuffle(calibration)
    rng.shuffle(held)
    if len(calibration) < CALIBRATION or len(held) < HELD_OUT:
        sys.exit(f"too few positions: {len(calibration)} calibration, {len(held)} held out")
    return calibration[:CALIBRATION], held[:HELD_OUT], game_no, len(files)


def planes_of(inputs) -> np.ndarray:
    frames = frames_array([i.frames for i in inputs], len(inputs))
    meta = np.array([i.meta for i in inputs], dtype=np.int64)
    return np.ascontiguousarray(encode(frames, meta), dtype=np.float32)


def padded_batches(planes: np.ndarray) -> list[np.ndarray]:
    n = -(-len(planes) // BATCH) * BATCH
    full = np.concatenate([planes, np.repeat(planes[-1:], n - len(planes), axis=0)])
    return [np.ascontiguousarray(full[i : i + BATCH]) for i in range(0, n, BATCH)]


# -- candidates: each is (call on a (128, 119, 8, 8) float32 array -> (policy, value), info) ---
def bf16_reference(net):
    """The net as the evaluator runs it: NetRunner with the evaluator's defaults, compiled."""
    config = EvaluatorConfig(device="cpu", threads=THREADS, compile="on", cache_size=0)
    start = time.perf_counter()
    runner = NetRunner(net, config, THREADS, compile=True)
    compile_s = time.perf_counter() - start  # compiles at batch 64 (its probe); 128 below
    return (lambda x: runner.forward(torch.from_numpy(x))), {
        "precision": runner.precision,
        "compiled": runner.compiled,
        "compile_s": round(compile_s, 1),
    }


def fp32_eager(net):
    model = copy.deepcopy(net).float().eval()

    def call(x):
        with torch.inference_mode():
            return model(torch.from_numpy(x))

    return call, {}


def pt2e(net, calib: np.ndarray, bf16: bool):
    import torch._inductor.config as inductor
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    inductor.freezing = True  # as compile_module(freeze=True) sets it
    start = time.perf_counter()
    model = copy.deepcopy(net).float().eval()
    example = torch.from_numpy(calib[:BATCH])
    exported = torch.export.export(model, (example,)).module()
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for i in range(0, len(calib), BATCH):
            prepared(torch.from_numpy(calib[i : i + BATCH]))
    converted = convert_pt2e(prepared)
    quantize_s = time.perf_counter() - start
    compiled = torch.compile(converted)
    autocast = torch.autocast("cpu", torch.bfloat16, enabled=bf16)

    def call(x):
        planes = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)
        with torch.no_grad(), autocast:
            return compiled(planes)

    start = time.perf_counter()
    call(calib[:BATCH])
    compile_s = time.perf_counter() - start
    return call, {"quantize_s": round(quantize_s, 1), "compile_s": round(compile_s, 1)}


def onnx_file(net, meta, name: str) -> Path:
    WORK.mkdir(exist_ok=True)
    path = WORK / f"{name}.onnx"
    export_onnx(net, meta, path)
    return path


def openvino(onnx_path: Path, calib: np.ndarray, hint: str | None, name: str):
    import openvino as ov

    start = time.perf_counter()
    model = ov.Core().read_model(str(onnx_path))
    info: dict = {}
    if hint is not None:  # int8: NNCF post-training quantization
        import nncf
        from nncf.quantization.advanced_parameters import (
            AdvancedQuantizationParameters,
            OverflowFix,
        )

        # one position an item (NNCF's statistics assume batch 1); no 7-bit "overflow fix" of
        # the first layer, which VNNI does not need (measured: 91.1% -> 92.3% top-1 on small)
        items = [calib[i : i + 1] for i in range(len(calib))]
        model = nncf.quantize(
            model,
            nncf.Dataset(items),
            subset_size=len(items),
            target_device=nncf.TargetDevice.CPU,
            advanced_parameters=AdvancedQuantizationParameters(overflow_fix=OverflowFix.DISABLE),
        )
    else:
        hint = "LATENCY"
    info["quantize_s"] = round(time.perf_counter() - start, 1)
    model.reshape({0: [BATCH, calib.shape[1], 8, 8]})
    xml = WORK / f"{name}.xml"
    ov.save_model(model, str(xml))
    cache = WORK / f"ov-cache-{name}"
    properties = {
        "INFERENCE_NUM_THREADS": THREADS,
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": hint,
        "CACHE_DIR": str(cache),
    }
    for f in cache.glob("*"):  # a cold first compile
        f.unlink()
    start = time.perf_counter()
    compiled = ov.Core().compile_model(str(xml), "CPU", properties)
    info["compile_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()  # a second start: the model file and the compiled blob cached
    compiled = ov.Core().compile_model(str(xml), "CPU", properties)
    info["cached_compile_s"] = round(time.perf_counter() - start, 2)
    info["inference_precision"] = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    info["hint"] = hint
    request = compiled.create_infer_request()

    def call(x):
        request.infer({0: x}, share_inputs=True, share_outputs=True)
        return request.get_output_tensor(0).data, request.get_output_tensor(1).data

    return call, info


def ort(onnx_path: Path, calib: np.ndarray, fmt: str, activations: str, name: str):
    import onnxruntime as rt
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    batches = iter([{"planes": calib[i : i + 64]} for i in range(0, len(calib), 64)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)

    start = time.perf_counter()
    pre = WORK / f"{name}.pre.onnx"
    quant_pre_process(str(onnx_path), str(pre))
    dst = WORK / f"{name}.onnx"
    quantize_static(
        str(pre),
        str(dst),
        Reader(),
        quant_format=getattr(QuantFormat, fmt),
        per_channel=True,
        activation_type=getattr(QuantType, activations),
        weight_type=QuantType.QInt8,
    )
    quantize_s = time.perf_counter() - start
    options = rt.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = THREADS, 1
    options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    session = rt.InferenceSession(str(dst), options, providers=["CPUExecutionProvider"])
    compile_s = time.perf_counter() - start

    def call(x):
        return session.run(None, {"planes": x})

    return call, {"quantize_s": round(quantize_s, 1), "compile_s": round(compile_s, 2)}


# -- quality and peaks -----------------------------------------------------------------------
def as_float(t) -> torch.Tensor:
    return t.float() if torch.is_tensor(t) else torch.from_numpy(np.asarray(t, dtype=np.float32))


def outputs(call, batches, n: int, head: str) -> tuple[np.ndarray, np.ndarray]:
    policies, values = [], []
    for x in batches:
        policy, value = call(x)
        policies.append(as_float(policy).numpy().copy())
        values.append(value_from_output(as_float(value), head).numpy().copy())
    return np.concatenate(policies)[:n], np.concatenate(values)[:n]


def agreement(a, b, inputs) -> tuple[float, float]:
    (pa, va), (pb, vb) = a, b
    top1 = np.mean(
        [np.argmax(pa[k, i.indices]) == np.argmax(pb[k, i.indices]) for k, i in enumerate(inputs)]
    )
    return round(float(top1), 4), round(float(np.mean(np.abs(va - vb))), 4)


def int8_gops(size: int = 2048, seconds: float = 0.3) -> float:
    a = torch.randint(-128, 127, (size, size), dtype=torch.int8)
    b = torch.randint(-128, 127, (size, size), dtype=torch.int8)
    return rate(lambda: torch._int_mm(a, b), 2 * size**3, seconds) / 1e9


def autogroup() -> str:
    """This process's scheduler autogroup and its nice (Linux): with autogroups on, `nice -n 19`
    jobs in other sessions still take a fair share of the cores; see the README."""
    try:
        return Path("/proc/self/autogroup").read_text().strip()
    except OSError:
        return ""


def versions() -> dict:
    found = {"torch": torch.__version__, "python": platform.python_version()}
    for module in ("torchao", "openvino", "nncf", "onnxruntime"):
        try:
            found[module] = __import__(module).__version__
        except Exception:
            pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arch", choices=["small", "medium"])
    parser.add_argument("--only", default=ALL, help=f"comma-separated candidates ({ALL})")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per candidate per round")
    parser.add_argument("--no-log", action="store_true", help="do not append to the jsonl")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    wanted = args.only.split(",")

    start = time.perf_counter()
    calib_inputs, held_inputs, games, files = real_positions()
    calib, held = planes_of(calib_inputs), planes_of(held_inputs)
    held_batches = padded_batches(held)
    timing_batch = held_batches[0]
    print(
        f"{len(calib)} calibration + {len(held)} held-out positions from {games} games in "
        f"{files} PGNs ({time.perf_counter() - start:.1f} s)",
        flush=True,
    )

    net, meta = load_net(resolve_net_path(args.arch))
    head = net.config.value_head
    candidates: dict[str, tuple] = {}
    errors: dict[str, str] = {}
    candidates["bf16"] = bf16_reference(net)
    candidates["fp32-eager"] = fp32_eager(net)
    onnx_path = None
    for name in wanted:
        print(f"building {name} ...", flush=True)
        try:
            if name.startswith(("openvino", "ort")) and onnx_path is None:
                onnx_path = onnx_file(net, meta, args.arch)
            if name == "pt2e":
                candidates[name] = pt2e(net, calib, bf16=False)
            elif name == "pt2e-bf16":
                candidates[name] = pt2e(net, calib, bf16=True)
            elif name == "openvino-fp32":
                candidates[name] = openvino(onnx_path, calib, None, f"{args.arch}-{name}")
            elif name in ("openvino-latency", "openvino-throughput"):
                hint = name.split("-")[1].upper()
                candidates[name] = openvino(onnx_path, calib, hint, f"{args.arch}-{name}")
            elif name == "ort-qop-u8s8":
                candidates[name] = ort(
                    onnx_path, calib, "QOperator", "QUInt8", f"{args.arch}-{name}"
                )
            elif name == "ort-qdq-s8s8":
                candidates[name] = ort(onnx_path, calib, "QDQ", "QInt8", f"{args.arch}-{name}")
            else:
                raise ValueError(f"unknown candidate {name}")
            print(f"  {name}: {candidates[name][1]}", flush=True)
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            traceback.print_exc()
            print(f"  {name} failed: {errors[name]}", flush=True)

    # quality against bf16 (and fp32), on the held-out positions
    results = {}
    for name, (call, _) in list(candidates.items()):
        try:
            results[name] = outputs(call, held_batches, len(held), head)
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            del candidates[name]

    # speed: interleaved rounds, each candidate `seconds` on the same batch
    for call, _ in candidates.values():  # warm every one up
        for _ in range(3):
            call(timing_batch)
    rates: dict[str, list[float]] = {name: [] for name in candidates}
    peaks: dict[str, list[float]] = {"bf16_gflops": [], "int8_gops": []}
    for _ in range(args.rounds):
        peaks["bf16_gflops"].append(
            matmul_gflops(torch.bfloat16, torch.device("cpu"), min_seconds=0.3)
        )
        peaks["int8_gops"].append(int8_gops())
        for name, (call, _) in candidates.items():
            time.sleep(0.05)
            rates[name].append(rate(lambda c=call: c(timing_batch), BATCH, args.seconds))

    bf16_rates = rates["bf16"]
    flops = net.config.flops_per_position()
    rows = []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    common = {
        "date": stamp,
        "autogroup": autogroup(),
        "load_average": os.getloadavg()[0],
        "arch": args.arch,
        "batch": BATCH,
        "threads": THREADS,
        "rounds": args.rounds,
        "calibration": len(calib),
        "held_out": len(held),
        "versions": versions(),
        "bf16_matmul_gflops": round(statistics.median(peaks["bf16_gflops"]), 1),
        "int8_int_mm_gops": round(statistics.median(peaks["int8_gops"]), 1),
    }
    for name, (_, info) in candidates.items():
        ratios = [r / b for r, b in zip(rates[name], bf16_rates)]
        top1, mae = agreement(results["bf16"], results[name], held_inputs)
        top1_fp32, mae_fp32 = agreement(results["fp32-eager"], results[name], held_inputs)
        row = {
            **common,
            "candidate": name,
            "positions_per_s": round(statistics.median(rates[name]), 1),
            "positions_per_s_rounds": [round(r) for r in rates[name]],
            "bf16_positions_per_s": round(statistics.median(bf16_rates), 1),
            "over_bf16": round(statistics.median(ratios), 3),
            "gops": round(statistics.median(rates[name]) * flops / 1e9, 1),
            "top1_vs_bf16": top1,
            "value_mae_vs_bf16": mae,
            "top1_vs_fp32": top1_fp32,
            "value_mae_vs_fp32": mae_fp32,
            **info,
        }
        rows.append(row)
    for name, error in errors.items():
        rows.append({**common, "candidate": name, "error": error})

    print(
        f"\n{args.arch}, batch {BATCH}, {THREADS} threads, {args.rounds} rounds; peaks: bf16 "
        f"matmul {common['bf16_matmul_gflops']} GFLOP/s, int8 _int_mm {common['int8_int_mm_gops']}"
        " GOP/s"
    )
    print(
        f"{'candidate':22} {'pos/s':>8} {'bf16':>8} {'ratio':>6} {'top1':>7} {'MAE':>7} "
        f"{'top1/fp32':>9} {'MAE/fp32':>8}  quantize/compile s"
    )
    for row in rows:
        if "error" in row:
            print(f"{row['candidate']:22} ERROR {row['error']}")
            continue
        times = "/".join(
            str(row[k]) for k in ("quantize_s", "compile_s", "cached_compile_s") if k in row
        )
        print(
            f"{row['candidate']:22} {row['positions_per_s']:8.0f}"
            f" {row['bf16_positions_per_s']:8.0f} {row['over_bf16']:6.2f}"
            f" {row['top1_vs_bf16']:7.2%} {row['value_mae_vs_bf16']:7.4f}"
            f" {row['top1_vs_fp32']:9.2%} {row['value_mae_vs_fp32']:8.4f}  {times}"
        )
    if not args.no_log:
        with open(HERE / "runtimes.jsonl", "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
