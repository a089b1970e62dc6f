"""int8 probe for issue 64: a shipped net quantized by ONNX Runtime (static, QDQ, per-channel
int8 weights, uint8 activations calibrated on 512 positions), against the same net's fp32 ONNX.

    frugalzero net export small --onnx runs/int8/small.onnx
    .venv/bin/python benchmarks/int8_probe.py small [MinMax|Percentile|Entropy] [all|heads]

Positions: the 8moves_v3 openings (../shared) continued by 0-40 random legal moves, the game's
history kept: 512 calibrate, the rest (~2,500) are held out. Prints one JSON line: positions/s
at batch 128 on 2 threads (three interleaved rounds each), top-1 agreement over the legal moves
and the value's mean absolute difference. PyTorch's bf16 figure is `frugalzero bench nn --arch
small --batch 128 --threads 2 --json`, run beside it. `heads`: the policy and value heads stay
fp32. A probe, not the product's int8 path: records in benchmarks/results/int8-probe/.
"""

import json
import random
import sys
import time

import chess
import chess.pgn
import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

from frugalzero.chess.encoding import encode, frames_array
from frugalzero.chess.history import GameHistory

OUT = "runs/int8"
BOOK = "../shared/openings/8moves_v3.pgn"


def positions(count: int = 3000, seed: int = 7) -> list:
    rng = random.Random(seed)
    inputs = []
    with open(BOOK) as f:
        while len(inputs) < count and (game := chess.pgn.read_game(f)) is not None:
            history = GameHistory(game.board())
            for move in game.mainline_moves():
                history.push(move)
            for _ in range(rng.randrange(0, 41)):
                moves = list(history.board.legal_moves)
                if not moves:
                    break
                history.push(rng.choice(moves))
            if any(history.board.legal_moves):
                inputs.append(history.net_input())
    return inputs


def session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def rate(net: ort.InferenceSession, planes: np.ndarray, seconds: float = 4.0) -> float:
    net.run(None, {"planes": planes})
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        net.run(None, {"planes": planes})
        done += len(planes)
    return done / (time.perf_counter() - start)


def main(name: str, method: str = "MinMax", keep: str = "all") -> dict:
    src = f"{OUT}/{name}.onnx"
    inputs = positions()
    frames = frames_array([i.frames for i in inputs], len(inputs))
    planes = encode(frames, np.array([i.meta for i in inputs], dtype=np.int64)).copy()
    calibration, held = planes[:512], planes[512:]
    batches = iter([{"planes": calibration[i : i + 64]} for i in range(0, 512, 64)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)

    heads = [
        n.name
        for n in onnx.load(src).graph.node
        if n.op_type in ("Conv", "Gemm") and n.input[1].split(".")[0] in ("policy", "value")
    ]
    dst = f"{OUT}/{name}.{method}.{keep}.int8.onnx"
    start = time.time()
    quantize_static(
        src,
        dst,
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=getattr(CalibrationMethod, method),
        nodes_to_exclude=heads if keep == "heads" else [],
    )
    seconds = time.time() - start
    fp32, int8 = session(src), session(dst)
    rates: dict[str, list[float]] = {"fp32": [], "int8": []}
    for _ in range(3):  # interleaved rounds
        rates["fp32"].append(rate(fp32, held[:128]))
        rates["int8"].append(rate(int8, held[:128]))
    a = [fp32.run(None, {"planes": held[i : i + 256]}) for i in range(0, len(held), 256)]
    b = [int8.run(None, {"planes": held[i : i + 256]}) for i in range(0, len(held), 256)]
    pa, va = (np.concatenate([x[k] for x in a]) for k in (0, 1))
    pb, vb = (np.concatenate([x[k] for x in b]) for k in (0, 1))
    agree = [
        np.argmax(pa[k, inp.indices]) == np.argmax(pb[k, inp.indices])
        for k, inp in enumerate(inputs[512:])
    ]
    ratio = np.median(np.array(rates["int8"]) / np.array(rates["fp32"]))
    return {
        "net": name,
        "calibration_method": method,
        "fp32_nodes": keep,
        "positions_held_out": len(held),
        "calibration": len(calibration),
        "quantize_s": round(seconds, 1),
        "ort_fp32_positions_per_s": [round(r) for r in rates["fp32"]],
        "ort_int8_positions_per_s": [round(r) for r in rates["int8"]],
        "int8_over_ort_fp32": round(float(ratio), 3),
        "top1_agreement": round(float(np.mean(agree)), 4),
        "value_mae": round(float(np.mean(np.abs(va - vb))), 4),
        "threads": 2,
        "batch": 128,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
