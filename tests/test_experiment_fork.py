"""A forked comparison: a trunk run, fork points holding its net and data, every arm of a unit
starting from them and spending exactly the budget, its final nets playing each other, and a
verdict over the forks from those games, with no path of this machine in any record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from frugalzero.data.shards import read_shard, scan_shards
from frugalzero.errors import UserError
from frugalzero.experiment.spec import ExperimentSpec, Unit
from frugalzero.nn.checkpoint import load_net
from frugalzero.pipeline.spend import charged, searches

SPEC = """
name = "fork"
question = "Do forks run?"
seeds = [0, 1]
set = [
    "generate.games=4",
    "selfplay.search.simulations=8",
    "selfplay.concurrent=4",
    "selfplay.max_plies=30",
    "selfplay.workers=1",
    "selfplay.evaluator.backend='inline'",
    "train.epochs=1",
]
[budget]
evaluations = 700
checkpoints = [1.0]
[rating]
nodes = 8
games = 2
anchors = ["random"]
opening_plies = 8
head_to_head = 4
[decision]
baseline = "puct"
[fork]
source = "trunk"
points = [500]
[[arm]]
name = "puct"
preset = "smoke"
method = "selfplay"
[[arm]]
name = "contempt"
preset = "smoke"
method = "contempt"
set = ["selfplay.search.nscl=2"]
"""


def _spec(tmp_path: Path, text: str = SPEC) -> tuple[ExperimentSpec, Path]:
    from frugalzero.experiment.spec import load_spec

    path = tmp_path / "fork.toml"
    path.write_text(text)
    return load_spec(str(path)), path


def test_a_fork_spec_gives_a_unit_per_seed_and_point_and_is_checked(tmp_path) -> None:
    spec, _ = _spec(tmp_path)
    assert spec.units() == [Unit(0, 0), Unit(1, 0)]
    assert [u.label for u in spec.units()] == ["fork-0-seed-0", "fork-0-seed-1"]
    assert spec.trunk_arm is not None and spec.trunk_arm.name == "puct"
    two = SPEC.replace("points = [500]", "points = [500, 900]")
    assert len(_spec(tmp_path, two)[0].units()) == 4
    bad = {
        "points = [500]": "points = []",  # a trunk with no point
        'source = "trunk"': 'source = ""',  # points without a trunk
        "evaluations = 700": "minutes = 5",  # forks compare at equal evaluations
    }
    for old, new in bad.items():
        with pytest.raises(UserError):
            _spec(tmp_path, SPEC.replace(old, new))
    net = SPEC.replace('source = "trunk"\npoints = [500]', 'source = "small"')
    assert _spec(tmp_path, net)[0].units() == [Unit(0, 0), Unit(1, 0)]


@pytest.mark.slow
def test_forks_start_together_spend_the_same_and_are_judged_head_to_head(tmp_path) -> None:
    from frugalzero.experiment.runner import Experiment

    spec, path = _spec(tmp_path)
    directory = tmp_path / "exp"
    exp = Experiment(spec, path, directory, Console(quiet=True), record=tmp_path / "record")
    results = exp.run()
    assert results.complete
    point = json.loads((directory / "forks/point-0/point.json").read_text())
    assert point["evaluations"] >= 500 and point["data"][0] == "data/iter-0001"
    for unit in spec.units():
        starts = set()
        for arm in spec.arm:
            config = exp.run_config(arm, unit)
            starts.add((config.net.init, tuple(config.generate.prior)))
            run = directory / "arms" / arm.name / unit.label
            assert load_net(run / "nets/iter-0000.safetensors")[1].net_id == point["net_id"]
        assert len(starts) == 1  # every arm of a unit: the same net and the same data
    spent = [u.evaluations for a in results.arms for u in a.seeds]
    assert spent == [700] * 4  # exactly the budget, every arm-unit
    run = directory / "arms/puct/fork-0-seed-0"
    last = sorted((run / "data").iterdir())[-1]
    games = [r for info in scan_shards([last]) for r in read_shard(info.path)]
    cut = games[-1]  # the game that reached the budget, cut there
    assert "cut" in cut.extra and all("cut" not in g.extra for g in games[:-1])
    kept = len(searches(cut))  # its moves whose search was made within the budget
    assert sum(searches(cut)) <= charged(cut) and kept < len(cut.moves)
    assert all(t is None for t in cut.targets[kept:])
    comparison = results.verdict.comparisons[0]
    assert comparison.measured_by == ["head-to-head"] * 2
    assert comparison.units == ["fork-0-seed-0", "fork-0-seed-1"]
    for unit in spec.units():
        counts = json.loads(
            (directory / f"ratings/head-to-head/{unit.label}-contempt.json").read_text()
        )
        assert sum(counts["pentanomial"]) == 2  # 4 games: 2 colour-swapped pairs
    records = [directory / "experiment.json", directory / "experiment.html"]
    records += sorted((directory / "ratings").rglob("*.pgn"))
    records += sorted((directory / "ratings").rglob("*.json"))
    records += sorted((tmp_path / "record").rglob("*.*"))
    for record in records:
        text = record.read_text(encoding="utf-8")
        for path in (str(tmp_path), str(Path.home()), "/tmp/"):
            assert path not in text, f"{record.name} holds {path}"
