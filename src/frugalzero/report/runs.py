"""What a run directory holds, read back for the report (a run still in progress included)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frugalzero.config import toml_text
from frugalzero.errors import UserError
from frugalzero.layout import CONFIG, STATE, RunLayout
from frugalzero.pipeline.state import RunState
from frugalzero.train.metrics import read_metrics


@dataclass
class RunData:
    """One run as the report shows it; lists are empty where the run has no such record."""

    name: str
    path: Path
    config_text: str
    method: str
    arch: str
    iterations: list[dict[str, Any]]
    """``state.json``'s per-iteration records: times, positions, scores, Elo, validation."""
    training: list[dict[str, Any]] = field(default_factory=list)
    """The trainer's ``train`` and ``swa`` metric records, by global step."""
    ladder: dict[str, Any] | None = None
    """``ladder.json`` of the run directory, when the final net was rated."""
    pgn_files: list[Path] = field(default_factory=list)
    elapsed_s: float = 0.0

    def minutes(self) -> list[float]:
        """Cumulative minutes at the end of each iteration (generation, training, matches)."""
        total, out = 0.0, []
        for record in self.iterations:
            total += sum(record.get(k, 0.0) for k in ("generate_s", "train_s", "evaluate_s"))
            out.append(total / 60)
        return out


def read_run(path: Path) -> RunData:
    """The run in ``path``; a folder that holds no run is a one-line error."""
    run = RunLayout(path)
    state_path, config_path = run.state, run.config
    if not state_path.is_file() or not config_path.is_file():
        raise UserError(f"{path}: not a run directory (no {STATE} and {CONFIG})")
    RunState.load(path)  # a damaged state is one line naming its field, as for a resume
    state = json.loads(state_path.read_text(encoding="utf-8"))
    config_text = toml_text(config_path)
    try:
        config = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{config_path}: bad TOML ({exc})") from None
    ladder_path = run.ladder
    return RunData(
        name=path.resolve().name,
        path=path,
        config_text=config_text,
        method=str(config.get("method", "?")),
        arch=str(config.get("net", {}).get("arch", "?")),
        iterations=list(state.get("iterations", [])),
        training=[r for r in read_metrics(run.train) if r.get("kind") in ("train", "swa")],
        ladder=_ladder(ladder_path) if ladder_path.is_file() else None,
        pgn_files=sorted(run.matches.glob("*.pgn")),
        elapsed_s=float(state.get("elapsed_s", 0.0)),
    )


def _ladder(path: Path) -> dict[str, Any]:
    """The ladder result a user wrote beside the run (``ladder --json``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a ladder result (JSON: {exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a ladder result (a JSON object)")
    return data
