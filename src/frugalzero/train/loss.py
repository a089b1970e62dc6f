"""AlphaZero's loss, with the policy softmax restricted to legal moves.

Policy: cross-entropy between the target distribution and a softmax over the *legal* moves
only: illegal logits are replaced by the most negative float before the softmax, so they get
exactly zero probability and zero gradient and the net spends no capacity pushing them down
(the CS230 modification). When every move is legal this is the plain cross-entropy.

Value: squared error for the tanh head, cross-entropy for the WDL head, against
lambda * v + (1 - lambda) * z (v the expert's or the search's value, z the game result). For
the WDL head the *distributions* are blended: a value v becomes W = max(v, 0),
L = max(-v, 0), D = 1 - |v| (the widest-draw distribution with expectation v), so z = +-1, 0
is one-hot and the blend's expectation is still lambda * v + (1 - lambda) * z. Where the expert
gave its own win/draw/loss estimate (Stockfish's WDL model) and v is the expert's, the WDL
head learns that distribution in place of the widest-draw one.

The L2 term is not here: it is the optimiser's weight decay on the same weights (identical
gradient, and no extra pass over the parameters every step); ``l2_term`` reports its value.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from frugalzero.values import value_to_wdl

NEG = torch.finfo(torch.float32).min


def masked_log_softmax(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """log-softmax over legal entries; illegal entries come out hugely negative (p = 0).

    A finite fill rather than -inf keeps rows without any legal move NaN-free.
    """
    return torch.log_softmax(logits.float().masked_fill(~legal, NEG), dim=1)


def policy_cross_entropy(
    logits: torch.Tensor, legal: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Per-position cross-entropy (N,) of ``target`` against the legal-move softmax.

    Target mass on illegal moves (never produced by our data) is ignored rather than
    turned into an infinite loss.
    """
    logp = masked_log_softmax(logits, legal)
    return -torch.where(legal, target * logp, 0.0).sum(dim=1)


def wdl_targets(value: torch.Tensor) -> torch.Tensor:
    """(N,) values in [-1, 1] -> (N, 3) win/draw/loss distributions with that expectation."""
    return torch.stack(value_to_wdl(value), dim=1)


def blend_weights(
    z: torch.Tensor, v: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-position weights (wz, wv) of z and v, and which positions have a value target.

    lambda * v + (1 - lambda) * z where both exist; where one is missing (NaN) the other
    takes the whole weight, unless its own weight is zero (lambda = 0 means results only,
    lambda = 1 values only), and then the position has no value target.
    """
    has_z, has_v = torch.isfinite(z), torch.isfinite(v)
    both = has_z & has_v
    wz = torch.where(both, 1.0 - lam, torch.where(has_z, 1.0, 0.0))
    wv = torch.where(both, lam, torch.where(has_v & ~has_z, 1.0, 0.0))
    if lam == 0.0:
        wv = torch.zeros_like(wv)
        wz = has_z.float()
    elif lam == 1.0:
        wz = torch.zeros_like(wz)
        wv = has_v.float()
    return wz, wv, (wz + wv) > 0


def pick_value(search_value: torch.Tensor, expert_value: torch.Tensor, source: str) -> torch.Tensor:
    """The v that blends with z: the expert's, the search's, or ('auto') expert else search."""
    if source == "expert":
        return expert_value
    if source == "search":
        return search_value
    return torch.where(torch.isfinite(expert_value), expert_value, search_value)


@dataclass
class ValueTarget:
    """What the value head learns, per position."""

    scalar: torch.Tensor
    """(N,) expected score in [-1, 1] (0 where ``valid`` is False)."""
    wdl: torch.Tensor
    """(N, 3) win/draw/loss distribution (zeros where ``valid`` is False)."""
    valid: torch.Tensor
    """(N,) bool: the position has a value target."""


def pick_wdl(batch, source: str) -> torch.Tensor | None:
    """The expert's WDL rows where v is the expert's value (NaN rows elsewhere), or None."""
    wdl = getattr(batch, "expert_wdl", None)
    if wdl is None or source == "search":
        return None
    if source == "expert":
        return wdl
    return torch.where(torch.isfinite(batch.expert_value)[:, None], wdl, torch.nan)


def value_target(
    z: torch.Tensor, v: torch.Tensor, lam: float, v_wdl: torch.Tensor | None = None
) -> ValueTarget:
    """The blended target; ``v_wdl`` (N, 3), where a row is finite, is v's distribution."""
    z, v = z.float(), v.float()
    wz, wv, valid = blend_weights(z, v, lam)
    z0, v0 = torch.nan_to_num(z), torch.nan_to_num(v)
    scalar = wz * z0 + wv * v0
    v_dist = wdl_targets(v0)
    if v_wdl is not None:
        known = torch.isfinite(v_wdl).all(dim=1, keepdim=True)
        v_dist = torch.where(known, torch.nan_to_num(v_wdl.float()), v_dist)
    wdl = wz[:, None] * wdl_targets(z0) + wv[:, None] * v_dist
    return ValueTarget(scalar, wdl, valid)


def value_loss(value_out: torch.Tensor, target: ValueTarget, head: str) -> torch.Tensor:
    """Per-position value loss (N,), 0 where there is no target."""
    if head == "wdl":
        loss = -(target.wdl * torch.log_softmax(value_out.float(), dim=1)).sum(dim=1)
    else:
        loss = (value_out.float()[:, 0] - target.scalar) ** 2
    return torch.where(target.valid, loss, 0.0)


def top1_agreement(logits: torch.Tensor, legal: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(N,) bool: the net's most likely legal move is the target's most likely move."""
    masked = logits.float().masked_fill(~legal, NEG)
    return masked.argmax(dim=1) == target.argmax(dim=1)


@dataclass
class LossSums:
    """Sums over a batch, so micro-batches and validation batches add up exactly."""

    policy: torch.Tensor
    value: torch.Tensor
    value_count: torch.Tensor
    top1: torch.Tensor
    count: int

    def total(self, value_weight: float, denominator: int) -> torch.Tensor:
        """The loss to differentiate: per-position mean over ``denominator`` positions."""
        return (self.policy + value_weight * self.value) / denominator

    def __add__(self, other: LossSums) -> LossSums:
        """The sums of both batches (a step's micro-batches add up to the step's sums)."""
        return LossSums(
            policy=self.policy + other.policy,
            value=self.value + other.value,
            value_count=self.value_count + other.value_count,
            top1=self.top1 + other.top1,
            count=self.count + other.count,
        )


def loss_sums(
    policy_logits: torch.Tensor,
    value_out: torch.Tensor,
    batch,
    head: str,
    lam: float,
    source: str = "auto",
    expert_wdl: bool = True,
) -> LossSums:
    """Policy and value loss sums of one batch (a ``TrainingBatch``-shaped object)."""
    policy = policy_cross_entropy(policy_logits, batch.legal, batch.policy)
    v = pick_value(batch.search_value, batch.expert_value, source)
    v_wdl = pick_wdl(batch, source) if head == "wdl" and expert_wdl else None
    target = value_target(batch.z, v, lam, v_wdl)
    value = value_loss(value_out, target, head)
    with torch.no_grad():
        top1 = top1_agreement(policy_logits, batch.legal, batch.policy).sum()
    return LossSums(
        policy=policy.sum(),
        value=value.sum(),
        value_count=target.valid.sum(),
        top1=top1,
        count=int(policy.shape[0]),
    )


def l2_term(net: torch.nn.Module, c: float) -> float:
    """c * ||w||^2 over the decayed weights (for metrics; the optimiser applies it)."""
    with torch.no_grad():
        return float(c * sum(float((p.float() ** 2).sum()) for p in decayed_parameters(net)))


def decayed_parameters(net: torch.nn.Module) -> list[torch.nn.Parameter]:
    """Convolution and linear weights: every parameter with more than one dimension."""
    return [p for p in net.parameters() if p.ndim > 1]
