"""The CUDA path: the evaluator (inline and in an inference process), a trainer step with and
without loss scaling, exact training with ``deterministic``, self-play. Skipped on machines
without CUDA; on a GPU machine ``make test`` runs them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from frugalzero.chess.positions import random_boards
from frugalzero.nn.config import architecture
from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.train.config import TrainConfig
from frugalzero.train.data import TensorSet
from frugalzero.train.trainer import Trainer, TrainingInterrupted

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")

HALF = 3e-2  # fp16 against fp32: priors and values agree to about this


def _net(seed: int = 0) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(architecture("tiny")).eval()


@pytest.mark.parametrize("backend", ["inline", "process"])
def test_cuda_evaluator_agrees_with_the_cpu_within_half_precision(backend):
    net, boards = _net(), random_boards(64, seed=3)
    cpu = EvaluatorConfig(device="cpu", precision="fp32", backend="inline", compile="off")
    cuda = EvaluatorConfig(device="cuda", precision="auto", backend=backend, compile="off")
    with Evaluator(net, cpu) as a, Evaluator(net, cuda) as b:
        assert b.precision == "fp16"
        want, got = a.evaluate(boards), b.evaluate(boards)
    assert next(net.parameters()).device.type == "cpu"  # the caller's net stays where it was
    for x, y in zip(want, got, strict=True):
        np.testing.assert_allclose(x.priors, y.priors, atol=HALF)
        assert abs(x.value - y.value) < HALF


def _config(**changes) -> TrainConfig:
    base = dict(
        batch_size=32, epochs=1.0, swa_cycles=1, log_every=1, compile="off", device="cuda",
        checkpoint_minutes=0, bn_samples=64,
    )  # fmt: skip
    return TrainConfig(**{**base, **changes})


def _data(n: int = 96) -> TensorSet:
    from test_train import synthetic  # pytest puts tests/ on the path

    return TensorSet(synthetic(n))


@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp32"])
def test_cuda_training_steps_with_and_without_loss_scaling(tmp_path: Path, precision):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    trainer = Trainer(_config(precision=precision), _net(), tmp_path, tensorboard=False)
    assert (trainer.scaler is not None) == (precision == "fp16")
    before = [p.detach().clone() for p in trainer.net.parameters()]
    summary = trainer.run_iteration(_data())
    assert np.isfinite(summary["main"]["loss"])
    changed = [not torch.equal(a, b) for a, b in zip(before, trainer.net.parameters())]
    assert any(changed)


def test_cuda_deterministic_training_resumes_exactly(tmp_path: Path):
    cfg = _config(precision="fp32", deterministic=True)
    data = _data()
    straight = Trainer(cfg, _net(), tmp_path / "a", tensorboard=False)
    straight.run_iteration(data)

    def stop(t: Trainer, phase: str, step: int, total: int) -> None:
        if t.progress.global_step == 2:
            t.request_stop()

    first = Trainer(cfg, _net(), tmp_path / "b", tensorboard=False, on_step=stop)
    with pytest.raises(TrainingInterrupted):
        first.run_iteration(data)
    second = Trainer(cfg, _net(7), tmp_path / "b", tensorboard=False)
    second.run_iteration(data)
    for x, y in zip(straight.net.state_dict().values(), second.net.state_dict().values()):
        assert torch.equal(x.cpu(), y.cpu())


def test_cuda_selfplay_with_two_workers_on_one_server(tmp_path: Path):
    from frugalzero.nn.checkpoint import save_net
    from frugalzero.search.config import SearchConfig
    from frugalzero.selfplay.config import SelfPlayConfig
    from frugalzero.selfplay.play import run_selfplay

    path = tmp_path / "tiny.safetensors"
    save_net(_net(), path)
    evaluator = EvaluatorConfig(device="cuda", compile="off")
    config = SelfPlayConfig(
        games=4, workers=2, max_plies=12, search=SearchConfig(simulations=8), evaluator=evaluator
    )
    records = []
    run = run_selfplay(path, config, records.append)
    assert run.workers == 2 and len(records) == 4
    assert run.extra["server"]["positions"] > 0


def test_cuda_compiled_net_takes_new_weights_in_place():
    """On a GPU the weights are inputs of the compiled graph: a new net needs no recompile."""
    from frugalzero.nn.runner import NetRunner

    boards = random_boards(16, seed=4)
    config = EvaluatorConfig(device="cuda", precision="fp32", backend="inline", compile="on")
    runner = NetRunner(_net(), config, threads=1, compile=True)
    assert runner.compiled and not runner.frozen
    model = runner.model  # the compiled callable, kept across the swap
    changed = _net(seed=5)
    runner.load_state_dict(changed.state_dict())
    assert runner.model is model
    with Evaluator(changed, dataclasses.replace(config, compile="off")) as fresh:
        want = fresh.evaluate(boards)
    with Evaluator(_net(), config) as ev:
        ev.update_weights(changed)
        got = ev.evaluate(boards)
    for x, y in zip(want, got, strict=True):
        assert abs(x.value - y.value) < 1e-3


def test_cuda_feed_expands_compact_batches_on_the_device_as_numpy_does(tmp_path: Path):
    from frugalzero.data.batches import HistoryInputs
    from frugalzero.data.selection import select_all
    from frugalzero.data.shards import write_shard
    from frugalzero.data.synthetic import selfplay_like_games
    from frugalzero.train.data import PositionSet
    from frugalzero.train.feed import BatchFeed, make_batch

    write_shard(tmp_path / "games.fzs", selfplay_like_games(4, seed=2))
    data = PositionSet.load(select_all([tmp_path]))
    indices = np.arange(min(64, len(data)))
    inputs = HistoryInputs("always", truncate=0.5)
    want = data.batch(indices, inputs)
    got = make_batch(data, indices, torch.device("cuda"), True, inputs)
    assert got.planes.device.type == "cuda"
    for field in dataclasses.fields(want):
        a, b = getattr(want, field.name), getattr(got, field.name).cpu()
        assert torch.equal(torch.nan_to_num(a, nan=7.0), torch.nan_to_num(b, nan=7.0)), field.name
    plan = iter([[indices[:32], indices[32:]]] * 3)
    with BatchFeed(data, plan, torch.device("cuda"), inputs, ahead=2) as feed:
        assert sum(1 for _ in feed) == 3
    trainer = Trainer(_config(prefetch=2), _net().train(), tmp_path / "run", tensorboard=False)
    trainer.run_iteration(data)
    assert trainer.progress.iteration == 1


def test_cuda_match_seats_in_two_workers_on_one_server(tmp_path: Path):
    from frugalzero.evaluate.adjudicate import AdjudicationConfig
    from frugalzero.evaluate.match import MatchConfig, play_match
    from frugalzero.nn.checkpoint import save_net

    save_net(_net(), tmp_path / "tiny.safetensors")
    spec = f"net:{tmp_path / 'tiny.safetensors'}?nodes=16&workers=2&device=cuda&compile=off"
    config = MatchConfig(games=2, concurrency=2, adjudication=AdjudicationConfig(max_plies=30))
    result = play_match(spec, "random?seed=1", config)
    assert result.tally.games == 2 and not any(o.failed for o in result.outcomes)
    assert result.batching[result.engine_a]["workers"] == 2
