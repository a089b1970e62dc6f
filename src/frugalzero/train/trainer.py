"""The trainer: one call per iteration of the main loop, resumable at any step.

An iteration runs in phases, each of which can also be called on its own:

1. ``train_main``: ``epochs`` passes over the data, learning rate annealed (cosine);
2. ``swa``: C one-epoch cycles at a constant rate, the weights averaged at the end of each
   cycle, then batch-norm statistics recomputed; the average becomes the traversing net;
3. ``publish``: the traversing net is written to ``net.safetensors`` (and ``nets/``);
4. ``update_average``: the averaging network (the running mean over iterations of the
   published nets, batch norm recomputed) is written to ``average.safetensors``;
5. ``validate``: both nets on the fixed validation set (policy loss, value loss, top-1).

This module orchestrates; each concern is a module of its own: the optimiser step (``step``,
rates in ``optim``), where training stands and its data order (``progress``), weight averages
and batch norm (``averaging``), the checkpoint (``resume``, file format ``state``), training on
a clock (``fit``), the metric sums (``accumulator``) and validation (``validation``).

Everything a continuation needs is checkpointed in the run directory: weights, optimiser
moments, weight averages, RNG states, the phase and step reached, and the metric
accumulators. The data order is a function of (seed, iteration, phase, epoch), so a run
stopped anywhere and resumed takes the same steps, with the same losses, as one that was not.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from frugalzero.config import dump_toml, to_dict
from frugalzero.data.batches import HistoryInputs, TrainingBatch
from frugalzero.errors import UserError
from frugalzero.layout import AVERAGE, NET, TRAIN_CONFIG
from frugalzero.nn.checkpoint import NetMeta, load_net, save_net
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.files import atomic_write_text
from frugalzero.train import state as st
from frugalzero.train.accumulator import LossAccumulator
from frugalzero.train.averaging import WeightAverage, averaged_copy, recompute_bn_on
from frugalzero.train.config import TrainConfig, lambda_at
from frugalzero.train.data import SampleSet
from frugalzero.train.feed import BatchFeed, auto_prefetch, make_batch
from frugalzero.train.fit import StepTimer, TrainingBudget, fitted_steps, next_stop
from frugalzero.train.loss import LossSums, l2_term
from frugalzero.train.metrics import MetricsLog, read_metrics
from frugalzero.train.optim import main_phase_lr
from frugalzero.train.progress import (
    Progress,
    bn_positions,
    main_steps,
    mid_iteration,
    passed,
    step_plan,
    steps_per_epoch,
)
from frugalzero.train.progress import phase_order as phase_order  # re-exported
from frugalzero.train.resume import (
    Checkpointed,
    check_resumable,
    restore_checkpoint,
    save_checkpoint,
)
from frugalzero.train.step import Stepper, not_finite, training_device
from frugalzero.train.validation import evaluate_net


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on request; the state was saved and the same call resumes it."""


class TrainingDiverged(UserError):
    """The loss or the weights stopped being finite: training stops before anything is
    written (no checkpoint, no net), so the last checkpoint holds the last good weights."""


class Trainer:
    """Trains ``net`` in ``run_dir``; if the directory holds a checkpoint, continues it."""

    def __init__(
        self,
        config: TrainConfig,
        net: PolicyValueNet,
        run_dir: str | Path,
        parent: str = "",
        tensorboard: bool = True,
        on_step: Callable[[Trainer, str, int, int], None] | None = None,
    ) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.device, self.precision, self.dtype = training_device(config)
        self.stepper = Stepper(config, net, self.device, self.precision, self.dtype)
        self.head = self.stepper.head
        self.net = self.stepper.net
        self.metrics = MetricsLog(self.run_dir, tensorboard=tensorboard)
        self.progress = Progress(parent=parent)
        self.average = WeightAverage()
        self.swa_average = WeightAverage()
        self.average_net: PolicyValueNet | None = None
        self.on_step = on_step
        self.stop_requested = False
        self.budget = TrainingBudget()
        """What the run asks of the next iteration's clock (``configure``)."""
        self._acc = LossAccumulator(self.device, config.value_weight)  # between metric records
        self._phase_acc = LossAccumulator(self.device, config.value_weight)  # the whole phase
        self._last_save = time.monotonic()
        self._phase_metrics: dict[str, dict[str, float]] = {}
        if st.has_state(self.run_dir):
            self._restore()
        else:
            st.seed_everything(config.seed)
            self.metrics.truncate(0, -1)
            self._write_config()

    # the step's parts, owned by ``stepper``, read where the trainer is the handle at hand
    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.stepper.optimizer

    @property
    def scaler(self) -> torch.amp.GradScaler | None:
        return self.stepper.scaler

    @property
    def compiled(self) -> bool:
        return self.stepper.compiled

    # ---- public API -------------------------------------------------------------------------

    def run_iteration(self, train: SampleSet, holdout: SampleSet | None = None) -> dict[str, Any]:
        """All phases of one iteration (continuing a stopped one); returns its summary."""
        started = time.perf_counter()
        self.begin_iteration(train)
        summary: dict[str, Any] = {"iteration": self.number}
        summary["main"] = self.train_main(train)
        summary["swa"] = self.swa(train)
        summary["net"] = str(self.publish())
        summary["average"] = str(self.update_average(train))
        summary["validation"] = self.validate(holdout) if holdout is not None else {}
        summary["seconds"] = round(time.perf_counter() - started, 1)
        self.end_iteration(summary)
        return summary

    def configure(self, config: TrainConfig, budget: TrainingBudget | None = None) -> None:
        """The settings of the next (or the stopped) iteration, and what a run on a clock asks
        of it (``fit.TrainingBudget``; none: the planned steps, annealed on their own).
        Settings may change between iterations; an iteration stopped mid-way goes on only with
        the ones it started with."""
        check_resumable(self._state_path(), to_dict(self.config), config, self.progress)
        self.config = config
        self.stepper.config = config
        self.budget = budget or TrainingBudget()

    def iteration_summary(self, number: int) -> dict[str, Any]:
        """What ``run_iteration`` returned for iteration ``number`` (from the metrics): for a
        caller resuming after that iteration finished but before it took the result."""
        for record in reversed(read_metrics(self.run_dir, "iteration")):
            if record.get("iteration") == number:
                keys = ("kind", "iteration", "step", "time")
                return {"iteration": number, **{k: v for k, v in record.items() if k not in keys}}
        return {"iteration": number}

    @property
    def number(self) -> int:
        """The current iteration counted from 1, as a run counts its iterations (nets/,
        metrics.jsonl); ``progress.iteration`` counts the finished ones."""
        return self.progress.iteration + 1

    def begin_iteration(self, train: SampleSet) -> None:
        """Bind this iteration to ``train``; a resumed iteration must see the same data."""
        p = self.progress
        if len(train) == 0:
            raise UserError("no training positions")
        if not mid_iteration(p):
            p.data_size, p.data_fingerprint = len(train), train.fingerprint
        elif (p.data_size, p.data_fingerprint) != (len(train), train.fingerprint):
            raise UserError(
                f"{self.run_dir}: the stopped iteration {p.iteration} trained on other data "
                f"({p.data_size} positions, id {p.data_fingerprint}; now {len(train)}, "
                f"id {train.fingerprint}); give it the same data or start a new run directory"
            )

    def train_main(self, train: SampleSet) -> dict[str, float]:
        """The main phase: epochs x (size / batch) steps with the annealed learning rate."""
        if passed(self.progress, "main"):
            return self._phase_metrics.get("main", {})
        p = self.progress
        planned = main_steps(self.config, len(train))
        self.stepper.maybe_compile((p.main_total or planned) * self.config.batch_size)
        run_share = self.budget.run_progress

        def lr_at(step: int) -> float:  # reads the phase's length when called: a fit sets it
            share = run_share() if run_share is not None else None
            return main_phase_lr(self.config, step, p.main_total or planned, share)

        if self.budget.seconds_left is not None:
            self._fit_main(train, planned, lr_at)
        result = self._run_steps(train, "main", p.main_total or planned, lr_at)
        self._phase_metrics["main"] = result
        self._enter("swa")
        return result

    def _fit_main(self, train: SampleSet, planned: int, lr_at: Callable[[int], float]) -> None:
        """Trains the main phase up to its last stretch, fitting its length
        (``progress.main_total``) to the budget's seconds left on the way (``fit``: when it is
        timed, how many steps fit). Each stretch trains at the rates of the length known when
        it starts: a fraction of a percent from the fitted one's. Each fit is recorded and
        saved: a resumed iteration goes on with the length it had."""
        seconds_left, grow = self.budget.seconds_left, self.budget.grow
        assert seconds_left is not None
        p, c = self.progress, self.config
        swa = c.swa_cycles * steps_per_epoch(len(train), c.batch_size)
        while (stop := next_stop(p.step, planned, p.main_total, grow)) is not None:
            timer, total = StepTimer(), p.main_total or planned
            self._run_steps(train, "main", total, lr_at, stop_at=stop, timer=timer)
            rate = timer.seconds_per_step()
            fitted = fitted_steps(p.step, planned, seconds_left(), rate, swa, grow)
            record = {"steps": planned, "fitted_steps": fitted, "seconds_per_step": rate}
            self.metrics.write("fit", self.number, p.global_step, record)
            p.main_total = fitted
            self.save()

    def swa(self, train: SampleSet) -> dict[str, float]:
        """C one-epoch cycles at a constant rate; the cycle-end weights are averaged into the
        traversing net and its batch norm recomputed. No-op when swa_cycles is 0."""
        if passed(self.progress, "swa"):
            return self._phase_metrics.get("swa", {})
        cycles = self.config.swa_cycles
        result: dict[str, float] = {}
        if cycles:
            spe = steps_per_epoch(len(train), self.config.batch_size)
            lr = self.config.resolved_lr() * self.config.swa_lr
            result = self._run_steps(train, "swa", cycles * spe, lambda s: lr, cycle=spe)
            self.swa_average.apply_to(self.net)
            result["bn_positions"] = self.recompute_bn(self.net, train)
        self.swa_average = WeightAverage()
        self._phase_metrics["swa"] = result
        self._enter("publish")
        return result

    def publish(self) -> Path:
        """Write the traversing net (``net.safetensors``, and ``nets/iter-NNNN`` numbered from 1
        with ``keep_iteration_nets``)."""
        path = self.run_dir / NET
        if passed(self.progress, "publish"):
            return path
        p = self.progress
        notes = (
            f"frugalzero train: iteration {self.number}, {self.config.optimizer}, "
            f"swa {self.config.swa_cycles} cycles"
        )
        self.check_finite()
        meta = NetMeta(self.net.config, training_step=p.global_step, parent=p.parent or None)
        meta.notes = notes
        written = save_net(self.net, path, meta)
        if self.config.keep_iteration_nets:
            nets = self.run_dir / "nets"
            nets.mkdir(exist_ok=True)
            shutil.copyfile(path, nets / f"iter-{self.number:04d}.safetensors")
        p.parent = written.net_id
        self._enter("average")
        return path

    def update_average(self, train: SampleSet) -> Path:
        """Fold the published net into the averaging network; recompute its batch norm."""
        path = self.run_dir / AVERAGE
        if passed(self.progress, "average"):
            return path
        self.average.update(self.net)
        self.progress.average_count = self.average.count
        net = averaged_copy(self.net, self.average)
        self.recompute_bn(net, train)
        meta = NetMeta(
            net.config,
            training_step=self.progress.global_step,
            parent=self.progress.parent or None,
            notes=f"frugalzero train: mean of {self.average.count} iterations' nets",
        )
        save_net(net, path, meta)
        self.average_net = net
        self._enter("validate")
        return path

    def validate(self, holdout: SampleSet | None) -> dict[str, dict[str, float]]:
        """Both nets on the fixed validation set; recorded in the metrics."""
        if holdout is None or len(holdout) == 0:
            return {}
        nets = {"traversing": self.net}
        average = self.average_net or self._load_average()
        if average is not None:
            nets["average"] = average
        result = {name: self.evaluate(net, holdout) for name, net in nets.items()}
        self.metrics.write("validation", self.number, self.progress.global_step, result)
        return result

    def end_iteration(self, summary: dict[str, Any] | None = None) -> None:
        p = self.progress
        record = {k: v for k, v in (summary or {}).items() if k not in ("net", "average")}
        record.pop("iteration", None)
        self.metrics.write("iteration", self.number, p.global_step, record)
        p.iteration += 1
        p.phase, p.step, p.swa_count, p.main_total = "main", 0, 0, 0
        self._phase_metrics = {}
        self.save()
        self.metrics.flush()

    def request_stop(self) -> None:
        """Ask the running phase to checkpoint after the current step and stop."""
        self.stop_requested = True

    # ---- evaluation and batch norm ----------------------------------------------------------

    def evaluate(self, net: PolicyValueNet, data: SampleSet) -> dict[str, Any]:
        """``validation.evaluate_net`` on ``data`` in order, against the current iteration's
        value target."""
        lam = lambda_at(self.config, self.progress.iteration)
        batches = self._in_order(data)  # positions as they come: no truncation
        return evaluate_net(net, batches, self.config, lam, self.forward, self.head)

    def recompute_bn(self, net: PolicyValueNet, train: SampleSet) -> int:
        """Batch-norm statistics of ``net`` re-estimated on up to bn_samples training positions."""
        positions = bn_positions(self.config, self.progress.iteration, len(train))
        return recompute_bn_on(
            net,
            positions,
            self.config.batch_size,
            lambda indices: self._batch(train, indices, self.training_inputs()).planes,
            self.forward,
        )

    # ---- checkpoints ------------------------------------------------------------------------

    def check_finite(self) -> None:
        """TrainingDiverged when a loss since the last check, or a weight, is not finite (one
        device sync: called where the trainer writes or logs, not every step)."""
        what = not_finite(self._acc.losses() + self._phase_acc.losses(), self.net)
        if not what:
            return
        raise TrainingDiverged(
            f"{self.run_dir}: training diverged: {what} stopped being finite by step "
            f"{self.progress.global_step} (iteration {self.number}, phase "
            f"{self.progress.phase}); no net written. Lower the learning rate (lr "
            f"{self.config.resolved_lr():g}) and train again from the last checkpoint or the start"
        )

    def save(self) -> None:
        """Checkpoint everything a continuation needs (atomic; see resume.py); never weights
        that are not finite (``check_finite``)."""
        self.check_finite()
        p = self.progress
        p.metrics_lines = self.metrics.lines
        p.skipped_steps += self.stepper.take_skipped()  # the one sync for the skips
        self.metrics.flush()
        save_checkpoint(self.run_dir, self._checkpointed())
        self._last_save = time.monotonic()

    def _restore(self) -> None:
        parts = restore_checkpoint(self.run_dir, self._checkpointed())
        self.progress, self._phase_metrics = parts.progress, parts.phase_metrics
        self.average, self.swa_average = parts.average, parts.swa_average
        self.metrics.truncate(self.progress.metrics_lines, self.progress.global_step)
        if not mid_iteration(self.progress):
            self._write_config()

    def _checkpointed(self) -> Checkpointed:
        return Checkpointed(
            progress=self.progress,
            config=self.config,
            net=self.net,
            stepper=self.stepper,
            average=self.average,
            swa_average=self.swa_average,
            acc=self._acc,
            phase_acc=self._phase_acc,
            phase_metrics=self._phase_metrics,
        )

    def _state_path(self) -> Path:
        return self.run_dir / st.STATE_JSON

    def _write_config(self) -> None:
        atomic_write_text(self.run_dir / TRAIN_CONFIG, dump_toml(to_dict(self.config)))

    def _load_average(self) -> PolicyValueNet | None:
        path = self.run_dir / AVERAGE
        if not path.exists():
            return None
        net, _ = load_net(path, self.device)
        self.average_net = net
        return net

    # ---- the step loop ----------------------------------------------------------------------

    def _enter(self, phase: str) -> None:
        self.progress.phase, self.progress.step = phase, 0
        self.save()

    def _run_steps(
        self,
        train: SampleSet,
        phase: str,
        total: int,
        lr_at: Callable[[int], float],
        cycle: int = 0,
        stop_at: int = 0,
        timer: StepTimer | None = None,
    ) -> dict[str, float]:
        """Steps ``progress.step`` .. total - 1 of ``phase``; every ``cycle`` steps (SWA) the
        weights are folded into the SWA average. With ``stop_at``, stop after that step (the
        phase goes on later), each step's end told to ``timer``."""
        c, p = self.config, self.progress
        lam = lambda_at(c, p.iteration)
        if p.step == 0:
            self._phase_acc.reset()
        self.net.train()
        feed = BatchFeed(
            train,
            step_plan(c, p.iteration, phase, len(train), p.step, total),
            self.device,
            self.training_inputs(),
            c.channels_last,
            auto_prefetch(c.prefetch, self.device),
        )
        with feed:
            for batches in feed:
                self._run_step(batches, lr_at(p.step), lam, phase, total, cycle)
                if timer is not None:
                    timer.tick()
                if stop_at and p.step >= stop_at:
                    return {}
        result = self._phase_acc.record()
        result.pop("samples_per_s")  # only covers the steps since a resume
        result["steps"] = total
        return result

    def _run_step(
        self,
        batches: list[TrainingBatch],
        lr: float,
        lam: float,
        phase: str,
        total: int,
        cycle: int,
    ) -> None:
        """One step of ``_run_steps`` with its bookkeeping: metrics, SWA, stop, checkpoint."""
        c, p = self.config, self.progress
        sums, norm = self.step_batches(batches, lr, lam)
        self._acc.add(sums, norm)
        self._phase_acc.add(sums, norm)
        p.step += 1
        p.global_step += 1
        if cycle and p.step % cycle == 0:
            self.swa_average.update(self.net)
        if p.step % c.log_every == 0 or p.step == total:
            self.check_finite()
            record = self._acc.record()
            record["lr"] = lr
            if phase == "main":
                record["l2"] = l2_term(self.net, c.weight_decay)
            kind = "train" if phase == "main" else "swa"
            self.metrics.write(kind, self.number, p.global_step, record)
            self._acc.reset()
        if self.on_step is not None:
            self.on_step(self, phase, p.step, total)
        if p.step < total:
            if self.stop_requested:
                self.save()
                self.stop_requested = False
                raise TrainingInterrupted(f"stopped at step {p.global_step}")
            minutes = c.checkpoint_minutes
            if minutes > 0 and time.monotonic() - self._last_save > 60 * minutes:
                self.save()

    # ---- the optimiser step (``step.Stepper``) ----------------------------------------------

    def step(
        self, train: SampleSet, indices: np.ndarray, lr: float, lam: float
    ) -> tuple[LossSums, torch.Tensor]:
        """One optimiser step over ``indices`` (split into ``accumulation`` micro-batches)."""
        parts = np.array_split(indices, min(self.config.accumulation, len(indices)))
        inputs = self.training_inputs()
        return self.step_batches([self._batch(train, part, inputs) for part in parts], lr, lam)

    def step_batches(
        self, batches: list[TrainingBatch], lr: float, lam: float
    ) -> tuple[LossSums, torch.Tensor]:
        """One optimiser step over ``batches``, the micro-batches of one step."""
        return self.stepper.step_batches(batches, lr, lam)

    def forward(self, model, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``model`` (the net, its average or its compiled form) at the training precision."""
        return self.stepper.forward(model, planes)

    def training_inputs(self) -> HistoryInputs:
        """The net's history rule, and the truncation that teaches it positions without their
        game (training steps and batch-norm statistics; validation sees positions as played)."""
        return HistoryInputs(self.net.config.history_fill, self.config.history_truncation)

    def _batch(self, data: SampleSet, indices: np.ndarray, inputs: HistoryInputs) -> TrainingBatch:
        return make_batch(data, indices, self.device, self.config.channels_last, inputs)

    def _in_order(self, data: SampleSet) -> Iterator[TrainingBatch]:
        step, inputs = self.config.batch_size, HistoryInputs(self.net.config.history_fill)
        for i in range(0, len(data), step):
            yield self._batch(data, np.arange(i, min(i + step, len(data))), inputs)
