"""The trainer: one call per iteration of the main loop, resumable at any step.

An iteration runs in phases, each of which can also be called on its own:

1. ``train_main``: ``epochs`` passes over the data, learning rate annealed (cosine);
2. ``swa``: C one-epoch cycles at a constant rate, the weights averaged at the end of each
   cycle, then batch-norm statistics recomputed; the average becomes the traversing net;
3. ``publish``: the traversing net is written to ``net.safetensors`` (and ``nets/``);
4. ``update_average``: the averaging network (the running mean over iterations of the
   published nets, batch norm recomputed) is written to ``average.safetensors``;
5. ``validate``: both nets on the fixed validation set (policy loss, value loss, top-1).

Everything a continuation needs is checkpointed in the run directory (``state.py``): weights,
optimiser moments, weight averages, RNG states, the phase and step reached, and the metric
accumulators. The data order is a function of (seed, iteration, phase, epoch), so a run
stopped anywhere and resumed takes the same steps, with the same losses, as one that was not.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from frugalzero.config import dump_toml, to_dict
from frugalzero.data.batches import TrainingBatch
from frugalzero.errors import UserError
from frugalzero.layout import AVERAGE, NET, TRAIN_CONFIG
from frugalzero.nn.checkpoint import NetMeta, load_net, save_net
from frugalzero.nn.config import NetConfig
from frugalzero.nn.model import PolicyValueNet, value_from_output
from frugalzero.runtime.device import (
    autocast,
    compile_module,
    cuda_kernels,
    place,
    resolve_device,
    resolve_precision,
    set_threads,
)
from frugalzero.runtime.files import atomic_write_text
from frugalzero.train import state as st
from frugalzero.train.averaging import WeightAverage, recompute_bn
from frugalzero.train.config import TrainConfig, lambda_at
from frugalzero.train.data import SampleSet
from frugalzero.train.feed import BatchFeed, auto_prefetch, make_batch
from frugalzero.train.loss import LossSums, l2_term, loss_sums, pick_value, value_target
from frugalzero.train.metrics import MetricsLog, read_metrics
from frugalzero.train.optim import (
    kernels,
    main_phase_lr,
    make_optimizer,
    set_lr,
    skip_if_not_finite,
)

PHASES = ("main", "swa", "publish", "average", "validate")
FIT_PROBE_STEPS = 100
"""Main-phase steps timed before the phase is cut to fit a time limit."""
FIT_SKIP_STEPS = 10
"""Of those, the first ones not timed (allocations, compilation, caches warming up)."""
FIT_SEGMENTS = 8
"""After the first fit, the phase is timed and fitted again every this share of its length."""
FIT_MIN_SHARE = 0.25
"""A phase is never cut below this share of its steps: a net trained less would be of no use
to anyone, so a run whose data ran late ends late instead."""
_PHASE_SEED = {"main": 0, "swa": 1, "bn": 2}
# fields that may differ when resuming in the middle of an iteration: they change speed or
# bookkeeping, never the numbers
_OPERATIONAL = {
    "threads",
    "checkpoint_minutes",
    "compile",
    "device",
    "keep_iteration_nets",
    "prefetch",
}


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on request; the state was saved and the same call resumes it."""


class TrainingDiverged(UserError):
    """The loss or the weights stopped being finite: training stops before anything is
    written (no checkpoint, no net), so the last checkpoint holds the last good weights."""


@dataclass
class Progress:
    """Where training stands (saved in every checkpoint)."""

    iteration: int = 0
    """Iterations completed."""
    phase: str = "main"
    """Phase of the current iteration (one of PHASES)."""
    step: int = 0
    """Optimiser steps done in the current phase."""
    global_step: int = 0
    """Optimiser steps ever."""
    swa_count: int = 0
    """SWA cycles averaged so far in this iteration."""
    average_count: int = 0
    """Published nets folded into the averaging network."""
    data_size: int = 0
    """Training positions of the current iteration (checked when resuming)."""
    data_fingerprint: str = ""
    """Identity of the current iteration's training data (checked when resuming)."""
    metrics_lines: int = 0
    """Records in metrics.jsonl when this state was saved."""
    parent: str = ""
    """net_id of the last published net (the next one's parent)."""
    skipped_steps: int = 0
    """Steps whose gradient was not finite and were skipped."""
    main_total: int = 0
    """Main-phase steps of the current iteration once fitted to a time limit (0 = not
    fitted yet, or no limit): a resumed iteration keeps the length it was given."""


def steps_per_epoch(size: int, batch_size: int) -> int:
    """Whole batches per pass (the remainder waits for the next epoch's shuffle)."""
    return max(1, size // batch_size)


def phase_order(seed: int, iteration: int, phase: str, epoch: int, size: int) -> np.ndarray:
    """The data order of one epoch: a function of its coordinates only (exact resume)."""
    return np.random.default_rng([seed, iteration, _PHASE_SEED[phase], epoch]).permutation(size)


class _Accumulator:
    """Loss sums between two metric records, kept as tensors (no sync per step)."""

    KEYS = ("policy", "value", "value_count", "top1", "count", "grad_norm", "steps")

    def __init__(self, device: torch.device, value_weight: float = 1.0) -> None:
        self.device = device
        self.value_weight = value_weight
        self.reset()

    def reset(self) -> None:
        self.sums = {k: torch.zeros((), dtype=torch.float64, device=self.device) for k in self.KEYS}
        self.started = time.perf_counter()

    def add(self, sums: LossSums, grad_norm: torch.Tensor) -> None:
        s = self.sums
        s["policy"] += sums.policy.detach().double()
        s["value"] += sums.value.detach().double()
        s["value_count"] += sums.value_count.double()
        s["top1"] += sums.top1.double()
        s["count"] += sums.count
        s["grad_norm"] += grad_norm.detach().double()
        s["steps"] += 1

    def record(self) -> dict[str, float]:
        v = {k: float(t) for k, t in self.sums.items()}
        n = max(v["count"], 1.0)
        elapsed = time.perf_counter() - self.started
        return {
            "loss": (v["policy"] + self.value_weight * v["value"]) / n,
            "policy_loss": v["policy"] / n,
            "value_loss": v["value"] / max(v["value_count"], 1.0),
            "top1": v["top1"] / n,
            "grad_norm": v["grad_norm"] / max(v["steps"], 1.0),
            "samples_per_s": v["count"] / elapsed if elapsed > 0 else 0.0,
        }

    def tensors(self, prefix: str) -> dict[str, torch.Tensor]:
        return {f"{prefix}{k}": t.cpu() for k, t in self.sums.items()}

    def load(self, tensors: dict[str, torch.Tensor], prefix: str) -> None:
        for k in self.KEYS:
            self.sums[k] = tensors[f"{prefix}{k}"].to(self.device)


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
        self.device = resolve_device(config.device, "train config")
        self.precision, self.dtype = resolve_precision(config.precision, self.device, training=True)
        if self.precision == "fp16" and self.device.type != "cuda":
            raise UserError("train config: precision fp16 needs CUDA (loss scaling); use bf16")
        set_threads(config.threads, self.device)
        if self.device.type == "cuda":
            cuda_kernels(config.deterministic)
        self.head = net.config.value_head
        self.net = place(net, self.device, config.channels_last)
        self.optimizer = make_optimizer(self.net, config)
        fp16_cuda = self.precision == "fp16" and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda") if fp16_cuda else None
        self.metrics = MetricsLog(self.run_dir, tensorboard=tensorboard)
        self.progress = Progress(parent=parent)
        self.average = WeightAverage()
        self.swa_average = WeightAverage()
        self.average_net: PolicyValueNet | None = None
        self.on_step = on_step
        self.stop_requested = False
        self.run_progress: Callable[[], float] | None = None
        """The share of a run's budget spent so far, for a run that anneals once over it
        (``configure``): it places each main-phase step on the cosine instead of the phase's
        own steps."""
        self.seconds_left: Callable[[], float] | None = None
        """For a run on a clock (``configure``), the seconds its training may still take."""
        self.grow = False
        """With ``seconds_left``: the main phase may also grow past its steps to fill them."""
        self._model: Any = self.net
        self.compiled = False
        self._skipped = torch.zeros((), device=self.device)  # steps skipped since the last save
        self._acc = _Accumulator(self.device, config.value_weight)  # between metric records
        self._phase_acc = _Accumulator(self.device, config.value_weight)  # the whole phase
        self._last_save = time.monotonic()
        self._phase_metrics: dict[str, dict[str, float]] = {}
        if st.has_state(self.run_dir):
            self._restore()
        else:
            st.seed_everything(config.seed)
            self.metrics.truncate(0, -1)
            self._write_config()

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

    def configure(
        self,
        config: TrainConfig,
        run_progress: Callable[[], float] | None = None,
        seconds_left: Callable[[], float] | None = None,
        grow: bool = False,
    ) -> None:
        """The settings of the next (or the stopped) iteration, the run's budget share for a
        run annealing over its budget, and for a run on a clock the seconds its training may
        still take (the main phase is cut to fit them, or with ``grow`` also lengthened).
        Settings may change between iterations; an iteration stopped mid-way goes on only with
        the ones it started with."""
        self._check_resumable(to_dict(self.config), config, self.progress)
        self.config = config
        self.run_progress = run_progress
        self.seconds_left = seconds_left
        self.grow = grow

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
        fresh = p.phase == "main" and p.step == 0
        if fresh:
            p.data_size, p.data_fingerprint = len(train), train.fingerprint
        elif (p.data_size, p.data_fingerprint) != (len(train), train.fingerprint):
            raise UserError(
                f"{self.run_dir}: the stopped iteration {p.iteration} trained on other data "
                f"({p.data_size} positions, id {p.data_fingerprint}; now {len(train)}, "
                f"id {train.fingerprint}); give it the same data or start a new run directory"
            )

    def train_main(self, train: SampleSet) -> dict[str, float]:
        """The main phase: epochs x (size / batch) steps with the annealed learning rate."""
        if self._passed("main"):
            return self._phase_metrics.get("main", {})
        p = self.progress
        planned = self.main_steps(len(train))
        self._maybe_compile((p.main_total or planned) * self.config.batch_size)
        run_share = self.run_progress

        def lr_at(step: int) -> float:  # reads the phase's length when called: a fit sets it
            share = run_share() if run_share is not None else None
            return main_phase_lr(self.config, step, p.main_total or planned, share)

        if self.seconds_left is not None:
            self._fit_main(train, planned, lr_at)
        result = self._run_steps(train, "main", p.main_total or planned, lr_at)
        self._phase_metrics["main"] = result
        self._enter("swa")
        return result

    def _fit_main(self, train: SampleSet, planned: int, lr_at: Callable[[int], float]) -> None:
        """Trains the main phase up to its last segment, fitting its length
        (``progress.main_total``) to ``seconds_left`` on the way: the first
        ``FIT_PROBE_STEPS`` steps are trained (at the rates of the planned length: a fraction
        of a percent from the fitted one's) and timed, the steps that fit, after the SWA
        cycles' share, become the phase's length, and every ``1 / FIT_SEGMENTS`` of it the
        steps since the last fit are timed and the length fitted again, so a machine that
        slows down or speeds up mid-way still ends near its time. The length never exceeds
        the planned steps unless ``grow`` (a run filling its budget), and is never under
        ``FIT_MIN_SHARE`` of them. Too short a phase to time (twice the probe, or the probe
        when growing) keeps its length. Each fit is saved: a resumed iteration goes on with
        the length it had."""
        assert self.seconds_left is not None
        p, c = self.progress, self.config
        swa = c.swa_cycles * steps_per_epoch(len(train), c.batch_size)
        cap = math.inf if self.grow else planned
        while True:
            total = p.main_total or planned
            if p.main_total:
                segment = max(FIT_PROBE_STEPS, math.ceil(total / FIT_SEGMENTS))
                stop = p.step + segment
            else:
                stop = max(FIT_PROBE_STEPS, p.step + 2 * FIT_SKIP_STEPS)
                if not self.grow and total <= 2 * stop:
                    return
            if stop >= total:
                return
            clock: list[float] = []
            self._run_steps(train, "main", total, lr_at, stop_at=stop, clock=clock)
            timed = clock[FIT_SKIP_STEPS:]
            seconds_per_step = (timed[-1] - timed[0]) / (len(timed) - 1)
            fits = p.step + int(self.seconds_left() / seconds_per_step) - swa
            fitted = int(min(cap, max(p.step + 1, fits, math.ceil(FIT_MIN_SHARE * planned))))
            record = {
                "steps": planned,
                "fitted_steps": fitted,
                "seconds_per_step": seconds_per_step,
            }
            self.metrics.write("fit", self.number, p.global_step, record)
            p.main_total = fitted
            self.save()

    def swa(self, train: SampleSet) -> dict[str, float]:
        """C one-epoch cycles at a constant rate; the cycle-end weights are averaged into the
        traversing net and its batch norm recomputed. No-op when swa_cycles is 0."""
        if self._passed("swa"):
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
        if self._passed("publish"):
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
        if self._passed("average"):
            return path
        self.average.update(self.net)
        self.progress.average_count = self.average.count
        net = copy.deepcopy(self.net)
        self.average.apply_to(net)
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

    def main_steps(self, size: int) -> int:
        c = self.config
        if c.steps > 0:
            return c.steps
        return max(1, round(c.epochs * steps_per_epoch(size, c.batch_size)))

    def request_stop(self) -> None:
        """Ask the running phase to checkpoint after the current step and stop."""
        self.stop_requested = True

    # ---- evaluation and batch norm ----------------------------------------------------------

    def evaluate(self, net: PolicyValueNet, data: SampleSet) -> dict[str, Any]:
        """Policy loss, value losses and top-1 agreement of ``net`` on ``data``, in order.

        ``value_loss`` (and ``value_mse``) measure the target training learns, the current
        iteration's lambda blend: the same loss as the training records, so a gap between them
        is memorising, not another target. ``result_value_loss`` measures the game result alone
        (the expert's or search's values for data without results), comparable between runs
        whatever their lambda.
        """
        lam = lambda_at(self.config, self.progress.iteration)
        was_training = net.training
        net.eval()
        keys = ("policy", "value", "value_count", "top1", "mse", "result", "result_count")
        totals = dict.fromkeys(keys, 0.0)
        count = 0
        result_lam = 0.0
        for batch in self._in_order(data):
            if count == 0 and not torch.isfinite(batch.z).any():
                result_lam = 1.0  # no game results: the values stand in for them
            with torch.no_grad():
                policy, value = self.forward(net, batch.planes)
                sums, result = (
                    loss_sums(
                        policy,
                        value,
                        batch,
                        self.head,
                        blend,
                        self.config.value_source,
                        self.config.expert_wdl,
                    )
                    for blend in (lam, result_lam)
                )
                v = pick_value(batch.search_value, batch.expert_value, self.config.value_source)
                target = value_target(batch.z, v, lam)
                expected = value_from_output(value, self.head)
                mse = torch.where(target.valid, (expected - target.scalar) ** 2, 0.0).sum()
            totals["policy"] += float(sums.policy)
            totals["value"] += float(sums.value)
            totals["value_count"] += float(sums.value_count)
            totals["top1"] += float(sums.top1)
            totals["mse"] += float(mse)
            totals["result"] += float(result.value)
            totals["result_count"] += float(result.value_count)
            count += sums.count
        net.train(was_training)
        vc = max(totals["value_count"], 1.0)
        return {
            "policy_loss": totals["policy"] / max(count, 1),
            "value_loss": totals["value"] / vc,
            "value_mse": totals["mse"] / vc,
            "value_lambda": lam,
            "result_value_loss": totals["result"] / max(totals["result_count"], 1.0),
            "top1": totals["top1"] / max(count, 1),
            "positions": count,
            "value_target": "result" if result_lam == 0.0 else "value",
        }

    def recompute_bn(self, net: PolicyValueNet, train: SampleSet) -> int:
        """Batch-norm statistics of ``net`` re-estimated on up to bn_samples training positions."""
        c = self.config
        size = len(train)
        limit = size if c.bn_samples == 0 else min(size, c.bn_samples)
        order = phase_order(c.seed, self.progress.iteration, "bn", 0, size)[:limit]
        step = min(c.batch_size, limit)

        def planes() -> Iterator[torch.Tensor]:
            for i in range(0, limit, step):
                yield self._batch(train, order[i : i + step]).planes

        return recompute_bn(net, planes(), lambda n, x: self.forward(n, x))

    # ---- checkpoints ------------------------------------------------------------------------

    def check_finite(self) -> None:
        """TrainingDiverged when a loss since the last check, or a weight, is not finite (one
        device sync: called where the trainer writes or logs, not every step)."""
        sums = (self._acc.sums, self._phase_acc.sums)
        losses = torch.stack([s[k] for s in sums for k in ("policy", "value")])
        weights = [t for t in self.net.state_dict().values() if t.is_floating_point()]
        finite = torch.stack([torch.isfinite(t).all() for t in weights])
        loss_ok, weights_ok = bool(torch.isfinite(losses).all()), bool(finite.all())
        if loss_ok and weights_ok:
            return
        what = "the loss" if not loss_ok else "the weights"
        raise TrainingDiverged(
            f"{self.run_dir}: training diverged: {what} stopped being finite by step "
            f"{self.progress.global_step} (iteration {self.number}, phase "
            f"{self.progress.phase}); no net written. Lower the learning rate (lr "
            f"{self.config.resolved_lr():g}) and train again from the last checkpoint or the start"
        )

    def save(self) -> None:
        """Checkpoint everything a continuation needs (atomic; see state.py); never weights
        that are not finite (``check_finite``)."""
        self.check_finite()
        p = self.progress
        p.metrics_lines = self.metrics.lines
        p.skipped_steps += int(self._skipped.item())  # the one sync for the skips
        self._skipped.zero_()
        opt_json, tensors = st.optimizer_state(self.optimizer)
        rng_json, rng_tensors = st.capture_rng()
        tensors.update(rng_tensors)
        tensors.update({f"net.{k}": v for k, v in self.net.state_dict().items()})
        tensors.update(self.average.tensors("avg."))
        tensors.update(self.swa_average.tensors("swa."))
        tensors.update(self._acc.tensors("acc."))
        tensors.update(self._phase_acc.tensors("pacc."))
        data = {
            "progress": dataclasses.asdict(p),
            "config": to_dict(self.config),
            "architecture": dataclasses.asdict(self.net.config),
            "optimizer": opt_json,
            "rng": rng_json,
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "swa_count": self.swa_average.count,
            "phase_metrics": self._phase_metrics,
        }
        self.metrics.flush()
        st.save_state(self.run_dir, data, tensors)
        self._last_save = time.monotonic()

    def _restore(self) -> None:
        data, tensors = st.load_state(self.run_dir)
        where = self.run_dir / st.STATE_JSON
        saved = data.get("architecture")
        try:  # fields added since the state was written take their defaults
            same = isinstance(saved, dict) and NetConfig(**saved) == self.net.config
        except (TypeError, UserError):
            same = False
        if not same:
            raise UserError(f"{where}: field architecture differs from the network given")
        progress = Progress(**data["progress"])
        self._check_resumable(data["config"], self.config, progress)
        mid_iteration = _mid_iteration(progress)
        self.progress = progress
        self.net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
        if data["config"]["optimizer"] == self.config.optimizer:  # else: a fresh optimiser
            for group in data["optimizer"]["param_groups"]:  # this device's kernels
                group.update(kernels(self.device))
            st.load_optimizer_state(self.optimizer, data["optimizer"], tensors)
            fresh = make_optimizer(self.net, self.config).param_groups
            for group, new in zip(self.optimizer.param_groups, fresh):  # settings may change
                for key in ("weight_decay", "momentum", "nesterov", "betas"):
                    if key in group:
                        group[key] = new[key]
        st.restore_rng(data["rng"], tensors)
        if self.scaler is not None and data.get("scaler"):
            self.scaler.load_state_dict(data["scaler"])
        self.average = WeightAverage.from_tensors(tensors, "avg.", progress.average_count)
        self.swa_average = WeightAverage.from_tensors(tensors, "swa.", data["swa_count"])
        self._acc.load(tensors, "acc.")
        self._phase_acc.load(tensors, "pacc.")
        self._phase_metrics = data.get("phase_metrics", {})
        self.metrics.truncate(progress.metrics_lines, progress.global_step)
        if not mid_iteration:
            self._write_config()

    def _check_resumable(
        self, saved: dict[str, Any], config: TrainConfig, progress: Progress
    ) -> None:
        """An iteration stopped mid-way goes on only with the settings it started with."""
        if not _mid_iteration(progress):
            return
        now = to_dict(config)
        for key in sorted(set(saved) | set(now)):
            if key not in _OPERATIONAL and saved.get(key) != now.get(key):
                raise UserError(
                    f"{self.run_dir / st.STATE_JSON}: field {key} was {saved.get(key)!r} when "
                    f"iteration {progress.iteration} stopped, now {now.get(key)!r}; resume "
                    "with the same settings (they may change between iterations)"
                )

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

    def _passed(self, phase: str) -> bool:
        return PHASES.index(self.progress.phase) > PHASES.index(phase)

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
        clock: list[float] | None = None,
    ) -> dict[str, float]:
        """Steps ``progress.step`` .. total - 1 of ``phase``; every ``cycle`` steps (SWA) the
        weights are folded into the SWA average. With ``stop_at``, stop after that step (the
        phase goes on later), each step's end time appended to ``clock``."""
        c, p = self.config, self.progress
        lam = lambda_at(c, p.iteration)
        if p.step == 0:
            self._phase_acc.reset()
        self.net.train()
        feed = BatchFeed(
            train,
            self._plan(train, phase, p.step, total),
            self.device,
            c.channels_last,
            auto_prefetch(c.prefetch, self.device),
        )
        with feed:
            for batches in feed:
                self._run_step(batches, lr_at(p.step), lam, phase, total, cycle)
                if clock is not None:
                    clock.append(time.perf_counter())
                if stop_at and p.step >= stop_at:
                    return {}
        result = self._phase_acc.record()
        result.pop("samples_per_s")  # only covers the steps since a resume
        result["steps"] = total
        return result

    def _plan(self, train: SampleSet, phase: str, start: int, total: int):
        """The micro-batch indices of steps ``start`` .. total - 1 of ``phase``, in order."""
        c, p = self.config, self.progress
        size = len(train)
        spe = steps_per_epoch(size, c.batch_size)
        batch = min(c.batch_size, size)
        order, order_epoch = None, -1
        for step in range(start, total):
            epoch, index = divmod(step, spe)
            if epoch != order_epoch:
                order, order_epoch = phase_order(c.seed, p.iteration, phase, epoch, size), epoch
            indices = order[index * batch : (index + 1) * batch]
            yield np.array_split(indices, min(c.accumulation, len(indices)))

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

    def step(
        self, train: SampleSet, indices: np.ndarray, lr: float, lam: float
    ) -> tuple[LossSums, torch.Tensor]:
        """One optimiser step over ``indices`` (split into ``accumulation`` micro-batches)."""
        parts = np.array_split(indices, min(self.config.accumulation, len(indices)))
        return self.step_batches([self._batch(train, part) for part in parts], lr, lam)

    def step_batches(
        self, batches: list[TrainingBatch], lr: float, lam: float
    ) -> tuple[LossSums, torch.Tensor]:
        """One optimiser step over ``batches``, the micro-batches of one step."""
        c = self.config
        size = sum(len(b) for b in batches)
        set_lr(self.optimizer, lr)
        self.optimizer.zero_grad(set_to_none=True)
        total: LossSums | None = None
        for batch in batches:
            policy, value = self.forward(self._model, batch.planes)
            sums = loss_sums(policy, value, batch, self.head, lam, c.value_source, c.expert_wdl)
            loss = sums.total(c.value_weight, size)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            total = sums if total is None else _add(total, sums)
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        limit = c.clip_norm if c.clip_norm > 0 else math.inf
        norm = torch.nn.utils.clip_grad_norm_(self.net.parameters(), limit)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)  # skips the step itself on inf/NaN gradients
            self.scaler.update()
        else:
            skipped = skip_if_not_finite(self.optimizer, norm)
            if skipped is not None:
                self._skipped = self._skipped + skipped.to(self._skipped.device)
        assert total is not None
        return total, norm

    def forward(self, model, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``model`` (the net, its average or its compiled form) at the training precision."""
        with autocast(self.device, self.dtype):
            return model(planes)

    def _batch(self, data: SampleSet, indices: np.ndarray) -> TrainingBatch:
        return make_batch(data, indices, self.device, self.config.channels_last)

    def _in_order(self, data: SampleSet) -> Iterator[TrainingBatch]:
        step = self.config.batch_size
        for i in range(0, len(data), step):
            yield self._batch(data, np.arange(i, min(i + step, len(data))))

    def _maybe_compile(self, samples: int) -> None:
        mode = self.config.compile
        if self.compiled or mode == "off" or (mode == "auto" and samples < 1_000_000):
            return
        self._model, self.compiled = compile_module(self.net, self.device)


def _mid_iteration(progress: Progress) -> bool:
    return not (progress.phase == "main" and progress.step == 0)


def _add(a: LossSums, b: LossSums) -> LossSums:
    return LossSums(
        policy=a.policy + b.policy,
        value=a.value + b.value,
        value_count=a.value_count + b.value_count,
        top1=a.top1 + b.top1,
        count=a.count + b.count,
    )
