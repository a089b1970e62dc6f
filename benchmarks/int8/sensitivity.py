"""Which layers' int8 costs the most (issue 71): KataGo's error statistics (``nn.compare``) of
the int8 net against bf16 on the held-out positions, with one layer at a time left in float
(``--sweep leave-one-out``), with one layer alone in int8 (``only-one``), with more
calibration positions (``calibration``), with the stem's input or weights alone quantized
(``stem-parts``, in the fp32 net), or for given recipes (``--recipe``: modules kept in fp32 or
bf16, or quantized alone: ``nn.int8_backend.MODES``), each on top of ``--base``, the
activations' ranges set by ``--observer``.

    .venv/bin/python benchmarks/int8/sensitivity.py small --sweep leave-one-out --limit 300
    .venv/bin/python benchmarks/int8/sensitivity.py default --limit 0 \
        --recipe 'stem=bf16,tower.*.conv2=alone'

Each variant is the product's own quantization (``nn.int8_backend.quantize`` with each
module's mode, calibrated on ``nn.quantize.calibration_planes``: the shipped games, never the
held-out ones), lowered to oneDNN's int8 ops (``lower``: the UCI engine's uncompiled int8, no
compile per variant) and run through a ``NetRunner`` as an evaluator runs a net (history,
channels-last, the legal moves' softmax). The reference is the net at bf16 (uncompiled). The
positions are ``bench nn --compare``'s (benchmarks/results/history/heldout-games.jsonl), the
first ``--limit``. One JSON line a variant is appended to ``--out`` with the date and the load.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import fnmatch
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from frugalzero.bench.nn import HELDOUT, _rounded, read_positions
from frugalzero.nn import compare as stats
from frugalzero.nn import int8_backend
from frugalzero.nn.checkpoint import load_net
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.nn.evaluator import pack_inputs
from frugalzero.nn.int8_backend import BF16, FLOAT, MODES, OBSERVERS
from frugalzero.nn.quantize import CALIBRATION_BATCH, calibration_planes
from frugalzero.nn.runner import NetRunner
from frugalzero.nn.shipped import resolve_net_path

BATCH = 256
OUT = Path("benchmarks/results/int8/sensitivity.jsonl")


def layers(net: torch.nn.Module) -> dict[str, str]:
    """Each quantizable layer of a ResNet (label -> module name): a convolution with its batch
    norm, a squeeze-excitation's two linear layers together, a linear layer."""
    found = {"stem conv": "stem.0"}
    for i, block in enumerate(net.tower):
        found[f"block {i} conv1"] = f"tower.{i}.conv1"
        found[f"block {i} conv2"] = f"tower.{i}.conv2"
        if isinstance(block.se, torch.nn.Module) and hasattr(block.se, "fc1"):
            found[f"block {i} SE"] = f"tower.{i}.se"
    found |= {
        "policy conv 3x3": "policy.0",
        "policy conv 1x1": "policy.2",
        "value conv 1x1": "value.0",
        "value linear 1": "value.3",
        "value linear 2": "value.5",
    }
    return found


def parse_recipe(net: torch.nn.Module, text: str) -> dict[str, str]:
    """``NAME=MODE,...`` (a bare NAME: float) as modules' modes, NAME matched as a pattern
    against the net's module names."""
    names = [n for n, _ in net.named_modules() if n]
    modes = {}
    for item in filter(None, text.split(",")):
        pattern, _, mode = item.partition("=")
        mode = mode or FLOAT
        if mode not in MODES:
            raise SystemExit(f"{item}: no mode {mode!r}")
        found = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not found:
            raise SystemExit(f"{item}: no module matches")
        modes.update({n: mode for n in found})
    return modes


def macs(net: torch.nn.Module, names: list[str]) -> int:
    """Multiply-adds of one position in the convolutions and linear layers under ``names``."""
    total = 0
    for name, module in net.named_modules():
        if not any(name == n or name.startswith(n + ".") for n in names):
            continue
        if isinstance(module, torch.nn.Conv2d):
            total += module.weight.numel() * 64
        elif isinstance(module, torch.nn.Linear):
            total += module.weight.numel()
    return total


def weights_quantized(graph: torch.fx.GraphModule) -> int:
    """Convolutions and linear layers whose weights the graph dequantizes (the int8 ones)."""
    target = "quantized_decomposed.dequantize_per_channel.default"
    return sum(1 for n in graph.graph.nodes if str(n.target) == target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("net", help="a shipped net (small, default) or a net file")
    parser.add_argument(
        "--sweep", choices=["leave-one-out", "only-one", "calibration", "stem-parts"]
    )
    parser.add_argument(
        "--recipe",
        action="append",
        default=[],
        help="a recipe: comma-separated NAME=MODE (nn.int8_backend.MODES; a bare NAME: float; "
        "NAME may be a pattern, 'tower.*.conv2'; '' = all int8 by default); repeatable",
    )
    parser.add_argument("--base", default="", help="a recipe under every variant")
    parser.add_argument("--observer", choices=OBSERVERS, default="minmax")
    parser.add_argument("--calibration", type=int, default=0, help="positions (0: shipped)")
    parser.add_argument("--sizes", default="512,1024,2048,4096", help="--sweep calibration's")
    parser.add_argument("--limit", type=int, default=300, help="held-out positions (0: all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    net, meta = load_net(resolve_net_path(args.net))
    inputs = read_positions(HELDOUT, args.limit)
    batches = [pack_inputs(inputs[i : i + BATCH]) for i in range(0, len(inputs), BATCH)]
    config = EvaluatorConfig(device="cpu", precision="bf16", compile="off", cache_size=0)
    reference = [NetRunner(net, config, args.threads).run(*b)[:2] for b in batches]
    fp32 = EvaluatorConfig(device="cpu", precision="fp32", compile="off", cache_size=0)
    runner = NetRunner(net, fp32, args.threads)  # its model is swapped for each variant
    float_net = runner.net
    named = layers(net)

    head = f"{'variant':32} {'float MACs':>10} {'wr p99':>7} {'wr max':>7} {'pol p99':>7}"
    print(head + f" {'pol max':>7} {'KL p99':>8} {'top chg':>7} {'s':>5}", flush=True)
    base = parse_recipe(net, args.base)
    variants: list[tuple[str, dict[str, str], int]] = []  # label, modes, calibration
    if args.sweep == "leave-one-out":
        variants.append(("base", {}, args.calibration))
        for label, name in named.items():
            variants.append((f"{label} float", {name: FLOAT}, args.calibration))
    elif args.sweep == "only-one":
        every = {n: FLOAT for n in named.values()}
        variants.append(("all float", every, args.calibration))
        for label, name in named.items():
            others = {n: m for n, m in every.items() if n != name}
            variants.append((f"only {label} int8", others, args.calibration))
    elif args.sweep == "calibration":
        for size in args.sizes.split(","):
            variants.append((f"calibration {size}", {}, int(size)))
    elif args.sweep == "stem-parts":
        calibration = torch.from_numpy(np.array(calibration_planes(net.config.history_fill)))
        for label, model in stem_parts(float_net, calibration):
            evaluate(args, net, meta, runner, batches, reference, label, model, {})
    for recipe in args.recipe:
        variants.append((recipe or "all int8", parse_recipe(net, recipe), args.calibration))

    for label, modes, size in variants:
        modes = {**base, **modes}
        start = time.perf_counter()
        planes = calibration_planes(net.config.history_fill, size or None)
        calibration = torch.from_numpy(np.array(planes, dtype=np.float32))
        quantized = int8_backend.quantize(
            float_net, calibration, CALIBRATION_BATCH, modes, args.observer
        )
        lowered = int8_backend.lower(quantized, calibration[:CALIBRATION_BATCH])
        extra = {
            "int8_graph": "lowered",
            "modes": modes,
            "observer": args.observer,
            "weights_int8": weights_quantized(quantized),
            "calibration_positions": len(planes),
        }
        evaluate(args, net, meta, runner, batches, reference, label, lowered, extra, start)


def evaluate(args, net, meta, runner, batches, reference, label, model, extra, start=None):
    """``model`` through ``runner`` on the batches against the reference: printed, and a JSON
    line appended to ``--out``."""
    start = start or time.perf_counter()
    runner._model = model
    parts = []
    for batch, (ref_priors, ref_values) in zip(batches, reference):
        priors, values, _ = runner.run(*batch)
        parts.append(stats.position_errors(ref_values, ref_priors, values, priors))
    report = _rounded(stats.report(stats.concatenate(parts)))
    seconds = time.perf_counter() - start
    named = list(layers(net).values())
    keep = [n for n, m in extra.get("modes", {}).items() if m in (FLOAT, BF16)]
    share = macs(net, keep) / macs(net, named)
    wr, pol, kl = report["winrate_error"], report["top_policy_delta"], report["policy_kl"]
    print(
        f"{label:32} {share:10.1%} {wr['p99']:7.2f} {wr['max']:7.2f} {pol['p99']:7.2f} "
        f"{pol['max']:7.2f} {kl['p99']:8.4f} {report['top_move_changed_pct']:6.1f}% "
        f"{seconds:5.0f}",
        flush=True,
    )
    record = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "command": " ".join(["benchmarks/int8/sensitivity.py", *sys.argv[1:]]),
        "note": args.note,
        "net": args.net,
        "net_id": meta.net_id,
        "arch": f"{net.config.blocks}x{net.config.filters}",
        "positions_file": HELDOUT,
        "reference": "bf16 uncompiled",
        "int8_graph": "fake-quantized fp32 net",
        "variant": label,
        "base": args.base,
        **extra,
        "float_mac_share": round(share, 4),
        "threads": args.threads,
        "seconds": round(seconds, 1),
        **report,
    }
    with open(args.out, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def stem_parts(float_net: torch.nn.Module, calibration: torch.Tensor) -> list:
    """Where the stem's int8 error comes from: the fp32 net with only the stem's input
    quantized as the product quantizes it (its range by each observer), or only the stem's
    weights (its batch norm folded in, per output channel, symmetric, as torchao's observer
    scales them: max |w| / 127.5), or the stem in bf16."""
    variants = [("fp32, nothing quantized", float_net)]
    for observer in OBSERVERS:
        quantized = int8_backend.quantize(
            float_net, calibration, CALIBRATION_BATCH, observer=observer
        )
        node = next(
            n
            for n in quantized.graph.nodes
            if str(n.target).endswith("quantize_per_tensor.default")
        )
        assert node.args[0].op == "placeholder"  # the planes
        scale, zero = float(node.args[1]), int(node.args[2])

        def quantized_input(x, scale=scale, zero=zero):
            q = torch.clamp(torch.round(x / scale) + zero, 0, 255)
            return float_net((q - zero) * scale)

        variants.append(
            (f"stem input int8 ({observer}: 0 to {(255 - zero) * scale:.2f})", quantized_input)
        )
    conv, norm = float_net.stem[0][0], float_net.stem[0][1]
    fold = (norm.weight / torch.sqrt(norm.running_var + norm.eps)).detach()[:, None, None, None]
    folded = conv.weight.detach() * fold
    step = folded.abs().amax(dim=(1, 2, 3), keepdim=True) / 127.5
    rounded = torch.clamp(torch.round(folded / step), -128, 127) * step
    weights = copy.deepcopy(float_net)
    with torch.no_grad():
        weights.stem[0][0].weight.copy_(rounded / fold)
    variants.append(("stem weights int8 (per channel)", weights))

    class Bf16(torch.nn.Module):
        def __init__(self, layer: torch.nn.Module) -> None:
            super().__init__()
            self.layer = copy.deepcopy(layer).to(torch.bfloat16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layer(x.to(torch.bfloat16)).float()

    bf16 = copy.deepcopy(float_net)
    bf16.stem[0][0] = Bf16(float_net.stem[0][0])
    variants.append(("stem convolution bf16", bf16))
    return variants


if __name__ == "__main__":
    main()
