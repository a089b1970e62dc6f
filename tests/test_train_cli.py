"""``frugalzero train`` end to end on shards: output, run directory, stop and resume."""

from __future__ import annotations

import json
import os
import signal

import pytest

from frugalzero.cli import main
from frugalzero.data.shards import write_shard
from frugalzero.data.synthetic import selfplay_like_games
from frugalzero.nn.checkpoint import load_net
from frugalzero.train.metrics import read_metrics
from frugalzero.train.trainer import Trainer

pytestmark = pytest.mark.slow  # integration: the whole module runs in `make test` only

SETTINGS = [
    "--set",
    "batch_size=32",
    "--set",
    "threads=1",
    "--set",
    "precision=fp32",
    "--set",
    "bn_samples=64",
    "--set",
    "validation_fraction=0.1",
    "--set",
    "checkpoint_minutes=0",
    "--set",
    "device=cpu",  # bit-identical nets are a CPU promise (on CUDA: deterministic=true)
]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    write_shard(folder / "a.fzs", selfplay_like_games(4, seed=1))
    write_shard(folder / "b.fzs", selfplay_like_games(4, seed=2))
    return folder


def _train(shards, out, *extra) -> int:
    argv = ["train", "--data", str(shards), "--arch", "tiny", "--out", str(out)]
    return main(argv + ["--epochs", "1", "--swa-cycles", "1", "--json", *SETTINGS, *extra])


def test_train_writes_the_net_and_reports_json(shards, tmp_path, capsys):
    out = tmp_path / "trained.safetensors"
    assert _train(shards, out) == 0
    result = json.loads(capsys.readouterr().out)
    net, meta = load_net(out)
    assert result["net_id"] == meta.net_id and result["arch"] == "tiny"
    assert result["positions"] > 500 and result["validation_positions"] > 30
    # the default floor of 1,000 held-out positions, capped at a quarter of this small data
    total = result["positions"] + result["validation_positions"]
    assert total < 4000 and result["validation_positions"] >= total // 4
    assert result["steps"] == 2 * (result["positions"] // 32)  # one epoch + one SWA cycle
    for key in ("traversing_policy_loss", "average_top1", "train_value_loss"):
        assert math_finite(result[key]), key
    run = tmp_path / "trained.run"
    assert (run / "average.safetensors").exists() and (run / "validation.json").exists()
    assert read_metrics(run, "validation") and list((run / "tensorboard").iterdir())
    assert "batch_size = 32" in (run / "train_config.toml").read_text()

    # the finished run is not silently redone; --restart starts over
    assert _train(shards, out) == 2
    assert "holds a finished run" in capsys.readouterr().err
    assert _train(shards, out, "--restart") == 0
    assert json.loads(capsys.readouterr().out)["net_id"] == meta.net_id  # same seed, same net


def math_finite(value) -> bool:
    return isinstance(value, float) and value == value and abs(value) != float("inf")


def test_stopped_cli_run_resumes_to_the_same_net(shards, tmp_path, capsys, monkeypatch):
    straight = tmp_path / "straight.safetensors"
    assert _train(shards, straight) == 0
    expected = json.loads(capsys.readouterr().out)["net_id"]

    original = Trainer.step_batches
    calls = {"n": 0}

    def step_then_ctrl_c(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 5:  # a Ctrl-C in the middle of the main phase
            os.kill(os.getpid(), signal.SIGINT)
        return result

    monkeypatch.setattr(Trainer, "step_batches", step_then_ctrl_c)
    out = tmp_path / "stopped.safetensors"
    assert _train(shards, out) == 130
    assert "run the same command again to continue" in capsys.readouterr().err
    assert not out.exists()
    monkeypatch.setattr(Trainer, "step_batches", original)
    assert _train(shards, out) == 0
    captured = capsys.readouterr()
    assert "resuming" in captured.err
    assert json.loads(captured.out)["net_id"] == expected


def test_bad_input_is_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "--data", str(empty), "--out", str(tmp_path / "x.safetensors")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("frugalzero: error:") and err.count("\n") == 1
    assert main(["train", "--data", str(empty), "--out", "x", "--set", "epochs=-1"]) == 2
    assert "epochs or steps must be positive" in capsys.readouterr().err
