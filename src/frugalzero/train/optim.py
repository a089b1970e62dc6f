"""Optimisers and learning-rate schedules.

SGD with Nesterov momentum and a cosine-annealed rate is what epsilon-Explore trains with;
Adam with global-norm clipping is the CS230 recipe. The L2 term c * ||w||^2 of AlphaZero's
loss is applied as weight decay 2c on the same weights (same gradient, no extra pass).
"""

from __future__ import annotations

import math

import torch

from frugalzero.train.config import TrainConfig
from frugalzero.train.loss import decayed_parameters


def make_optimizer(net: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """The configured optimiser, with weight decay only on convolution and linear weights."""
    decayed = decayed_parameters(net)
    ids = {id(p) for p in decayed}
    rest = [p for p in net.parameters() if id(p) not in ids]
    groups = [
        {"params": decayed, "weight_decay": 2.0 * config.weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]
    lr = config.resolved_lr()
    # foreach kernels: one launch per parameter group instead of one per tensor; never the
    # fused/capturable variants, whose state layout differs between devices
    if config.optimizer == "adam":
        return torch.optim.Adam(groups, lr=lr, betas=(0.9, 0.999), foreach=True)
    return torch.optim.SGD(
        groups, lr=lr, momentum=config.momentum, nesterov=config.nesterov, foreach=True
    )


def cosine_lr(step: int, total: int, lr: float, final_fraction: float) -> float:
    """Rate of step ``step`` (0-based) of ``total``: lr at the first, lr x final at the end."""
    if total <= 1:
        return lr
    progress = min(step / (total - 1), 1.0)
    return lr * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress)))


def main_phase_lr(config: TrainConfig, step: int, total: int) -> float:
    lr = config.resolved_lr()
    if config.lr_schedule == "constant":
        return lr
    return cosine_lr(step, total, lr, config.lr_final)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
