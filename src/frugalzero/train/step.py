"""One optimiser step and what it needs: the machine, the optimiser, loss scaling, clipping.

The trainer decides which positions a step reads, at which rate, and what is recorded or saved
around it; ``Stepper`` only does the step (forward at the training precision, the masked loss,
backward, clipping, the optimiser's step or its skip), so the bench can time the same step the
trainer takes. The rates themselves are ``optim``'s schedules.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from frugalzero.data.batches import TrainingBatch
from frugalzero.errors import UserError
from frugalzero.nn.model import PolicyValueNet
from frugalzero.runtime.device import (
    autocast,
    compile_module,
    cuda_kernels,
    place,
    resolve_device,
    resolve_precision,
    set_threads,
)
from frugalzero.train import state as st
from frugalzero.train.config import TrainConfig
from frugalzero.train.loss import LossSums, loss_sums
from frugalzero.train.optim import kernels, make_optimizer, set_lr, skip_if_not_finite

COMPILE_AUTO_SAMPLES = 1_000_000
"""With ``compile = "auto"``, a phase of fewer training samples runs eager: compiling would
cost more than it saves."""


def training_device(config: TrainConfig) -> tuple[torch.device, str, torch.dtype]:
    """The device, precision name and dtype to train at, the machine set up for them
    (threads, CUDA kernels). fp16 needs CUDA's loss scaling: elsewhere bf16 is the choice."""
    device = resolve_device(config.device, "train config")
    precision, dtype = resolve_precision(config.precision, device, training=True)
    if precision == "fp16" and device.type != "cuda":
        raise UserError("train config: precision fp16 needs CUDA (loss scaling); use bf16")
    set_threads(config.threads, device)
    if device.type == "cuda":
        cuda_kernels(config.deterministic)
    return device, precision, dtype


class Stepper:
    """``net`` placed on ``device`` with its optimiser, and the step that trains it."""

    def __init__(
        self,
        config: TrainConfig,
        net: PolicyValueNet,
        device: torch.device,
        precision: str,
        dtype: torch.dtype,
    ) -> None:
        self.config = config
        """The settings the step reads (loss weights, clipping, accumulation, compile)."""
        self.device, self.dtype = device, dtype
        self.head = net.config.value_head
        self.net = place(net, device, config.channels_last)
        self.optimizer = make_optimizer(self.net, config)
        fp16_cuda = precision == "fp16" and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda") if fp16_cuda else None
        self.model: Any = self.net
        """What the step runs: the net, or its compiled form."""
        self.compiled = False
        self.skipped = torch.zeros((), device=device)
        """Steps skipped since the last ``take_skipped`` (a tensor: counting needs no sync)."""

    def step_batches(
        self, batches: list[TrainingBatch], lr: float, lam: float
    ) -> tuple[LossSums, torch.Tensor]:
        """One optimiser step over ``batches``, the micro-batches of one step; returns the
        step's loss sums and its gradient norm (before clipping)."""
        c = self.config
        size = sum(len(b) for b in batches)
        set_lr(self.optimizer, lr)
        self.optimizer.zero_grad(set_to_none=True)
        total: LossSums | None = None
        for batch in batches:
            policy, value = self.forward(self.model, batch.planes)
            sums = loss_sums(policy, value, batch, self.head, lam, c.value_source, c.expert_wdl)
            loss = sums.total(c.value_weight, size)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            total = sums if total is None else total + sums
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
                self.skipped = self.skipped + skipped.to(self.skipped.device)
        assert total is not None
        return total, norm

    def forward(self, model, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``model`` (the net, its average or its compiled form) at the training precision."""
        with autocast(self.device, self.dtype):
            return model(planes)

    def maybe_compile(self, samples: int) -> None:
        """Compile the net for a phase of ``samples`` training samples, if the setting asks."""
        mode = self.config.compile
        if self.compiled or mode == "off" or (mode == "auto" and samples < COMPILE_AUTO_SAMPLES):
            return
        self.model, self.compiled = compile_module(self.net, self.device)

    def take_skipped(self) -> int:
        """The steps skipped since the last call (one device sync: called when saving)."""
        count = int(self.skipped.item())
        self.skipped.zero_()
        return count

    def state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The optimiser's and the loss scaler's state, as JSON values and tensors."""
        opt_json, tensors = st.optimizer_state(self.optimizer)
        scaler = self.scaler.state_dict() if self.scaler is not None else None
        return {"optimizer": opt_json, "scaler": scaler}, tensors

    def restore(
        self, data: dict[str, Any], tensors: dict[str, torch.Tensor], same_optimizer: bool
    ) -> None:
        """Take over a checkpoint's optimiser state (``state``): with another optimiser the
        fresh one stays; the saved one runs this device's kernels, with the settings given now
        (they may change between iterations)."""
        if same_optimizer:
            for group in data["optimizer"]["param_groups"]:  # this device's kernels
                group.update(kernels(self.device))
            st.load_optimizer_state(self.optimizer, data["optimizer"], tensors)
            fresh = make_optimizer(self.net, self.config).param_groups
            for group, new in zip(self.optimizer.param_groups, fresh):
                for key in ("weight_decay", "momentum", "nesterov", "betas"):
                    if key in group:
                        group[key] = new[key]
        if self.scaler is not None and data.get("scaler"):
            self.scaler.load_state_dict(data["scaler"])


def not_finite(losses: list[torch.Tensor], net: torch.nn.Module) -> str:
    """What stopped being finite: "the loss" (of ``losses``), "the weights", or "" when
    both are. One device sync: called where the trainer writes or logs, not every step."""
    weights = [t for t in net.state_dict().values() if t.is_floating_point()]
    finite = torch.stack([torch.isfinite(t).all() for t in weights])
    loss_ok, weights_ok = bool(torch.isfinite(torch.stack(losses)).all()), bool(finite.all())
    if loss_ok and weights_ok:
        return ""
    return "the loss" if not loss_ok else "the weights"
