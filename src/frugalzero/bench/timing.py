"""Timing helpers the benchmarks share: a rate over a minimum time, the matmul peak, medians."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


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
