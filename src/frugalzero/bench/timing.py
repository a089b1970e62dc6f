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


def best_rate(
    fn: Callable[[], object], items: int, windows: int = 5, window_seconds: float = 0.2
) -> float:
    """The fastest of ``windows`` short measurements of ``rate``: what ``fn`` can do on this
    machine right now. Other work can only slow a window down, so the best one is a reference
    a busy moment cannot drag down (one median-of-one reading was once 32.6 positions/s)."""
    return max(rate(fn, items, window_seconds, warmup=0) for _ in range(windows))


class BareNet:
    """``batch`` ready positions through a network exactly as an evaluator with ``config`` runs
    it (device, precision, layout, ``threads``, compilation) and nothing else: the network's own
    throughput, the reference of ``bench nn``, ``selfplay`` and ``uci``. Call it to run once."""

    def __init__(self, net, config, threads: int, batch: int, compiled: bool) -> None:
        import torch

        from frugalzero.chess.encoding import encode
        from frugalzero.chess.history import net_input_from_board
        from frugalzero.chess.positions import random_boards
        from frugalzero.nn.evaluator import NetRunner, pack_inputs

        self.batch = batch
        self.runner = NetRunner(net, config, threads, compile=compiled)
        boards = random_boards(batch, seed=1)
        frames, meta, _, _ = pack_inputs([net_input_from_board(b) for b in boards])
        self.planes = torch.from_numpy(encode(frames, meta)).to(self.runner.device)
        self._sync = torch.cuda.synchronize if self.runner.device.type == "cuda" else None

    def __call__(self) -> None:
        self.runner.forward(self.planes)
        if self._sync is not None:
            self._sync()

    def positions_per_s(self) -> float:
        """Its throughput right now, robustly (``best_rate``)."""
        return best_rate(self, self.batch)


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
