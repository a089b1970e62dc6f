"""What only the benchmarks need: the matmul peak and medians (rates: ``runtime.timing``; the bare
network: ``nn.throughput``)."""

from __future__ import annotations

import statistics

from frugalzero.runtime.timing import rate


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
