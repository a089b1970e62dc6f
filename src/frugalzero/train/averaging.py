"""Weight averaging (SWA within an iteration, the averaging network across iterations) and
batch-norm recalibration.

An average of weights is not a network whose batch-norm running statistics fit it: the
statistics of the averaged weights' activations differ from the average of the statistics.
So after averaging, the statistics are recomputed by running training positions through the
averaged network (a cumulative mean over the batches, not an exponential one).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np
import torch
from torch import nn

M = TypeVar("M", bound=nn.Module)


class WeightAverage:
    """Running mean of a network's parameters, kept in float64 so many updates stay exact."""

    def __init__(self) -> None:
        self.count = 0
        self.mean: dict[str, torch.Tensor] = {}

    def update(self, net: nn.Module) -> None:
        """Fold the current parameters in: mean += (w - mean) / count."""
        self.count += 1
        with torch.no_grad():
            for name, param in net.named_parameters():
                w = param.detach().to("cpu", torch.float64)
                if self.count == 1:
                    self.mean[name] = w.clone()
                else:
                    self.mean[name] += (w - self.mean[name]) / self.count

    def apply_to(self, net: nn.Module) -> None:
        """Copy the mean into ``net``'s parameters (buffers are left for ``recompute_bn``)."""
        if not self.count:
            raise ValueError("no weights averaged yet")
        with torch.no_grad():
            for name, param in net.named_parameters():
                param.copy_(self.mean[name].to(param.device, param.dtype))

    def tensors(self, prefix: str) -> dict[str, torch.Tensor]:
        return {prefix + name: t for name, t in self.mean.items()}

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor], prefix: str, count: int):
        avg = cls()
        avg.count = count
        avg.mean = {k[len(prefix) :]: v.clone() for k, v in tensors.items() if k.startswith(prefix)}
        return avg


def averaged_copy(net: M, average: WeightAverage) -> M:
    """A copy of ``net`` with ``average``'s weights (its batch norm still ``net``'s: recompute
    it), leaving ``net`` to train on."""
    averaged = copy.deepcopy(net)
    average.apply_to(averaged)
    return averaged


def recompute_bn(
    net: nn.Module,
    batches: Iterable[torch.Tensor],
    forward: Callable[[nn.Module, torch.Tensor], object] | None = None,
) -> int:
    """Reset every batch norm's running statistics and re-estimate them as the plain mean
    over ``batches`` of input planes; returns the positions seen. The net ends in eval mode."""
    norms = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return 0
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # cumulative moving average
    net.train()
    seen = 0
    with torch.no_grad():
        for planes in batches:
            if forward is None:
                net(planes)
            else:
                forward(net, planes)
            seen += planes.shape[0]
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    net.eval()
    return seen


def recompute_bn_on(
    net: nn.Module,
    positions: np.ndarray,
    batch_size: int,
    planes_of: Callable[[np.ndarray], torch.Tensor],
    forward: Callable[[nn.Module, torch.Tensor], object],
) -> int:
    """``recompute_bn`` over ``positions`` in batches of at most ``batch_size``, each batch's
    input planes made by ``planes_of`` only when it is its turn (a whole epoch's planes would
    not fit in memory)."""
    step = min(batch_size, len(positions))

    def planes() -> Iterator[torch.Tensor]:
        for i in range(0, len(positions), step):
            yield planes_of(positions[i : i + step])

    return recompute_bn(net, planes(), forward)
