"""Loss sums between two metric records, kept on the device.

Reading a loss back every step would make each step wait for the device; the sums stay tensors
until a record is written, and are saved in every checkpoint, so a resumed run writes the same
records as one that was not stopped.
"""

from __future__ import annotations

import time

import torch

from frugalzero.train.loss import LossSums


class LossAccumulator:
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

    def losses(self) -> list[torch.Tensor]:
        """The policy and value sums (for the check that training has not diverged)."""
        return [self.sums["policy"], self.sums["value"]]

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
