"""Which layers' int8 costs the most agreement: post-training quantization (runtimes.pt2e's
settings) of the whole net but one group of layers, each group in turn left in float.

    .venv/bin/python benchmarks/int8/sensitivity.py small [--games /tmp/int8qat/sf]

Positions as qat.py splits them (its held-out and calibration games). The converted models run
eagerly (reference int8 ops: the same quantize/dequantize arithmetic the compiled kernels do),
so no compile per variant; the figures are top-1 and value MAE against the net's bf16
(NetRunner, compiled), and each group's share of the net's multiply-adds.
"""

from __future__ import annotations

import argparse
import copy
import random
from pathlib import Path

import numpy as np
import qat
import runtimes as rt
import torch

from frugalzero.nn.checkpoint import load_net
from frugalzero.nn.shipped import resolve_net_path


def ptq_eager(net, calib: np.ndarray, skip: list[str]):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    model = copy.deepcopy(net).float().eval()
    exported = torch.export.export(model, (torch.from_numpy(calib[: rt.BATCH]),)).module()
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    for name in skip:
        quantizer.set_module_name_qconfig(name, None)
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for i in range(0, len(calib), rt.BATCH):
            prepared(torch.from_numpy(calib[i : i + rt.BATCH]))
    converted = convert_pt2e(prepared)

    def call(x):
        with torch.no_grad():
            return converted(torch.from_numpy(x))

    return call


def macs(net, names: list[str]) -> int:
    """Multiply-adds of the convolutions and linear layers under ``names`` (one position)."""
    total = 0
    for name, module in net.named_modules():
        if not any(name == n or name.startswith(n + ".") for n in names):
            continue
        if isinstance(module, torch.nn.Conv2d):
            total += module.weight.numel() * 64
        elif isinstance(module, torch.nn.Linear):
            total += module.weight.numel()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arch", choices=["small", "medium"])
    parser.add_argument("--games", type=Path, default=Path("/tmp/int8qat/sf"))
    parser.add_argument("--held", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(rt.THREADS)
    splits, _ = qat.sf_positions(args.games, 8)
    rng = random.Random(args.seed)
    seen: set = set()
    held = qat.dedupe(splits["held"], seen)
    calib = qat.dedupe(splits["calib"], seen)
    rng.shuffle(held)
    rng.shuffle(calib)
    held, calib = held[: args.held], rt.planes_of(calib[:512])
    batches = rt.padded_batches(rt.planes_of(held))
    net, _ = load_net(resolve_net_path(args.arch))
    head = net.config.value_head
    reference = rt.outputs(rt.bf16_reference(net)[0], batches, len(held), head)
    blocks = [f"tower.{i}" for i in range(net.config.blocks)]
    groups = {
        "none (all int8)": [],
        "stem": ["stem"],
        **{b: [b] for b in blocks},
        "policy head": ["policy"],
        "policy head's 1x1 only": ["policy.2"],
        "value head": ["value"],
        "stem + policy head": ["stem", "policy"],
        "stem + heads": ["stem", "policy", "value"],
    }
    everything = macs(net, ["stem", *blocks, "policy", "value"])
    print(f"{'left in float':24} {'MAC share':>9} {'top-1':>7} {'MAE':>7}")
    for label, names in groups.items():
        out = rt.outputs(ptq_eager(net, calib, names), batches, len(held), head)
        top1, mae = rt.agreement(reference, out, held)
        share = macs(net, names) / everything
        print(f"{label:24} {share:9.1%} {top1:7.2%} {mae:7.4f}", flush=True)


if __name__ == "__main__":
    main()
