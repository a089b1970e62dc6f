"""The training feed: batches built ahead by a thread change speed, never the numbers."""

from __future__ import annotations

import threading
from dataclasses import fields

import numpy as np
import pytest
import torch

from frugalzero.data.batches import HistoryInputs
from frugalzero.data.selection import select_all
from frugalzero.data.shards import write_shard
from frugalzero.data.synthetic import selfplay_like_games
from frugalzero.train.data import PositionSet
from frugalzero.train.feed import BatchFeed, auto_prefetch, expand_on, make_batch
from frugalzero.train.optim import skip_if_not_finite
from frugalzero.train.trainer import Trainer
from test_train import _losses, config, tiny  # pytest puts tests/ on the path

CUT = HistoryInputs("always", truncate=0.5)  # every path of the feed cuts alike


@pytest.fixture(scope="module")
def positions(tmp_path_factory) -> PositionSet:
    folder = tmp_path_factory.mktemp("feed")
    write_shard(folder / "games.fzs", selfplay_like_games(6, seed=11))
    return PositionSet.load(select_all([folder]))


def _same(a, b) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x.shape == y.shape and x.dtype == y.dtype, f.name
        assert torch.equal(torch.nan_to_num(x, nan=7.0), torch.nan_to_num(y, nan=7.0)), f.name


def test_expanding_a_compact_batch_with_torch_gives_numpys_batch(positions):
    indices = np.random.default_rng(0).choice(len(positions), 40, replace=False)
    reference = positions.batch(indices, CUT)
    _same(expand_on(positions.compact(indices, CUT), torch.device("cpu")), reference)
    assert reference.legal.sum() > 40 and torch.isfinite(reference.z).any()


def test_make_batch_keeps_the_memory_layout_asked_for(positions):
    indices = np.arange(8)
    cpu = torch.device("cpu")
    assert make_batch(positions, indices, cpu, True, CUT).planes.is_contiguous(
        memory_format=torch.channels_last
    )
    assert make_batch(positions, indices, cpu, False, CUT).planes.is_contiguous()


def test_feed_yields_the_plans_batches_in_order_with_or_without_a_thread(positions):
    plan = [[np.arange(i, i + 5), np.arange(i + 5, i + 9)] for i in range(0, 60, 9)]
    cpu = torch.device("cpu")
    with BatchFeed(positions, iter(plan), cpu, CUT, ahead=0) as direct:
        inline = list(direct)
    with BatchFeed(positions, iter(plan), cpu, CUT, ahead=2) as feed:
        ahead = list(feed)
    assert len(inline) == len(ahead) == len(plan)
    for parts_a, parts_b, parts in zip(inline, ahead, plan):
        assert [len(b) for b in parts_a] == [len(p) for p in parts]
        for a, b in zip(parts_a, parts_b):
            _same(a, b)


def test_leaving_a_feed_early_stops_its_thread(positions):
    endless = ([np.arange(4)] for _ in iter(int, 1))
    before = threading.active_count()
    with BatchFeed(positions, endless, torch.device("cpu"), CUT, ahead=2) as feed:
        for count, _ in enumerate(feed):
            if count == 3:
                break
    assert threading.active_count() == before


def test_an_error_while_building_reaches_the_training_thread(positions):
    def plan():
        yield [np.arange(4)]
        raise RuntimeError("shard vanished")

    with BatchFeed(positions, plan(), torch.device("cpu"), CUT, ahead=2) as feed:
        got = iter(feed)
        next(got)
        with pytest.raises(RuntimeError, match="shard vanished"):
            next(got)


@pytest.mark.slow
def test_prefetching_trains_exactly_as_building_in_the_step(tmp_path, positions):
    """Two iterations with accumulation and SWA: same losses and the same weights."""
    runs = {}
    for ahead in (0, 3):
        cfg = config(prefetch=ahead, accumulation=2, epochs=2.5, log_every=1)
        trainer = Trainer(cfg, tiny(), tmp_path / f"ahead{ahead}", tensorboard=False)
        for _ in range(2):
            trainer.run_iteration(positions)
        runs[ahead] = trainer
    assert _losses(tmp_path / "ahead0") == _losses(tmp_path / "ahead3")
    assert len(_losses(tmp_path / "ahead0")) > 10
    for x, y in zip(runs[0].net.state_dict().values(), runs[3].net.state_dict().values()):
        assert torch.equal(x, y)


def test_auto_prefetch_is_a_thread_on_cuda_only():
    assert auto_prefetch(-1, torch.device("cpu")) == 0
    assert auto_prefetch(-1, torch.device("cuda")) == 2
    assert auto_prefetch(5, torch.device("cpu")) == 5


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("fused", [False, True])
def test_a_step_with_non_finite_gradients_is_skipped_whole(kind, fused):
    """Fused kernels (CUDA's) skip on a device flag; the others after looking at the norm."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 3)
    kinds = {"fused": True, "foreach": None} if fused else {"foreach": True}
    make = torch.optim.Adam if kind == "adam" else torch.optim.SGD
    extra = {} if kind == "adam" else {"momentum": 0.9}
    opt = make(layer.parameters(), lr=0.1, **kinds, **extra)
    x = torch.randn(8, 4)

    def step(scale: float):
        opt.zero_grad()
        (layer(x).sum() * scale).backward()
        norm = torch.nn.utils.clip_grad_norm_(layer.parameters(), 10.0)
        return skip_if_not_finite(opt, norm)

    assert not step(1.0)  # a finite step is taken (None, or a 0.0 flag)
    before = [p.detach().clone() for p in layer.parameters()]
    state = {k: v.clone() for k, v in opt.state[layer.weight].items() if torch.is_tensor(v)}
    assert step(float("inf")) == 1.0
    for p, q in zip(layer.parameters(), before):
        assert torch.equal(p, q)
    for key, value in state.items():  # momentum, moments and Adam's step count untouched
        assert torch.equal(opt.state[layer.weight][key], value), key
    assert not step(1.0)
    assert not torch.equal(layer.weight, before[0])


def test_skipped_steps_are_counted_in_the_saved_progress(tmp_path):
    """A step whose gradient is not finite while its loss is (an overflow in the backward
    pass) is skipped and counted; training goes on."""
    from frugalzero.train.data import TensorSet
    from test_train import synthetic

    trainer = Trainer(config(swa_cycles=0, epochs=1.0), tiny(), tmp_path, tensorboard=False)
    first = next(trainer.net.parameters())
    first.register_hook(lambda grad: torch.full_like(grad, float("nan")))  # every step's
    before = [p.detach().clone() for p in trainer.net.parameters()]
    trainer.train_main(TensorSet(synthetic(64)))
    assert trainer.progress.skipped_steps == 2
    for p, q in zip(trainer.net.parameters(), before):
        assert torch.equal(p, q)


def test_a_loss_that_is_not_finite_stops_training_and_saves_nothing(tmp_path):
    from frugalzero.train import state
    from frugalzero.train.data import TensorSet
    from frugalzero.train.trainer import TrainingDiverged
    from test_train import synthetic

    data = synthetic(64)
    data.planes[:] = float("nan")  # every loss NaN
    trainer = Trainer(config(swa_cycles=0, epochs=1.0), tiny(), tmp_path, tensorboard=False)
    with pytest.raises(TrainingDiverged, match="the loss stopped being finite by step 1"):
        trainer.train_main(TensorSet(data))
    assert not state.has_state(tmp_path)  # no checkpoint of the diverged weights


@pytest.mark.slow
def test_bench_train_counts_fed_steps_longer_than_its_window(capsys, monkeypatch):
    """A step longer than the measurement window (a large net on a CPU) once reported the fed
    rate as 0, and on a loaded CI machine the unfed one too (then fed/unfed divided by zero):
    every step, the one that crosses the window too, counts, and each window runs one at least."""
    import itertools
    import json
    import types

    from frugalzero.bench import train as bench_train
    from frugalzero.cli import main

    # A clock that moves a second per read: every window has closed before its first check,
    # as on a machine whose step outlasts the window.
    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: next(ticks))
    monkeypatch.setattr(bench_train, "time", clock)
    args = ["bench", "train", "--arch", "tiny", "--batch", "8", "--rounds", "1"]
    args += ["--seconds", "0.5", "--compile", "off", "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["samples_per_s"] > 0 and data["end_to_end_samples_per_s"] > 0
    assert data["assembly_samples_per_s"] > 0
    assert data["fed_samples_per_s"] > 0 and data["fed_over_unfed"] > 0
