"""Network shapes by name, without torch: configs and ``config show`` check ``net.arch``
against them, and a network file's header is checked against them before any tensor is
allocated (``nn.checkpoint``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from frugalzero.chess.encoding import NUM_PLANES
from frugalzero.chess.moves import NUM_PLANES as POLICY_PLANES
from frugalzero.errors import UserError

ValueHead = Literal["scalar", "wdl"]


@dataclass(frozen=True)
class NetConfig:
    """Shape of a network; saved in every network file."""

    blocks: int = 6
    """Residual blocks in the tower."""
    filters: int = 64
    """Channels of every convolution in the tower."""
    se_ratio: int = 0
    """Squeeze-excitation reduction ratio inside each block; 0 turns it off."""
    value_head: ValueHead = "scalar"
    """'scalar': one tanh output (AlphaZero); 'wdl': win/draw/loss logits."""
    value_channels: int = 32
    """Channels of the value head's 1x1 convolution."""
    value_hidden: int = 128
    """Width of the value head's hidden layer."""
    input_planes: int = NUM_PLANES
    """Input planes (119 for the AlphaZero encoding)."""

    def flops_per_position(self) -> int:
        """Multiply-adds x 2 of one forward pass (convolutions and linear layers)."""
        f, sq = self.filters, 64
        conv3 = 9 * f * f * sq * 2
        total = 9 * self.input_planes * f * sq * 2  # input convolution
        total += 2 * self.blocks * conv3
        if self.se_ratio:  # f -> f/r -> 2f (scale and bias)
            total += self.blocks * 2 * 3 * f * (f // self.se_ratio)
        total += conv3 + f * POLICY_PLANES * sq * 2  # policy head
        total += f * self.value_channels * sq * 2  # value head
        total += self.value_channels * sq * self.value_hidden * 2
        total += self.value_hidden * (3 if self.value_head == "wdl" else 1) * 2
        return total


ARCHITECTURES: dict[str, NetConfig] = {
    "tiny": NetConfig(blocks=4, filters=32),
    "small": NetConfig(blocks=6, filters=64),
    "medium": NetConfig(blocks=10, filters=128, se_ratio=4),
    "alphazero": NetConfig(blocks=19, filters=256),
}


def architecture(name: str, **overrides) -> NetConfig:
    """A named size, optionally with fields changed (e.g. ``value_head='wdl'``)."""
    if name not in ARCHITECTURES:
        raise UserError(f"unknown architecture {name!r}; choose from {', '.join(ARCHITECTURES)}")
    return dataclasses.replace(ARCHITECTURES[name], **overrides)
