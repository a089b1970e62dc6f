"""Rates measured on a noisy machine: over a minimum time, or the best of short windows."""

from __future__ import annotations

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
