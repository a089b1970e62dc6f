"""What a training run does: one typed config, every field documented and checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from frugalzero.config import bounded, check
from frugalzero.errors import UserError

Optimizer = Literal["sgd", "adam"]

# learning rates that work out of the box for batch 256 (SGD: the usual ResNet rate scaled to
# the batch; Adam: its standard rate)
DEFAULT_LR = {"sgd": 0.05, "adam": 0.001}


@dataclass
class TrainConfig:
    """How networks are trained; the defaults are what we measured to work on small machines."""

    batch_size: int = bounded(256, 1, 1 << 20)
    """Positions per optimiser step (the effective batch, whatever ``accumulation`` is)."""
    accumulation: int = 1
    """Micro-batches each step is split into (their gradients are summed): a large effective
    batch on a machine whose memory holds only a small one. Must divide batch_size."""
    epochs: float = 10.0
    """Passes over the training data in the main phase of one iteration (fractions allowed)."""
    steps: int = bounded(0, 0, 10**9)
    """Optimiser steps of the main phase; overrides ``epochs`` when > 0."""
    optimizer: Optimizer = "sgd"
    """'sgd': SGD with Nesterov momentum (epsilon-Explore); 'adam': Adam (CS230)."""
    lr: float = 0.0
    """Peak learning rate; 0 = the optimiser's default (0.05 for SGD, 0.001 for Adam)."""
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    """Main-phase schedule: 'cosine' anneals from lr to lr x lr_final over the phase."""
    lr_final: float = 0.01
    """Where the cosine ends, as a fraction of lr."""
    momentum: float = 0.9
    """SGD momentum (Adam's beta1 stays 0.9)."""
    nesterov: bool = True
    """Nesterov momentum for SGD."""
    weight_decay: float = 1e-4
    """c of the L2 term c * ||w||^2 over convolution and linear weights (not batch-norm
    parameters or biases), as in AlphaZero's loss."""
    clip_norm: float = 10.0
    """Global gradient-norm clip; 0 turns it off (the norm is still logged)."""
    value_weight: float = 1.0
    """Weight of the value loss relative to the policy loss."""
    value_lambda: float = 0.0
    """lambda of the value target lambda * v + (1 - lambda) * z, where v is the expert's or the
    search's value and z the game result; 0 = game results only."""
    value_lambda_schedule: list[list[float]] = field(default_factory=list)
    """Piecewise-linear lambda over iterations, as [[iteration, lambda], ...] (iterations count
    from 0); replaces value_lambda when given. Before the first point and after the last the
    end values hold."""
    value_source: Literal["auto", "expert", "search"] = "auto"
    """Which value v blends with z: 'auto' takes the expert's where present, else the
    search's; a position without v learns from z alone."""
    expert_wdl: bool = True
    """A WDL head learns the expert's own win/draw/loss estimate where a label carries one
    (Stockfish's); false: the distribution derived from the expert's value, as for any v."""
    swa_cycles: int = 25
    """SWA after the main phase: this many one-epoch cycles at a constant rate, the weights
    averaged at the end of each; 0 turns SWA off."""
    swa_lr: float = 0.1
    """SWA's constant learning rate, as a fraction of lr."""
    bn_samples: int = 16384
    """Training positions used to recompute batch-norm statistics after averaging weights;
    0 = one whole epoch."""
    history_truncation: float = 0.25
    """Share of training positions whose history is cut short (the k oldest of the 8 steps
    dropped, k drawn from 1 to 7, the gap filled by the net's history rule), so the net also
    knows a position given without its game: a FEN, a book start, the start position. At 0.25
    a short training of ``small`` validated as one without it (policy loss 2.034 both:
    benchmarks/notes/history.md)."""
    validation_fraction: float = 0.02
    """Share of the first iteration's games held out as the fixed validation set."""
    validation_min_positions: int = 1000
    """The validation set holds at least this many positions (whole games, at most a quarter
    of the first iteration's data) when validation_fraction > 0: 2% of 48 self-play games is
    one game, whose losses measure nothing."""
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    """Autocast precision (master weights stay fp32): 'auto' = bf16 on CPUs with native bf16
    (1.5x fp32 for training here), bf16 or fp16 (with loss scaling) on CUDA, else fp32."""
    channels_last: bool = True
    """NHWC memory layout, which oneDNN and cuDNN convolutions prefer (1.2x here)."""
    compile: Literal["auto", "on", "off"] = "auto"
    """torch.compile the training step: 1.1x on CPU for ~40 s of compiling, so 'auto' turns
    it on only for main phases of at least a million positions."""
    device: str = "auto"
    """'auto' (CUDA when present, else CPU), 'cpu', 'cuda' or 'cuda:N'."""
    threads: int = 0
    """PyTorch threads on CPU; 0 = every core."""
    prefetch: int = -1
    """Steps whose batches a background thread builds ahead (on CUDA: compact batches
    expanded on the device), so the next batch is ready when a step ends; 0 = each batch is
    built inside its step; -1 = auto: 2 on CUDA, 0 on a CPU (there building a batch costs 2%
    of a step and the thread, competing with the step's threads, 9%: measured). Changes
    speed, never the numbers."""
    seed: int = 0
    """Seeds weights' data order, the RNGs and so everything that makes two runs equal."""
    deterministic: bool = False
    """On CUDA, fixed cuDNN kernels and no TF32, so a resumed run repeats the uninterrupted one
    exactly (slower); off, cuDNN picks the fastest kernels. On a CPU training is always exact."""
    log_every: int = 20
    """Optimiser steps between training-metric records."""
    checkpoint_minutes: float = 10.0
    """Save resumable state at least this often during an iteration (0 = only at its end)."""
    keep_iteration_nets: bool = True
    """Keep every iteration's traversing network under nets/ (for Elo-by-iteration plots);
    ``frugalzero run`` keeps them in its own nets/ instead."""

    def resolved_lr(self) -> float:
        return self.lr if self.lr > 0 else DEFAULT_LR[self.optimizer]

    def __post_init__(self) -> None:
        check(
            self,
            "train",
            [
                (self.batch_size >= 1, "batch_size must be at least 1"),
                (self.accumulation >= 1, "accumulation must be at least 1"),
                (
                    self.batch_size % max(self.accumulation, 1) == 0,
                    f"accumulation {self.accumulation} must divide batch_size {self.batch_size}",
                ),
                (self.epochs > 0 or self.steps > 0, "epochs or steps must be positive"),
                (self.steps >= 0, "steps must not be negative"),
                (self.prefetch >= -1, "prefetch must be -1 (auto) or more"),
                (self.lr >= 0, "lr must not be negative"),
                (0 <= self.lr_final <= 1, "lr_final must be in [0, 1]"),
                (0 <= self.momentum < 1, "momentum must be in [0, 1)"),
                (self.weight_decay >= 0, "weight_decay must not be negative"),
                (self.clip_norm >= 0, "clip_norm must not be negative"),
                (self.value_weight >= 0, "value_weight must not be negative"),
                (0 <= self.value_lambda <= 1, "value_lambda must be in [0, 1]"),
                (self.swa_cycles >= 0, "swa_cycles must not be negative"),
                (self.swa_lr >= 0, "swa_lr must not be negative"),
                (self.bn_samples >= 0, "bn_samples must not be negative"),
                (0 <= self.validation_fraction < 1, "validation_fraction must be in [0, 1)"),
                (0 <= self.history_truncation <= 1, "history_truncation must be in [0, 1]"),
                (
                    self.validation_min_positions >= 0,
                    "validation_min_positions must not be negative",
                ),
                (self.threads >= 0, "threads must not be negative"),
                (self.log_every >= 1, "log_every must be at least 1"),
            ],
        )
        last = None
        for i, point in enumerate(self.value_lambda_schedule):
            where = f"train.value_lambda_schedule[{i}]"
            if len(point) != 2:
                raise UserError(f"{where}: expected [iteration, lambda], got {point!r}")
            if not 0 <= point[1] <= 1:
                raise UserError(f"{where}: lambda {point[1]} is not in [0, 1]")
            if last is not None and point[0] <= last:
                raise UserError(f"{where}: iterations must increase")
            last = point[0]


def lambda_at(config: TrainConfig, iteration: int) -> float:
    """The value-target lambda of ``iteration`` (piecewise-linear schedule, ends held)."""
    points = config.value_lambda_schedule
    if not points:
        return config.value_lambda
    if iteration <= points[0][0]:
        return float(points[0][1])
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if iteration <= x1:
            return float(y0 + (y1 - y0) * (iteration - x0) / (x1 - x0))
    return float(points[-1][1])
