"""Training metrics: one JSON object per line in ``metrics.jsonl``, mirrored to TensorBoard.

Every record carries its ``kind`` ('train', 'swa', 'fit', 'validation', 'iteration'), iteration
and optimiser step. A resumed run first cuts the file back to the lines its checkpoint had seen
(and TensorBoard purges events past the checkpoint's step), so redone steps are not logged
twice.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from frugalzero.layout import METRICS, TENSORBOARD
from frugalzero.output import to_json


class MetricsLog:
    """Append-only JSON-lines log plus a lazily opened TensorBoard writer."""

    def __init__(self, run_dir: Path, tensorboard: bool = True) -> None:
        self.path = run_dir / METRICS
        self.run_dir = run_dir
        self.tensorboard = tensorboard
        self.lines = _count_lines(self.path)
        self._writer = None
        self._purge_step: int | None = None

    def truncate(self, lines: int, step: int) -> None:
        """Keep the first ``lines`` records (a checkpoint's view) and purge later TB events."""
        if self.path.exists():
            with self.path.open("rb") as handle:
                kept = handle.read().split(b"\n")[:lines]
            data = b"".join(line + b"\n" for line in kept)
            with self.path.open("wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        self.lines = min(lines, _count_lines(self.path))
        self._purge_step = step + 1

    def write(self, kind: str, iteration: int, step: int, values: dict[str, Any]) -> None:
        record = {"kind": kind, "iteration": iteration, "step": step, "time": round(time.time(), 3)}
        record.update(values)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(to_json(record) + "\n")
        self.lines += 1
        writer = self._tb()
        if writer is not None:
            x = iteration if kind in ("validation", "iteration") else step
            for key, value in _flat(values):
                if isinstance(value, int | float) and not isinstance(value, bool):
                    if math.isfinite(value):
                        writer.add_scalar(f"{kind}/{key}", value, x)

    def _tb(self):
        if not self.tensorboard:
            return None
        if self._writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard not installed: the JSON log still has it all
                self.tensorboard = False
                return None
            self._writer = SummaryWriter(
                str(self.run_dir / TENSORBOARD), purge_step=self._purge_step
            )
        return self._writer

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _flat(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as ('a/b', value) pairs (TensorBoard tags)."""
    out: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            out.extend(_flat(value, f"{prefix}{key}/"))
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return handle.read().count(b"\n")


def read_metrics(run_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """The records of a run's metrics.jsonl (optionally one kind); a torn last line is skipped."""
    path = run_dir / METRICS
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if kind is None or record.get("kind") == kind:
            out.append(record)
    return out
