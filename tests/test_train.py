"""Training: masked loss, value targets, SWA, the averaging network, exact resume."""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import pytest
import torch

from frugalzero.config import to_dict
from frugalzero.data.batches import TrainingBatch
from frugalzero.errors import UserError
from frugalzero.nn.checkpoint import load_net
from frugalzero.nn.config import architecture
from frugalzero.nn.model import PolicyValueNet
from frugalzero.train.averaging import WeightAverage, averaged_copy, recompute_bn, recompute_bn_on
from frugalzero.train.config import TrainConfig, lambda_at
from frugalzero.train.data import TensorSet
from frugalzero.train.fit import TrainingBudget
from frugalzero.train.loss import (
    loss_sums,
    masked_log_softmax,
    pick_wdl,
    policy_cross_entropy,
    value_loss,
    value_target,
)
from frugalzero.train.metrics import read_metrics
from frugalzero.train.optim import cosine_lr, main_phase_lr
from frugalzero.train.progress import Progress, step_plan
from frugalzero.train.resume import OPERATIONAL, check_resumable
from frugalzero.train.trainer import Trainer, TrainingInterrupted

NAN = float("nan")


def synthetic(
    n: int, seed: int = 0, legal_share: float = 0.01, one_hot: bool = False
) -> TrainingBatch:
    """Random positions with a random target over a random legal set (shapes as the loader's)."""
    g = torch.Generator().manual_seed(seed)
    planes = (torch.rand(n, 119, 8, 8, generator=g) < 0.1).float()
    legal = torch.rand(n, 4672, generator=g) < legal_share
    legal[:, 0] = True
    weights = torch.rand(n, 4672, generator=g) * legal
    if one_hot:
        weights = torch.nn.functional.one_hot(weights.argmax(1), 4672).float()
    policy = weights / weights.sum(1, keepdim=True)
    z = torch.randint(-1, 2, (n,), generator=g).float()
    search = torch.rand(n, generator=g) * 2 - 1
    search[::3] = NAN
    expert = torch.full((n,), NAN)
    return TrainingBatch(planes, legal, policy, z, search, expert)


def tiny(seed: int = 0, head: str = "scalar", arch: str = "tiny") -> PolicyValueNet:
    torch.manual_seed(seed)
    if arch == "attention":  # the attention body at a test's size
        return PolicyValueNet(architecture(arch, blocks=2, filters=32, heads=4, value_head=head))
    return PolicyValueNet(architecture(arch, value_head=head))


def config(**changes) -> TrainConfig:
    """Small, deterministic CPU settings (fp32, one thread: no nondeterministic kernels)."""
    base = dict(
        batch_size=32,
        epochs=1.5,
        swa_cycles=2,
        log_every=1,
        precision="fp32",
        threads=1,
        compile="off",
        device="cpu",
        checkpoint_minutes=0,
        bn_samples=64,
    )
    base.update(changes)
    return TrainConfig(**base)


# ---- loss ---------------------------------------------------------------------------------


def test_masked_cross_entropy_equals_plain_when_all_moves_are_legal():
    torch.manual_seed(1)
    logits = torch.randn(5, 4672, requires_grad=True)
    target = torch.softmax(torch.randn(5, 4672), dim=1)
    legal = torch.ones(5, 4672, dtype=torch.bool)
    ours = policy_cross_entropy(logits, legal, target)
    plain = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    assert torch.allclose(ours, plain, atol=1e-5)
    (g_ours,) = torch.autograd.grad(ours.sum(), logits)
    logits2 = logits.detach().clone().requires_grad_(True)
    plain2 = torch.nn.functional.cross_entropy(logits2, target, reduction="none")
    (g_plain,) = torch.autograd.grad(plain2.sum(), logits2)
    assert torch.allclose(g_ours, g_plain, atol=1e-6)


def test_masked_cross_entropy_ignores_illegal_logits():
    torch.manual_seed(2)
    legal = torch.rand(4, 4672) < 0.01
    legal[:, 7] = True
    weights = torch.rand(4, 4672) * legal
    target = weights / weights.sum(1, keepdim=True)
    logits = torch.randn(4, 4672)
    # any values at all on illegal moves, huge ones included: same loss
    wild = torch.where(legal, logits, torch.randn(4, 4672) * 1e4 + 50)
    base = policy_cross_entropy(logits, legal, target)
    assert torch.equal(base, policy_cross_entropy(wild, legal, target))
    # and it is the cross-entropy of a softmax over the legal moves alone
    for row in range(4):
        idx = legal[row].nonzero()[:, 0]
        expected = -(target[row, idx] * torch.log_softmax(logits[row, idx], 0)).sum()
        assert math.isclose(float(base[row]), float(expected), rel_tol=1e-5)
    # illegal logits get exactly zero probability and zero gradient
    wild.requires_grad_(True)
    (grad,) = torch.autograd.grad(policy_cross_entropy(wild, legal, target).sum(), wild)
    assert torch.count_nonzero(grad[~legal]) == 0
    assert torch.count_nonzero(masked_log_softmax(wild, legal).exp()[~legal]) == 0


def test_value_target_blends_result_and_value():
    z = torch.tensor([1.0, -1.0, NAN, 0.0, NAN])
    v = torch.tensor([0.5, NAN, -0.4, 0.2, NAN])
    t = value_target(z, v, 0.25)
    assert t.valid.tolist() == [True, True, True, True, False]
    expected = [0.25 * 0.5 + 0.75, -1.0, -0.4, 0.05, 0.0]
    assert torch.allclose(t.scalar, torch.tensor(expected))
    # the WDL target is a distribution whose expectation is the scalar target
    wdl = t.wdl[t.valid]
    assert torch.allclose(wdl.sum(1), torch.ones(4))
    assert torch.allclose(wdl[:, 0] - wdl[:, 2], t.scalar[t.valid])
    # lambda 0: results only (no result, no target); lambda 1: values only
    assert value_target(z, v, 0.0).valid.tolist() == [True, True, False, True, False]
    assert value_target(z, v, 1.0).valid.tolist() == [True, False, True, True, False]
    assert torch.allclose(value_target(z, v, 1.0).scalar[0], torch.tensor(0.5))


def test_the_experts_own_wdl_replaces_the_one_derived_from_its_value():
    z = torch.tensor([1.0, 0.0, NAN])
    v = torch.tensor([0.3, 0.3, -0.2])
    sf = torch.tensor([[0.35, 0.6, 0.05], [NAN, NAN, NAN], [0.1, 0.6, 0.3]])
    t = value_target(z, v, 0.5, sf)
    derived = value_target(z, v, 0.5)
    assert torch.allclose(t.wdl[0], 0.5 * torch.tensor([1.0, 0, 0]) + 0.5 * sf[0])
    assert torch.allclose(t.wdl[1], derived.wdl[1])  # no estimate: the widest-draw one
    assert torch.allclose(t.wdl[2], sf[2])  # no result: the expert's alone
    assert torch.equal(t.scalar, derived.scalar)  # the tanh head's target is unchanged
    batch = dataclasses.replace(
        synthetic(3), expert_value=torch.tensor([0.3, NAN, -0.2]), expert_wdl=sf
    )
    assert torch.isnan(pick_wdl(batch, "auto")[1]).all()
    assert pick_wdl(batch, "search") is None
    # the WDL head's loss uses it unless the config says expert_wdl = false
    policy, value = torch.randn(3, 4672), torch.randn(3, 3)
    plain = dataclasses.replace(batch, expert_wdl=None)
    own = loss_sums(policy, value, batch, "wdl", 0.5).value
    assert not torch.allclose(own, loss_sums(policy, value, plain, "wdl", 0.5).value)
    off = loss_sums(policy, value, batch, "wdl", 0.5, expert_wdl=False).value
    assert torch.equal(off, loss_sums(policy, value, plain, "wdl", 0.5).value)


def test_value_loss_is_mse_for_tanh_and_cross_entropy_for_wdl():
    z = torch.tensor([1.0, 0.0, -1.0])
    target = value_target(z, torch.full((3,), NAN), 0.0)
    scalar = torch.tensor([[0.5], [0.1], [-0.9]])
    assert torch.allclose(value_loss(scalar, target, "scalar"), torch.tensor([0.25, 0.01, 0.01]))
    logits = torch.randn(3, 3)
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2]), reduction="none")
    assert torch.allclose(value_loss(logits, target, "wdl"), expected)


def test_lambda_schedule_and_cosine():
    cfg = TrainConfig(value_lambda_schedule=[[0, 1.0], [10, 0.0]])
    assert [lambda_at(cfg, i) for i in (0, 5, 10, 20)] == [1.0, 0.5, 0.0, 0.0]
    assert lambda_at(TrainConfig(value_lambda=0.3), 7) == 0.3
    assert cosine_lr(0, 100, 0.1, 0.01) == pytest.approx(0.1)
    assert cosine_lr(99, 100, 0.1, 0.01) == pytest.approx(0.001)
    assert cosine_lr(50, 101, 0.1, 0.0) == pytest.approx(0.05)
    # a run annealing over its budget: the share of the run, not the step, places the rate
    budget = TrainConfig(lr=0.1, lr_final=0.01)
    assert main_phase_lr(budget, 0, 100, progress=0.5) == pytest.approx(0.0505)
    assert main_phase_lr(budget, 99, 100, progress=0.0) == pytest.approx(0.1)
    assert main_phase_lr(budget, 0, 100, progress=1.3) == pytest.approx(0.001)  # past the end


def test_bad_config_values_are_one_line_errors():
    with pytest.raises(UserError, match="accumulation 3 must divide batch_size 32"):
        config(accumulation=3)
    with pytest.raises(UserError, match=r"value_lambda_schedule\[1\]: iterations must increase"):
        config(value_lambda_schedule=[[2, 0.5], [1, 0.1]])


# ---- weight averaging ---------------------------------------------------------------------


def test_swa_of_identical_weights_returns_them():
    net = tiny(3)
    average = WeightAverage()
    for _ in range(5):
        average.update(net)
    other = tiny(4)
    average.apply_to(other)
    for (name, a), b in zip(net.named_parameters(), other.parameters()):
        assert torch.equal(a, b), name


def test_swa_phase_at_zero_rate_keeps_the_trained_weights(tmp_path):
    """SWA cycles that do not move the weights average identical weights: nothing changes
    but the batch-norm statistics, which are recomputed."""
    data = TensorSet(synthetic(128))
    trainer = Trainer(config(swa_lr=0.0, swa_cycles=3), tiny(), tmp_path, tensorboard=False)
    trainer.begin_iteration(data)
    trainer.train_main(data)
    before = {k: v.clone() for k, v in trainer.net.named_parameters()}
    stats = trainer.net.stem[0][1].running_mean.clone()
    trainer.swa(data)
    for name, param in trainer.net.named_parameters():
        assert torch.equal(param, before[name]), name
    assert not torch.equal(trainer.net.stem[0][1].running_mean, stats)


def test_recompute_bn_gives_the_data_statistics():
    net = tiny(5)
    x = torch.randn(64, 119, 8, 8) * 3 + 1
    recompute_bn(net, [x[:32], x[32:]])
    bn = net.stem[0][1]
    with torch.no_grad():
        pre = net.stem[0][0](x)
    assert torch.allclose(bn.running_mean, pre.mean(dim=(0, 2, 3)), atol=1e-4)
    assert not net.training


def test_an_averaged_copy_has_the_mean_and_leaves_the_training_net_as_it_was():
    net, other = tiny(0), tiny(1)
    average = WeightAverage()
    average.update(net)
    average.update(other)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    averaged = averaged_copy(net, average)
    for (name, a), b, c in zip(
        averaged.named_parameters(), net.parameters(), other.parameters(), strict=True
    ):
        assert torch.allclose(a, (b + c) / 2, atol=1e-6), name
    for name, value in net.state_dict().items():
        assert torch.equal(value, before[name]), name


def test_batch_norm_is_recomputed_on_each_given_position_once_in_batches():
    net = tiny(5)
    x = torch.randn(70, 119, 8, 8) * 3 + 1
    seen: list[list[int]] = []

    def planes_of(indices: np.ndarray) -> torch.Tensor:
        seen.append(indices.tolist())
        return x[indices]

    positions = np.random.default_rng(1).permutation(70)
    assert recompute_bn_on(net, positions, 32, planes_of, lambda n, p: n(p)) == 70
    assert [len(s) for s in seen] == [32, 32, 6]
    assert sum(seen, []) == positions.tolist()
    with torch.no_grad():  # the plain mean of the batches' means (recompute_bn)
        means = [net.stem[0][0](x[s]).mean(dim=(0, 2, 3)) for s in seen]
    assert torch.allclose(net.stem[0][1].running_mean, torch.stack(means).mean(0), atol=1e-4)


@pytest.mark.slow
def test_averaging_network_is_the_mean_of_the_published_nets(tmp_path):
    data, holdout = TensorSet(synthetic(96)), TensorSet(synthetic(40, seed=9))
    trainer = Trainer(config(epochs=1, swa_cycles=1), tiny(), tmp_path, tensorboard=False)
    for _ in range(3):
        summary = trainer.run_iteration(data, holdout)
    assert set(summary["validation"]) == {"traversing", "average"}
    saved = [load_net(tmp_path / "nets" / f"iter-{k:04d}.safetensors")[0] for k in (1, 2, 3)]
    average, meta = load_net(tmp_path / "average.safetensors")
    assert meta.notes.endswith("mean of 3 iterations' nets")
    for name, param in average.named_parameters():
        stack = torch.stack([dict(n.named_parameters())[name] for n in saved])
        assert torch.allclose(param, stack.mean(0), atol=1e-6), name
    last = dict(saved[-1].named_parameters())
    assert any(not torch.equal(p, last[n]) for n, p in average.named_parameters())
    # the published nets chain: each names the previous one as its parent
    metas = [load_net(tmp_path / "nets" / f"iter-{k:04d}.safetensors")[1] for k in (1, 2, 3)]
    assert metas[1].parent == metas[0].net_id and metas[2].parent == metas[1].net_id


# ---- optimiser details --------------------------------------------------------------------


def test_gradient_accumulation_matches_one_big_batch(tmp_path):
    """Two micro-batches of the same 16 positions = one batch of those 32 rows (batch norm
    sees identical statistics), so the step must land on the same weights. (NCHW: the
    single-thread channels-last batch norm computes variances less exactly, ~1e-3.)"""
    data = TensorSet(synthetic(16))
    indices = np.concatenate([np.arange(16), np.arange(16)])
    nets = []
    for accumulation in (1, 2):
        cfg = config(accumulation=accumulation, channels_last=False)
        trainer = Trainer(cfg, tiny(6), tmp_path / str(accumulation), tensorboard=False)
        trainer.net.train()
        trainer.step(data, indices, lr=0.1, lam=0.0)
        nets.append(dict(trainer.net.named_parameters()))
    for name, param in nets[0].items():
        assert torch.allclose(param, nets[1][name], atol=1e-6), name


@pytest.mark.parametrize(
    ("optimizer", "arch"), [("sgd", "tiny"), ("adam", "tiny"), ("sgd", "attention")]
)
@pytest.mark.slow
def test_training_lowers_the_loss_on_a_fixed_batch(tmp_path, optimizer, arch):
    """Memorising 64 one-hot targets: both optimisers, both bodies, far below the start."""
    data = TensorSet(synthetic(64, one_hot=True))
    cfg = config(
        optimizer=optimizer,
        steps=40,
        lr=0.05 if optimizer == "sgd" else 0.001,
        lr_schedule="constant",
        swa_cycles=0,
        batch_size=64,
        clip_norm=5.0,
    )
    trainer = Trainer(cfg, tiny(arch=arch), tmp_path, tensorboard=False)
    trainer.begin_iteration(data)
    trainer.train_main(data)
    losses = [r["loss"] for r in read_metrics(tmp_path, "train")]
    assert losses[-1] < 0.2 * losses[0]
    assert all(r["grad_norm"] > 0 for r in read_metrics(tmp_path, "train"))


# ---- exact resume -------------------------------------------------------------------------


def _losses(run_dir) -> list[tuple]:
    keys = ("loss", "policy_loss", "value_loss", "top1", "grad_norm", "lr")
    return [
        (r["kind"], r["step"], *(r[k] for k in keys))
        for r in read_metrics(run_dir)
        if r["kind"] in ("train", "swa")
    ]


def _validation(run_dir) -> list[dict]:
    return [
        {k: v for k, v in r.items() if k != "time"} for r in read_metrics(run_dir, "validation")
    ]


def test_a_phase_resumed_at_any_step_reads_the_positions_it_would_have_read():
    cfg = config(batch_size=16, accumulation=2)
    full = list(step_plan(cfg, 3, "main", 50, 0, 10))
    for start in (1, 3, 7):
        tail = list(step_plan(cfg, 3, "main", 50, start, 10))
        assert len(tail) == 10 - start
        for resumed, planned in zip(tail, full[start:], strict=True):
            assert [m.tolist() for m in resumed] == [m.tolist() for m in planned]
    # 3 whole batches an epoch (the remainder waits), each split into 2 micro-batches of 8;
    # an epoch reads 48 different positions, the next epoch in another order
    assert all(len(step) == 2 and all(len(m) == 8 for m in step) for step in full)
    epochs = [np.concatenate([m for step in full[e * 3 : e * 3 + 3] for m in step]) for e in (0, 1)]
    assert all(len(set(e.tolist())) == 48 for e in epochs)
    assert epochs[0].tolist() != epochs[1].tolist()


def test_only_settings_that_leave_the_numbers_alone_may_change_mid_iteration(tmp_path):
    where = tmp_path / "train_state.json"
    saved, stopped = to_dict(config()), Progress(iteration=2, phase="swa", step=1)
    assert OPERATIONAL <= {f.name for f in dataclasses.fields(TrainConfig)}
    check_resumable(where, saved, config(threads=2, compile="auto", checkpoint_minutes=5), stopped)
    with pytest.raises(UserError, match="field lr was 0.0 when iteration 2 stopped, now 0.1"):
        check_resumable(where, saved, config(lr=0.1), stopped)
    check_resumable(where, saved, config(lr=0.1), Progress(iteration=3))  # between iterations


@pytest.mark.slow
def test_stopped_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    data, holdout = TensorSet(synthetic(80)), TensorSet(synthetic(24, seed=5))
    cfg = config(optimizer="sgd", value_lambda=0.5, log_every=2)

    straight = tmp_path / "straight"
    trainer = Trainer(cfg, tiny(), straight, tensorboard=False)
    for _ in range(2):
        trainer.run_iteration(data, holdout)

    # stop in the main phase (steps 1 and 9, inside and at the end of a metrics interval)
    # and in SWA (step 4), and restart between iterations too; each restart starts like a
    # new process, from a net with other weights: everything must come from the saved state
    stops = {1, 4, 9}
    resumed = tmp_path / "resumed"

    def stop_at(t: Trainer, phase: str, step: int, total: int) -> None:
        if t.progress.global_step in stops:
            stops.discard(t.progress.global_step)
            t.request_stop()

    starts = 0
    while True:
        net = tiny() if starts == 0 else tiny(seed=100 + starts)
        trainer = Trainer(cfg, net, resumed, tensorboard=False, on_step=stop_at)
        starts += 1
        if trainer.progress.iteration == 2:
            break
        try:
            trainer.run_iteration(data, holdout)
        except TrainingInterrupted:
            pass
    assert starts == 6 and not stops
    assert _losses(resumed) == _losses(straight)
    # per iteration: 1.5 epochs of 2 steps, 2 SWA cycles of 2; a record every 2 and at the end
    assert [r[1] for r in _losses(straight)] == [2, 3, 5, 7, 9, 10, 12, 14]
    assert _validation(resumed) == _validation(straight)
    for name in ("net.safetensors", "average.safetensors"):
        a, b = load_net(straight / name)[0], load_net(resumed / name)[0]
        for (key, x), y in zip(a.state_dict().items(), b.state_dict().values()):
            assert torch.equal(x, y), (name, key)


class _Clock:
    """A clock one second later at every reading: each step of a run costs the same."""

    monotonic = staticmethod(time.monotonic)

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


def _use_clock(monkeypatch, clock: _Clock) -> None:
    """``clock`` for every training module that reads the time: the step timer's, the metric
    sums' and the trainer's readings all advance it."""
    from frugalzero.train import accumulator, fit, trainer

    for module in (accumulator, fit, trainer):
        monkeypatch.setattr(module, "time", clock)


@pytest.mark.slow
def test_training_is_cut_to_the_seconds_left_and_resumes_at_the_cut_length(tmp_path, monkeypatch):
    """A run on a clock times its first steps and trains only the steps that fit in the
    seconds left, annealing over them; stopped after that, it resumes with the same length
    and ends exactly as if it had not stopped."""
    data = TensorSet(synthetic(80))
    cfg = config(steps=400, swa_cycles=0, log_every=1)
    runs = {}
    for name, stop in (("straight", 0), ("resumed", 150)):
        _use_clock(monkeypatch, _Clock())
        run_dir = tmp_path / name

        def stop_at(t: Trainer, phase: str, step: int, total: int, stop=stop) -> None:
            if t.progress.global_step == stop:
                t.request_stop()

        while True:
            trainer = Trainer(cfg, tiny(), run_dir, tensorboard=False, on_step=stop_at)
            trainer.configure(cfg, TrainingBudget(seconds_left=lambda: 300.0))
            if trainer.progress.iteration == 1:
                break
            try:
                trainer.run_iteration(data)
            except TrainingInterrupted:
                assert trainer.progress.main_total == 200
        runs[name] = run_dir
    (fit,) = read_metrics(runs["straight"], "fit")
    # three clock readings a step (its end, and the metrics' interval): 3 "seconds" a step
    assert (fit["steps"], fit["fitted_steps"], fit["seconds_per_step"]) == (400, 200, 3.0)
    train = read_metrics(runs["straight"], "train")
    assert train[-1]["step"] == 200 and train[-1]["lr"] < 0.05 * train[0]["lr"]
    assert _losses(runs["resumed"]) == _losses(runs["straight"])
    (again,) = read_metrics(runs["resumed"], "fit")
    assert {**again, "time": 0} == {**fit, "time": 0}


@pytest.mark.slow
def test_training_past_its_time_still_gets_a_quarter_of_its_steps(tmp_path, monkeypatch):
    _use_clock(monkeypatch, _Clock())
    cfg = config(steps=1000, swa_cycles=0, log_every=50)
    trainer = Trainer(cfg, tiny(), tmp_path, tensorboard=False)
    trainer.configure(cfg, TrainingBudget(seconds_left=lambda: -30.0))
    trainer.run_iteration(TensorSet(synthetic(80)))
    fits = read_metrics(tmp_path, "fit")
    assert [f["fitted_steps"] for f in fits] == [250, 250]  # fitted at step 100 and again at 200
    assert read_metrics(tmp_path, "train")[-1]["step"] == 250


class _SlowingClock(_Clock):
    """Each reading one second later, two once the clock has passed ``slow_after``."""

    def __init__(self, slow_after: float = math.inf) -> None:
        super().__init__()
        self.slow_after = slow_after

    def perf_counter(self) -> float:
        self.now += 1.0 if self.now < self.slow_after else 2.0
        return self.now


def _fitted_run(run_dir, monkeypatch, steps: int, budget: float, grow: bool, slow_after=math.inf):
    """A main phase of ``steps`` planned steps on a fake clock with ``budget`` seconds in all;
    returns (fits, the train records, the clock at the end)."""
    clock = _SlowingClock(slow_after)
    _use_clock(monkeypatch, clock)
    cfg = config(steps=steps, swa_cycles=0, log_every=1)
    trainer = Trainer(cfg, tiny(), run_dir, tensorboard=False)
    trainer.configure(cfg, TrainingBudget(seconds_left=lambda: budget - clock.now, grow=grow))
    trainer.run_iteration(TensorSet(synthetic(80)))
    return read_metrics(run_dir, "fit"), read_metrics(run_dir, "train"), clock.now


@pytest.mark.slow
def test_a_growing_phase_fills_the_seconds_left_and_anneals_over_them(tmp_path, monkeypatch):
    """With ``grow`` a phase planned for 150 steps on a clock with room for ~330 trains ~330,
    the rate annealed over all of them; without it, it trains its 150 (too few to time)."""
    fits, train, end = _fitted_run(tmp_path / "grow", monkeypatch, 150, 1000.0, grow=True)
    assert 310 <= fits[0]["fitted_steps"] <= 333 and fits[0]["steps"] == 150
    assert train[-1]["step"] == fits[-1]["fitted_steps"]
    assert train[-1]["lr"] < 0.05 * train[0]["lr"]
    assert 900 <= end <= 1000
    fits, train, end = _fitted_run(tmp_path / "cap", monkeypatch, 150, 1000.0, grow=False)
    assert fits == [] and train[-1]["step"] == 150 and end < 500


@pytest.mark.slow
def test_a_phase_that_slows_down_is_fitted_again_and_still_ends_near_its_time(
    tmp_path, monkeypatch
):
    """Timed once on its first 100 steps, a phase whose steps then cost twice as much would
    run far past its time; fitted again as it goes, it ends near it."""
    fits, train, end = _fitted_run(tmp_path, monkeypatch, 1000, 1200.0, False, slow_after=400.0)
    first, last = fits[0]["fitted_steps"], fits[-1]["fitted_steps"]
    assert 360 <= first <= 400  # ~3 s a step: ~1200 / 3 steps fit
    assert last < 0.8 * first and train[-1]["step"] == last
    assert end < 1.1 * 1200 < 400 + (first - 130) * 6  # the one fit would end past 1.6x


def test_adam_state_survives_a_restart(tmp_path):
    data = TensorSet(synthetic(64))
    cfg = config(optimizer="adam", swa_cycles=0, epochs=2)
    straight = Trainer(cfg, tiny(), tmp_path / "a", tensorboard=False)
    straight.run_iteration(data)

    def stop(t, phase, step, total):
        if t.progress.global_step == 2:
            t.request_stop()

    first = Trainer(cfg, tiny(), tmp_path / "b", tensorboard=False, on_step=stop)
    with pytest.raises(TrainingInterrupted):
        first.run_iteration(data)
    second = Trainer(cfg, tiny(7), tmp_path / "b", tensorboard=False)
    assert second.optimizer.state_dict()["state"][0]["step"] == 2
    second.run_iteration(data)
    assert _losses(tmp_path / "b") == _losses(tmp_path / "a")


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_resumed_optimizer_buffers_are_laid_out_as_their_parameters(tmp_path, optimizer):
    """Saved contiguous, channels-last convolutions' buffers come back in their parameter's
    layout: CUDA's fused kernels refuse a buffer whose strides differ from its parameter's."""
    cfg = config(optimizer=optimizer, swa_cycles=0, channels_last=True)

    def stop(t, phase, step, total):
        if t.progress.global_step == 1:
            t.request_stop()

    with pytest.raises(TrainingInterrupted):
        Trainer(cfg, tiny(), tmp_path, tensorboard=False, on_step=stop).run_iteration(
            TensorSet(synthetic(64))
        )
    resumed = Trainer(cfg, tiny(7), tmp_path, tensorboard=False)
    layouts = [
        (p.stride(), buffer.stride())
        for p, state in resumed.optimizer.state.items()
        for buffer in state.values()
        if isinstance(buffer, torch.Tensor) and buffer.shape == p.shape
    ]
    assert len(layouts) >= len(list(resumed.net.parameters()))
    assert any(not p.is_contiguous() for p in resumed.net.parameters())  # channels-last ones
    assert all(a == b for a, b in layouts)


def test_resume_refuses_other_data_or_settings_mid_iteration(tmp_path):
    data = TensorSet(synthetic(64))

    def stop(t, phase, step, total):
        t.request_stop()

    trainer = Trainer(config(), tiny(), tmp_path, tensorboard=False, on_step=stop)
    with pytest.raises(TrainingInterrupted):
        trainer.run_iteration(data)
    with pytest.raises(UserError, match="field epochs was 1.5 when iteration 0 stopped"):
        Trainer(config(epochs=3), tiny(), tmp_path, tensorboard=False)
    # operational settings may change
    again = Trainer(config(checkpoint_minutes=5), tiny(), tmp_path, tensorboard=False)
    with pytest.raises(UserError, match="trained on other data"):
        again.run_iteration(TensorSet(synthetic(96)))


def test_a_state_from_before_the_attention_fields_resumes_and_another_body_is_refused(tmp_path):
    """A run's state names its architecture; one written before ``body``, ``heads`` and
    ``ffn_ratio`` existed still resumes as the ResNet it was, and a net of another shape is
    refused with one line."""
    data = TensorSet(synthetic(64))
    Trainer(config(swa_cycles=0, epochs=1), tiny(), tmp_path, tensorboard=False).run_iteration(data)
    path = tmp_path / "train_state.json"
    state = json.loads(path.read_text())
    for name in ("body", "heads", "ffn_ratio"):
        del state["architecture"][name]
    path.write_text(json.dumps(state))
    resumed = Trainer(config(swa_cycles=0, epochs=1), tiny(), tmp_path, tensorboard=False)
    assert resumed.progress.iteration == 1
    with pytest.raises(UserError, match="field architecture differs"):
        Trainer(config(swa_cycles=0, epochs=1), tiny(arch="attention"), tmp_path, tensorboard=False)


def test_damaged_state_is_refused_with_one_line(tmp_path):
    data = TensorSet(synthetic(64))
    Trainer(config(swa_cycles=0, epochs=1), tiny(), tmp_path, tensorboard=False).run_iteration(data)
    state = json.loads((tmp_path / "train_state.json").read_text())
    blob = tmp_path / state["tensors"]
    raw = bytearray(blob.read_bytes())
    raw[-5] ^= 0xFF
    blob.write_bytes(bytes(raw))
    with pytest.raises(UserError, match="checksum mismatch"):
        Trainer(config(swa_cycles=0, epochs=1), tiny(), tmp_path, tensorboard=False)


def test_wdl_head_trains_and_validates(tmp_path):
    data, holdout = TensorSet(synthetic(64)), TensorSet(synthetic(16, seed=3))
    cfg = dataclasses.replace(config(), swa_cycles=1, epochs=1)
    trainer = Trainer(cfg, tiny(head="wdl"), tmp_path, tensorboard=False)
    result = trainer.run_iteration(data, holdout)
    for net in ("traversing", "average"):
        v = result["validation"][net]
        assert v["positions"] == 16 and v["value_target"] == "result"
        assert 0 < v["value_loss"] < 5 and 0 <= v["top1"] <= 1


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_validation_measures_the_training_target_and_the_result_apart(tmp_path, lam):
    """``value_loss`` is the loss training reports (the iteration's lambda blend), so a gap
    between the two is memorising; ``result_value_loss`` is the game result's alone."""
    batch = synthetic(48, seed=5)
    batch.search_value = torch.rand(48, generator=torch.Generator().manual_seed(6)) * 2 - 1
    trainer = Trainer(config(value_lambda=lam), tiny(), tmp_path, tensorboard=False)
    got = trainer.evaluate(trainer.net, TensorSet(batch))
    with torch.no_grad():
        trainer.net.eval()
        value = trainer.net(batch.planes)[1][:, 0].double()
    blend = lam * batch.search_value.double() + (1 - lam) * batch.z.double()
    assert got["value_lambda"] == lam
    assert got["value_loss"] == pytest.approx(float(((value - blend) ** 2).mean()), rel=1e-5)
    assert got["result_value_loss"] == pytest.approx(
        float(((value - batch.z.double()) ** 2).mean()), rel=1e-5
    )
