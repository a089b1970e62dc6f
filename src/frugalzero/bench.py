"""``frugalzero bench WHAT``: speed measurements that print JSON.

Machines are noisy, so every benchmark measures its reference (matmul peak, raw network
throughput, ...) in the same run, interleaved round by round with the thing measured, and
reports medians of the per-round figures and of the per-round ratios.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable

# name -> module with add_arguments(parser) and run(args) -> dict
BENCHES = {
    "nn": "frugalzero.nn.bench",
    "selfplay": "frugalzero.selfplay.bench",
    "data": "frugalzero.data.bench",
    "label": "frugalzero.expert.bench",
    "train": "frugalzero.train.bench",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="measure speed; prints JSON with --json")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="WHAT")
    for name, module_name in BENCHES.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # that part of frugalzero is not built yet
            raise
        sub = benches.add_parser(name, help=module.__doc__.strip().splitlines()[0])
        module.add_arguments(sub)
        sub.add_argument("--json", action="store_true", help="print one JSON object")
        sub.set_defaults(handler=_runner(name, module))


def _runner(name: str, module) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        from frugalzero.report import emit

        emit(module.run(args), args.json, title=f"bench {name}")
        return 0

    return handler


def rate(fn: Callable[[], object], items: int, min_seconds: float = 0.5, warmup: int = 1) -> float:
    """Items per second of ``fn`` (which handles ``items`` items per call), repeated for at
    least ``min_seconds``."""
    for _ in range(warmup):
        fn()
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return calls * items / elapsed


def matmul_gflops(dtype, device, size: int = 2048, min_seconds: float = 0.5) -> float:
    """Peak of a large square matmul in ``dtype`` on ``device`` right now (GFLOP/s)."""
    import torch

    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)

    def step() -> None:
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()

    return rate(step, 2 * size**3, min_seconds) / 1e9


def median(values: list[float]) -> float:
    return float(statistics.median(values))
