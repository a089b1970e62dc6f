"""What only the benchmarks need: the matmul peak and medians (rates: ``runtime.timing``; the bare
network: ``nn.throughput``)."""

from __future__ import annotations

import statistics

from frugalzero.runtime.timing import rate


def matmul_gflops(dtype, device, size: int = 2048, min_seconds: float = 0.5) -> float:
    """Peak of a large square matmul in ``dtype`` on ``device`` right now (GFLOP/s); for
    ``torch.int8`` an int8 GEMM with int32 sums (``torch._int_mm``, GOP/s), what int8
    convolutions (VNNI, AMX-INT8) are bounded by."""
    import torch

    if dtype == torch.int8:
        a = torch.randint(-128, 128, (size, size), dtype=torch.int8, device=device)
        b = torch.randint(-128, 128, (size, size), dtype=torch.int8, device=device)
        multiply = torch._int_mm
    else:
        a = torch.randn(size, size, device=device).to(dtype)
        b = torch.randn(size, size, device=device).to(dtype)
        multiply = torch.matmul

    def step() -> None:
        multiply(a, b)
        if device.type == "cuda":
            torch.cuda.synchronize()

    return rate(step, 2 * size**3, min_seconds) / 1e9


def median(values: list[float]) -> float:
    return float(statistics.median(values))
