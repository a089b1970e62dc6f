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

A run's own files (``OWN``) are written by ``frugalzero run`` only: every other writer asks
``refuse_run_files`` first, so ``report --out RUN/config.toml`` cannot make a run unresumable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from frugalzero.errors import UserError

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
TENSORBOARD = "tensorboard"
LOCK = ".frugalzero.lock"
"""Held by the one process writing a directory (``runtime.lock``); a run's from its first start."""

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

OWN = (CONFIG, STATE, CLOCK, METRICS, SUMMARY, ELO, DATA, NETS, TRAIN, MATCHES, TENSORBOARD)
"""What only the run writes in its directory (and its hidden files: lock, temporaries).
``report.html`` and ``ladder.json`` are not among them: ``report`` and ``ladder --out`` write
them there for the run's page."""


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


def refuse_run_files(path: str | Path) -> None:
    """A UserError when writing ``path`` (a file, or a directory to write into) would write
    over a run's own files: one check for every writer but the run itself."""
    given, path = path, Path(path).resolve()
    for root in path.parents:
        layout = RunLayout(root)  # a config.toml alone may be another tool's: a run's has a lock
        if layout.state.is_file() or (layout.config.is_file() and (root / LOCK).is_file()):
            name = path.relative_to(root).parts[0]
            if name in OWN or name.startswith("."):
                raise UserError(
                    f"{given}: the run {root}'s own {name}, written by `frugalzero run` only "
                    "(another writer would leave a run that cannot resume); write elsewhere"
                )
