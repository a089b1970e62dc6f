"""Where things live in a run directory and in a trainer's directory: every name spelled here
once, and read by the run loop, the trainer, the report and the commands.

A ``frugalzero run`` directory::

    config.toml              the run's identity: written at its first start, never rewritten
    state.json               what has finished (with config.toml's SHA-256)
    clock.json               time spent in the step under way (rewritten every few seconds)
    .frugalzero.lock         held by the one process writing the directory
    metrics.jsonl            one row per iteration (and TensorBoard events beside it)
    data/iter-NNNN/          the iteration's shards
    train/                   the trainer's directory (below)
    nets/iter-NNNN.safetensors, nets/avg-NNNN.safetensors
    matches/*.pgn, elo.csv, report.html, summary.json, ladder.json

A trainer's directory holds its checkpoint (``frugalzero.train.state``), its metrics, and the
nets of its last iteration (``net.safetensors``, ``average.safetensors``) until the run moves
them to ``nets/``. This module imports nothing heavy: the report and the CLI read it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIG = "config.toml"
STATE = "state.json"
CLOCK = "clock.json"
REPORT = "report.html"
SUMMARY = "summary.json"
LADDER = "ladder.json"
ELO = "elo.csv"
MATCHES = "matches"
TRAIN = "train"
DATA = "data"
NETS = "nets"
METRICS = "metrics.jsonl"

NET = "net.safetensors"
"""The trainer's traversing net of its last iteration."""
AVERAGE = "average.safetensors"
"""The trainer's averaging net of its last iteration."""
TRAIN_CONFIG = "train_config.toml"
"""The trainer's settings of its last iteration."""


def iteration_net(k: int) -> str:
    """Iteration ``k``'s traversing net, relative to the run directory (0: the initial net)."""
    return f"{NETS}/iter-{k:04d}.safetensors"


def average_net(k: int) -> str:
    """Iteration ``k``'s averaging net, relative to the run directory."""
    return f"{NETS}/avg-{k:04d}.safetensors"


INITIAL_NET = iteration_net(0)


def _under_root(name: str) -> property:
    return property(lambda self: self.root / name, doc=f"``{name}`` of the run")


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run directory."""

    root: Path

    config = _under_root(CONFIG)
    state = _under_root(STATE)
    clock = _under_root(CLOCK)
    report = _under_root(REPORT)
    summary = _under_root(SUMMARY)
    ladder = _under_root(LADDER)
    matches = _under_root(MATCHES)
    elo = _under_root(ELO)
    train = _under_root(TRAIN)
    """The trainer's directory."""
    data_root = _under_root(DATA)
    nets = _under_root(NETS)

    def data(self, k: int) -> Path:
        """Iteration ``k``'s shards."""
        return self.data_root / f"iter-{k:04d}"

    def is_run(self) -> bool:
        """Whether the directory holds a run (its state or its config)."""
        return self.state.is_file() or self.config.is_file()
