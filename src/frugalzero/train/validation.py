"""A network measured on a fixed set of positions: the losses training minimises, and top-1.

Validation runs after every iteration on the same held-out positions, so its numbers compare
across iterations (and, for ``result_value_loss``, across runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from frugalzero.data.batches import TrainingBatch
from frugalzero.nn.model import PolicyValueNet, value_from_output
from frugalzero.train.config import TrainConfig
from frugalzero.train.loss import loss_sums, pick_value, value_target

Forward = Callable[[PolicyValueNet, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def evaluate_net(
    net: PolicyValueNet,
    batches: Iterable[TrainingBatch],
    config: TrainConfig,
    lam: float,
    forward: Forward,
    head: str,
) -> dict[str, Any]:
    """Policy loss, value losses and top-1 agreement of ``net`` (its value ``head``, run by
    ``forward`` at the training precision) on ``batches``.

    ``value_loss`` (and ``value_mse``) measure the target training learns, the lambda blend
    ``lam``: the same loss as the training records, so a gap between them is memorising, not
    another target. ``result_value_loss`` measures the game result alone (the expert's or
    search's values for data without results), comparable between runs whatever their lambda.
    """
    was_training = net.training
    net.eval()
    keys = ("policy", "value", "value_count", "top1", "mse", "result", "result_count")
    totals = dict.fromkeys(keys, 0.0)
    count = 0
    result_lam = 0.0
    for batch in batches:
        if count == 0 and not torch.isfinite(batch.z).any():
            result_lam = 1.0  # no game results: the values stand in for them
        with torch.no_grad():
            policy, value = forward(net, batch.planes)
            sums, result = (
                loss_sums(policy, value, batch, head, blend, config.value_source, config.expert_wdl)
                for blend in (lam, result_lam)
            )
            v = pick_value(batch.search_value, batch.expert_value, config.value_source)
            target = value_target(batch.z, v, lam)
            expected = value_from_output(value, head)
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
