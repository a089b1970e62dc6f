"""A run directory keeps every net once and numbers iterations from 1 everywhere; a run
directory written before that (the trainer's own copies, its metrics numbered from 0) still
resumes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from frugalzero.cli import main
from frugalzero.pipeline.loop import RunLoop
from frugalzero.train.metrics import read_metrics

# the smoke preset, smaller still (Stockfish games on the tiny net): seconds per step
SMALL = [
    "--set",
    "generate.games=6",
    "--set",
    "evaluation.games_vs_random=2",
    "--set",
    "evaluation.games_vs_best=0",
    "--set",
    "evaluation.final_games=2",
    "--set",
    "train.epochs=1",
    "--set",
    "train.swa_cycles=1",
]


pytestmark = pytest.mark.usefixtures("stockfish")  # every run here plays Stockfish's games


def _run(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["run", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _net_digests(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run_dir.rglob("*.safetensors")
        if not p.name.startswith("train_state-")
    }


def _iterations(run_dir: Path, kind: str) -> list[int]:
    return sorted({r["iteration"] for r in read_metrics(run_dir, kind)})


@pytest.mark.slow
def test_run_keeps_each_net_once_and_numbers_iterations_from_1(tmp_path, capsys):
    run_dir = tmp_path / "run"
    summary = _run(capsys, "--preset", "smoke", "--dir", str(run_dir), *SMALL)
    assert summary["iterations"] == 2
    digests = _net_digests(run_dir)
    assert len(set(digests.values())) == len(digests), digests  # no net twice
    assert sorted(digests) == [
        "nets/avg-0001.safetensors",
        "nets/avg-0002.safetensors",
        "nets/iter-0000.safetensors",
        "nets/iter-0001.safetensors",
        "nets/iter-0002.safetensors",
    ]
    # the run's metrics, the trainer's and state.json count the same iterations
    assert _iterations(run_dir, "run") == [1, 2]
    assert _iterations(run_dir / "train", "iteration") == [1, 2]
    assert _iterations(run_dir / "train", "train") == [1, 2]
    state = json.loads((run_dir / "state.json").read_text())
    assert [r["iteration"] for r in state["iterations"]] == [1, 2]
    assert [r["net"] for r in state["iterations"]] == [
        "nets/iter-0001.safetensors",
        "nets/iter-0002.safetensors",
    ]
    # the summary is also written down, as --json prints it
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert summary["final_net"] == str(run_dir / "nets" / "iter-0002.safetensors")
    # and drawn: the report holds both iterations' rows and every match game
    page = (run_dir / "report.html").read_text()
    games = sum(p.read_text().count("[Event ") for p in (run_dir / "matches").glob("*.pgn"))
    assert games > 0 and page.count('"sans": [') == games
    assert "<td>run</td><td>sfgames</td><td>tiny</td><td>2</td>" in page


def _as_old_layout(run_dir: Path) -> None:
    """What the run loop and trainer wrote before: the trainer's nets numbered from 0 under
    train/nets/, its last outputs left in train/, its metrics numbered from 0, no summary, a
    state.json without the config's hash and the metrics rows."""
    train = run_dir / "train"
    (train / "nets").mkdir()
    shutil.copyfile(run_dir / "nets/iter-0001.safetensors", train / "nets/iter-0000.safetensors")
    shutil.copyfile(run_dir / "nets/iter-0001.safetensors", train / "net.safetensors")
    shutil.copyfile(run_dir / "nets/avg-0001.safetensors", train / "average.safetensors")
    lines = []
    for line in (train / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        record["iteration"] -= 1
        lines.append(json.dumps(record))
    (train / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
    (run_dir / "summary.json").unlink(missing_ok=True)
    state = json.loads((run_dir / "state.json").read_text())
    del state["config_sha256"], state["metrics_lines"]
    (run_dir / "state.json").write_text(json.dumps(state))


@pytest.mark.slow
def test_a_run_in_the_old_layout_resumes_and_summarises(tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    generate = RunLoop._generate

    def first_iteration_only(self):  # then stopped, as by Ctrl-C
        if self.state.iteration >= 1:
            raise KeyboardInterrupt
        generate(self)

    monkeypatch.setattr(RunLoop, "_generate", first_iteration_only)
    assert main(["run", "--preset", "smoke", "--dir", str(run_dir), *SMALL]) == 130
    monkeypatch.setattr(RunLoop, "_generate", generate)
    _as_old_layout(run_dir)

    summary = _run(capsys, "--dir", str(run_dir))
    assert summary["iterations"] == 2
    assert summary["final_net"] == str(run_dir / "nets" / "iter-0002.safetensors")
    assert (run_dir / "nets/avg-0002.safetensors").exists()
    assert not (run_dir / "train/net.safetensors").exists()  # moved into nets/, not copied
    assert not (run_dir / "train/nets/iter-0001.safetensors").exists()
    assert _iterations(run_dir, "run") == [1, 2]
    assert _run(capsys, "--dir", str(run_dir)) == summary  # a finished run summarises again
