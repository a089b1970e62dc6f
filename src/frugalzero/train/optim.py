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
    """The configured optimiser, with weight decay only on convolution and linear weights.

    On CUDA the fused kernels: besides being one launch, they take the step's ``found_inf``
    as a device tensor and skip a non-finite step themselves, so a step never waits for the
    GPU to say whether its gradients were finite (``skip_if_not_finite``)."""
    decayed = decayed_parameters(net)
    ids = {id(p) for p in decayed}
    rest = [p for p in net.parameters() if id(p) not in ids]
    groups = [
        {"params": decayed, "weight_decay": 2.0 * config.weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]
    lr = config.resolved_lr()
    # a CPU keeps the foreach kernels (one launch per parameter group), whose state is what
    # every checkpoint so far holds; ``kernels`` makes a resume on the other device load it
    kinds = kernels(next(net.parameters()).device)
    if config.optimizer == "adam":
        return torch.optim.Adam(groups, lr=lr, betas=(0.9, 0.999), **kinds)
    return torch.optim.SGD(
        groups, lr=lr, momentum=config.momentum, nesterov=config.nesterov, **kinds
    )


def kernels(device: torch.device) -> dict[str, bool | None]:
    """The optimiser kernel settings for parameters on ``device``."""
    if device.type == "cuda":
        return {"fused": True, "foreach": None}
    return {"fused": None, "foreach": True}


def skip_if_not_finite(optimizer: torch.optim.Optimizer, norm: torch.Tensor) -> torch.Tensor | None:
    """Step unless the gradient norm is inf/NaN. With fused kernels the decision stays on the
    device and the skip comes back as a tensor (1.0 skipped, 0.0 stepped): no sync. Otherwise
    None when stepped, a 1.0 tensor when skipped."""
    if optimizer.param_groups[0].get("fused"):
        found_inf = (~torch.isfinite(norm)).to(torch.float32)
        optimizer.found_inf = found_inf  # read by the fused step, as GradScaler does
        try:
            optimizer.step()
        finally:
            del optimizer.found_inf
        return found_inf
    if torch.isfinite(norm):
        optimizer.step()
        return None
    return torch.ones(())


def cosine_lr(step: int, total: int, lr: float, final_fraction: float) -> float:
    """Rate of step ``step`` (0-based) of ``total``: lr at the first, lr x final at the end."""
    if total <= 1:
        return lr
    return cosine_at(step / (total - 1), lr, final_fraction)


def cosine_at(progress: float, lr: float, final_fraction: float) -> float:
    """The cosine's rate at ``progress`` (0 = start, 1 = end; clamped to [0, 1])."""
    progress = min(max(progress, 0.0), 1.0)
    return lr * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress)))


def main_phase_lr(
    config: TrainConfig, step: int, total: int, progress: float | None = None
) -> float:
    """The main phase's rate: its cosine runs over the phase's own steps, or, given
    ``progress`` (a run annealing once over its whole budget), over that share of the run."""
    lr = config.resolved_lr()
    if config.lr_schedule == "constant":
        return lr
    if progress is not None:
        return cosine_at(progress, lr, config.lr_final)
    return cosine_lr(step, total, lr, config.lr_final)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
