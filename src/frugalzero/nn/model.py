"""The policy-value network: a residual tower (or an attention body over the 64 squares) with a
policy head and a value head (its shape, ``NetConfig``, and the named sizes live in
``frugalzero.nn.config``, which needs no torch)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from frugalzero.chess.moves import NUM_PLANES as POLICY_PLANES
from frugalzero.nn.config import NetConfig, ValueHead
from frugalzero.values import wdl_to_value


def _conv_bn(c_in: int, c_out: int, kernel: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False), nn.BatchNorm2d(c_out)
    )


class SqueezeExcite(nn.Module):
    """Channel gating from global pooling (scale and bias, as in Leela Chess Zero)."""

    def __init__(self, channels: int, ratio: int) -> None:
        super().__init__()
        self.channels = channels
        self.fc1 = nn.Linear(channels, channels // ratio)
        self.fc2 = nn.Linear(channels // ratio, 2 * channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = x.mean(dim=(2, 3))
        scale, bias = self.fc2(torch.relu(self.fc1(pooled))).split(self.channels, dim=1)
        return x * torch.sigmoid(scale)[:, :, None, None] + bias[:, :, None, None]


class ResidualBlock(nn.Module):
    def __init__(self, filters: int, se_ratio: int) -> None:
        super().__init__()
        self.conv1 = _conv_bn(filters, filters, 3)
        self.conv2 = _conv_bn(filters, filters, 3)
        self.se = SqueezeExcite(filters, se_ratio) if se_ratio else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.se(self.conv2(torch.relu(self.conv1(x))))
        return torch.relu(x + y)


class EncoderLayer(nn.Module):
    """Self-attention over the squares, then a feed-forward layer, each normalised before
    and added back (pre-norm: trains without a warm-up at the learning rates ResNets take)."""

    def __init__(self, width: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, squares, width = x.shape
        qkv = self.qkv(self.norm1(x)).view(n, squares, 3, self.heads, width // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(attended.transpose(1, 2).reshape(n, squares, width))
        return x + self.ffn(self.norm2(x))


class AttentionBody(nn.Module):
    """Planes (N, C, 8, 8) -> tokens (N, 64, width): each square's C planes embedded, plus a
    learned embedding of the square itself, through ``blocks`` encoder layers. Token i is
    square i in the planes' own order, the from-square order of the policy index."""

    def __init__(self, config: NetConfig) -> None:
        super().__init__()
        f = config.filters
        self.embed = nn.Linear(config.input_planes, f)
        self.position = nn.Parameter(torch.randn(1, 64, f) * 0.02)
        self.layers = nn.Sequential(
            *(EncoderLayer(f, config.heads, config.ffn_ratio * f) for _ in range(config.blocks))
        )
        self.norm = nn.LayerNorm(f)

    def forward(self, planes: torch.Tensor) -> torch.Tensor:
        tokens = planes.flatten(2).transpose(1, 2)
        return self.norm(self.layers(self.embed(tokens) + self.position))


class PolicyValueNet(nn.Module):
    """Planes (N, 119, 8, 8) -> policy logits (N, 4672) and value (N, 1) or WDL logits (N, 3).

    Policy index = plane * 64 + from-square, which is exactly how the (N, 73, 8, 8) output of
    the policy convolution flattens.
    """

    def __init__(self, config: NetConfig) -> None:
        super().__init__()
        self.config = config
        f = config.filters
        outputs = 3 if config.value_head == "wdl" else 1
        if config.body == "attention":
            # the heads act per square (a 1x1 convolution's work), so the outputs keep the
            # ResNet's layout: policy plane-major over from-squares, value from a flat map
            self.body = AttentionBody(config)
            self.policy = nn.Linear(f, POLICY_PLANES)
            self.value = nn.Sequential(
                nn.Linear(f, config.value_channels),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(config.value_channels * 64, config.value_hidden),
                nn.ReLU(),
                nn.Linear(config.value_hidden, outputs),
            )
            return
        self.stem = nn.Sequential(_conv_bn(config.input_planes, f, 3), nn.ReLU())
        self.tower = nn.Sequential(
            *(ResidualBlock(f, config.se_ratio) for _ in range(config.blocks))
        )
        self.policy = nn.Sequential(_conv_bn(f, f, 3), nn.ReLU(), nn.Conv2d(f, POLICY_PLANES, 1))
        self.value = nn.Sequential(
            _conv_bn(f, config.value_channels, 1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(config.value_channels * 64, config.value_hidden),
            nn.ReLU(),
            nn.Linear(config.value_hidden, outputs),
        )

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.config.body == "attention":
            tokens = self.body(planes)
            policy = self.policy(tokens).transpose(1, 2).flatten(1)
            value = self.value(tokens)
        else:
            x = self.tower(self.stem(planes))
            policy = self.policy(x).flatten(1)
            value = self.value(x)
        if self.config.value_head == "scalar":
            value = torch.tanh(value)
        return policy, value


def value_from_output(value: torch.Tensor, head: ValueHead) -> torch.Tensor:
    """Expected score in [-1, 1] for the side to move, from either kind of value head."""
    if head == "wdl":
        wdl = torch.softmax(value.float(), dim=1)
        return wdl_to_value(wdl[:, 0], wdl[:, 2])
    return value.float()[:, 0]
