"""A minutes budget: the last iteration is cut to what fits, and a cut iteration resumes at the
same size."""

from __future__ import annotations

import json
import math

import pytest
from rich.console import Console

from frugalzero.config import load_config
from frugalzero.errors import UserError
from frugalzero.pipeline import loop as loop_module
from frugalzero.pipeline.budget import (
    EVALUATION_RESERVE_S,
    MIN_FRACTION,
    fraction_left,
    scaled,
    training_seconds_left,
)
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.loop import RunLoop
from frugalzero.pipeline.state import IterationRecord
from frugalzero.train.metrics import read_metrics
from frugalzero.train.trainer import TrainingInterrupted


def _record(k: int, generate_s: float, train_s: float, evaluate_s: float) -> IterationRecord:
    return IterationRecord(
        iteration=k,
        net=f"nets/iter-{k:04d}.safetensors",
        net_id="x",
        games=10,
        positions=100,
        generate_s=generate_s,
        train_s=train_s,
        evaluate_s=evaluate_s,
        accepted=True,
    )


def _config(minutes: float, fit: bool = True) -> RunConfig:
    config = RunConfig()
    config.budget.minutes, config.budget.fit = minutes, fit
    config.evaluation.games_vs_random = config.evaluation.games_vs_best = 20
    config.evaluation.final_games = 40  # the final matches cost two iterations' evaluations
    return config


def test_the_last_iteration_gets_the_share_that_fits():
    # 3 iterations of 600 s generating + training and 60 s of matches; 1980 s spent of 3600
    done = [_record(k, 200.0, 400.0, 60.0) for k in (1, 2, 3)]
    config = _config(60.0)
    # left: 3600 - 1980 - 120 (final matches) - 60 (this iteration's matches) = 1440 s
    assert fraction_left(config, 1980.0, done) == 1.0  # more than one whole iteration
    # 3600 - 3000 - 180 = 420 s of a 600 s iteration
    assert fraction_left(config, 3000.0, done) == pytest.approx(0.7)
    # less than a quarter of one: stop rather than pay the fixed costs for a sliver
    assert fraction_left(config, 3600 - 180 - 0.9 * MIN_FRACTION * 600, done) == 0.0
    assert fraction_left(config, 3600 - 180 - 1.1 * MIN_FRACTION * 600, done) > MIN_FRACTION
    # nothing measured yet, no minutes budget, or fitting turned off: whole iterations
    assert fraction_left(config, 3000.0, []) == 1.0
    assert fraction_left(_config(0.0), 3000.0, done) == 1.0
    assert fraction_left(_config(60.0, fit=False), 3000.0, done) == 1.0


def test_training_gets_the_seconds_left_after_the_matches():
    """Before any iteration has measured its matches a fixed reserve is kept; after, this
    iteration's matches and the final ones as measured (60 s and 120 s here)."""
    config = _config(60.0)
    assert training_seconds_left(config, 1500.0, []) == 3600 - 1500 - EVALUATION_RESERVE_S
    done = [_record(k, 200.0, 400.0, 60.0) for k in (1, 2)]
    assert training_seconds_left(config, 1500.0, done) == pytest.approx(3600 - 1500 - 180)
    assert training_seconds_left(config, 3590.0, done) < 0  # past it: the phase's probe only


def test_a_cut_iteration_has_fewer_games_and_steps():
    config = RunConfig()
    config.generate.games, config.generate.steps, config.train.steps = 3000, 2000, 1500
    cut = scaled(config, 0.35)
    assert (cut.generate.games, cut.generate.steps, cut.train.steps) == (1050, 700, 525)
    assert config.generate.games == 3000 and config.train.steps == 1500  # left as it was
    config.train.steps, config.train.epochs = 0, 2.0
    assert scaled(config, 0.5).train.epochs == 1.0
    assert scaled(config, 1.0) is config
    assert scaled(config, 0.0001).generate.games == 2  # one opening pair at least


@pytest.mark.slow
@pytest.mark.usefixtures("stockfish")
def test_a_run_plays_and_trains_the_cut_iteration_and_keeps_its_size(tmp_path, monkeypatch):
    shares = iter([0.5, 0.9])  # the second would be asked only if the first were forgotten
    monkeypatch.setattr(loop_module, "fraction_left", lambda *a: next(shares))
    overrides = [
        "budget.iterations=1",
        "generate.games=8",
        "train.steps=4",
        "train.swa_cycles=0",
        "evaluation.games_vs_random=2",
        "evaluation.games_vs_best=0",
        "evaluation.final_games=2",
    ]
    config = load_config(RunConfig, "smoke", overrides)
    run_dir = tmp_path / "run"
    first_trainer = RunLoop._trainer_for

    def stopping(self):  # training stops after its first step, as if killed
        trainer = first_trainer(self)
        trainer.request_stop()
        return trainer

    monkeypatch.setattr(RunLoop, "_trainer_for", stopping)
    with pytest.raises(TrainingInterrupted):
        RunLoop(config, run_dir, Console(quiet=True)).run()
    state = json.loads((run_dir / "state.json").read_text())
    assert state["step"] == "train" and state["current"]["fraction"] == 0.5
    monkeypatch.setattr(RunLoop, "_trainer_for", first_trainer)
    # a new process reads the share back (asks for none) and finishes the cut iteration
    summary = RunLoop(config, run_dir, Console(quiet=True)).run()
    assert summary["iterations"] == 1
    state = json.loads((run_dir / "state.json").read_text())
    record = state["iterations"][0]
    assert record["games"] == 4 and record["generation"]["fraction"] == 0.5
    trained = json.loads((run_dir / "train" / "train_state.json").read_text())
    assert trained["progress"]["global_step"] == 2  # half of train.steps
    assert config.generate.games == 8 and config.train.steps == 4  # the run's config is whole


@pytest.mark.slow
@pytest.mark.usefixtures("stockfish")
def test_annealing_over_the_budget_sets_each_rate_by_the_minutes_spent(tmp_path, monkeypatch):
    overrides = [
        "budget.iterations=1",
        "budget.minutes=10",
        "budget.anneal=budget",
        "generate.games=4",
        "train.steps=6",
        "train.log_every=1",
        "train.swa_cycles=0",
        "evaluation.games_vs_random=2",
        "evaluation.games_vs_best=0",
        "evaluation.final_games=0",
    ]
    config = load_config(RunConfig, "smoke", overrides)
    clock = {"s": 120.0}  # the run's minutes spent: two, then one more at every step
    monkeypatch.setattr(RunLoop, "elapsed", lambda self: clock["s"])
    first_trainer = RunLoop._trainer_for

    def ticking(self):
        trainer = first_trainer(self)
        trainer.on_step = lambda *a: clock.update(s=clock["s"] + 60.0)
        return trainer

    monkeypatch.setattr(RunLoop, "_trainer_for", ticking)
    run_dir = tmp_path / "run"
    RunLoop(config, run_dir, Console(quiet=True)).run()
    rates = [r["lr"] for r in read_metrics(run_dir / "train", "train")]
    peak, final = config.train.resolved_lr(), config.train.lr_final
    assert len(rates) == 6
    # each step's rate is the run's cosine at the minutes spent then, not the phase's own
    # (which would start at the peak and end at peak x final after six steps)
    seconds = [math.acos(2 * (r / peak - final) / (1 - final) - 1) / math.pi * 600 for r in rates]
    assert seconds == pytest.approx([120.0, 180.0, 240.0, 300.0, 360.0, 420.0])
    with pytest.raises(UserError, match="anneal 'budget' needs minutes"):
        load_config(RunConfig, "smoke", ["budget.anneal=budget"])


@pytest.mark.slow
def test_filling_the_budget_grows_only_the_last_iterations_training(tmp_path):
    overrides = ["budget.iterations=2", "budget.minutes=10", "budget.fill=true"]
    config = load_config(RunConfig, "smoke", overrides)
    loop = RunLoop(config, tmp_path / "run", Console(quiet=True))
    loop._initial_net()
    grows = []
    for iteration, fraction in ((0, 1.0), (1, 1.0), (0, 0.5)):
        loop.state.iteration, loop.state.current = iteration, {"fraction": fraction}
        trainer = loop._trainer_for()
        assert trainer.budget.seconds_left is not None
        grows.append(trainer.budget.grow)
    assert grows == [False, True, True]  # the first of two is not the last; a cut one is
    loop.config = load_config(RunConfig, "smoke", overrides[:2])
    assert loop._trainer_for().budget.grow is False
    with pytest.raises(UserError, match="fill needs minutes and fit"):
        load_config(RunConfig, "smoke", ["budget.fill=true"])


def _adapting(method: str, **generate):
    """What RunLoop's adaptations read and write: its config, state and console."""
    from types import SimpleNamespace

    from rich.console import Console

    from frugalzero.pipeline.config import GenerateSection, RunConfig
    from frugalzero.pipeline.state import RunState

    config = RunConfig(method=method, generate=GenerateSection(**generate))
    return SimpleNamespace(config=config, state=RunState(), console=Console(quiet=True))


def test_drawish_selfplay_raises_its_temperature_up_to_the_cap() -> None:
    from frugalzero.pipeline.loop import RunLoop

    loop = _adapting("selfplay", temperature_raise=1.5, max_temperature=2.0)
    drawish = {"selfplay": {"w_plus_l_over_d": 0.6, "temperature": 1.0}}
    RunLoop._adapt_temperature(loop, drawish)
    assert loop.state.temperature == 1.5
    RunLoop._adapt_temperature(loop, {"selfplay": {"w_plus_l_over_d": 0.6, "temperature": 1.5}})
    assert loop.state.temperature == 2.0  # capped
    decisive = _adapting("selfplay", temperature_raise=1.5)
    RunLoop._adapt_temperature(decisive, {"selfplay": {"w_plus_l_over_d": 1.4, "temperature": 1}})
    fixed = _adapting("selfplay")
    RunLoop._adapt_temperature(fixed, drawish)
    contempt = _adapting("contempt", temperature_raise=1.5)
    RunLoop._adapt_temperature(contempt, drawish)
    assert decisive.state.temperature is fixed.state.temperature is contempt.state.temperature
    assert fixed.state.temperature is None


def test_the_adapted_temperature_is_the_one_selfplay_plays_at() -> None:
    from frugalzero.pipeline.config import RunConfig
    from frugalzero.pipeline.generate import selfplay_config

    config = RunConfig(method="selfplay")
    assert selfplay_config(config, None, 1.75).search.temperature == 1.75
    assert selfplay_config(config, None).search.temperature == config.selfplay.search.temperature
