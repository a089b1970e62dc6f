"""The smoke experiment's spec, and the same spec made smaller, as files the experiment's tests
run (``frugalzero experiment PATH``)."""

from __future__ import annotations

from pathlib import Path

from frugalzero.experiment.spec import SPECS

SMOKE = SPECS / "smoke.toml"
# the smoke spec made small: one short iteration of four games per half budget, two rating games
SMALL = {
    '"generate.games=6"': '"generate.games=4"',
    '"selfplay.max_plies=40"': '"selfplay.max_plies=30"',
    "evaluations = 3000": "evaluations = 1500",
    "games = 4": "games = 2",
}


def spec_file(directory: Path, replace: dict[str, str] | None = None) -> Path:
    """The smoke spec with each ``old: new`` of ``replace`` made (each must be there), written
    to ``directory/spec.toml``."""
    text = SMOKE.read_text()
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path = directory / "spec.toml"
    path.write_text(text)
    return path
