"""The network's settings without PyTorch: its shape (``NetConfig``, the named
``ARCHITECTURES``) and how it is run (``EvaluatorConfig``). Plain dataclasses, so the configs
that hold them (``RunConfig``, ``SelfPlayConfig``) and the commands that only print or parse
them never load torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from frugalzero.chess.encoding import NUM_PLANES, HistoryFill
from frugalzero.chess.moves import NUM_PLANES as POLICY_PLANES
from frugalzero.config import check
from frugalzero.errors import UserError

ValueHead = Literal["scalar", "wdl"]
Body = Literal["resnet", "attention"]


@dataclass(frozen=True)
class NetConfig:
    """Shape of a network; saved in every network file."""

    blocks: int = 6
    """Residual blocks in the tower (encoder layers for the attention body)."""
    filters: int = 64
    """Channels of every convolution in the tower (the token width for the attention body)."""
    se_ratio: int = 0
    """Squeeze-excitation reduction ratio inside each block; 0 turns it off."""
    body: Body = "resnet"
    """'resnet': 3x3 convolutions (AlphaZero); 'attention': a transformer encoder over the 64
    squares as tokens, each square's input planes embedded with a learned position (lc0's BT
    nets), so any square sees any other in one layer instead of a convolution's neighbours."""
    heads: int = 4
    """Attention heads per layer (attention body); ``filters`` must be a multiple of it. Heads
    of 32 channels, as lc0's BT nets: 16-channel ones ran 0.7x as fast on a CPU."""
    ffn_ratio: int = 2
    """The feed-forward layer's width over the token width (attention body)."""
    value_head: ValueHead = "scalar"
    """'scalar': one tanh output (AlphaZero); 'wdl': win/draw/loss logits."""
    value_channels: int = 32
    """Channels of the value head's 1x1 convolution."""
    value_hidden: int = 128
    """Width of the value head's hidden layer."""
    input_planes: int = NUM_PLANES
    """Input planes (119 for the AlphaZero encoding)."""
    history_fill: HistoryFill = "always"
    """What the net sees for history steps that are missing (a position given as FEN, a game's
    first plies): 'always' the oldest known position repeated, 'fen_only' the same unless the
    game began at the standard start position, 'no' empty steps (``chess.encoding``). The net
    is trained and played with it; its file records it under ``encoding.history_fill``."""

    def __post_init__(self) -> None:
        checks = [
            (self.blocks >= 1 and self.filters >= 1, "blocks and filters must be at least 1"),
            (
                self.body != "attention" or (self.heads >= 1 and self.filters % self.heads == 0),
                f"filters ({self.filters}) must be a multiple of heads ({self.heads})",
            ),
            (self.ffn_ratio >= 1, "ffn_ratio must be at least 1"),
        ]
        check(self, "net", checks)

    def flops_per_position(self) -> int:
        """Multiply-adds x 2 of one forward pass (convolutions, linear layers, attention)."""
        f, sq = self.filters, 64
        if self.body == "attention":
            return self._attention_flops()
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

    def _attention_flops(self) -> int:
        f, sq = self.filters, 64
        layer = (4 * f * f + 2 * self.ffn_ratio * f * f) * sq  # q, k, v, out; feed-forward
        layer += 2 * sq * sq * f  # scores and their weighted sum of values
        total = self.input_planes * f * sq + self.blocks * layer
        total += f * POLICY_PLANES * sq + f * self.value_channels * sq  # per-square heads
        total += self.value_channels * sq * self.value_hidden
        total += self.value_hidden * (3 if self.value_head == "wdl" else 1)
        return 2 * total


ARCHITECTURES: dict[str, NetConfig] = {
    "tiny": NetConfig(blocks=4, filters=32),
    "small": NetConfig(blocks=6, filters=64),
    "compact": NetConfig(blocks=6, filters=80, se_ratio=4),
    "medium": NetConfig(blocks=10, filters=128, se_ratio=4),
    "large": NetConfig(blocks=12, filters=160, se_ratio=4),
    "alphazero": NetConfig(blocks=19, filters=256),
    "attention": NetConfig(blocks=8, filters=128, body="attention", heads=4),
}


def architecture(name: str, **overrides) -> NetConfig:
    """A named size, optionally with fields changed (e.g. ``value_head='wdl'``)."""
    if name not in ARCHITECTURES:
        raise UserError(f"unknown architecture {name!r}; choose from {', '.join(ARCHITECTURES)}")
    return dataclasses.replace(ARCHITECTURES[name], **overrides)


@dataclass
class EvaluatorConfig:
    """How the network is run; every default was measured to win on a 2-core CPU."""

    device: str = "auto"
    """'auto' (CUDA when present, else CPU), 'cpu', 'cuda' or 'cuda:N'."""
    precision: Literal["auto", "fp32", "bf16", "fp16", "int8"] = "auto"
    """'auto' (fp16 on CUDA, bf16 on CPUs with native bf16, else fp32), 'fp32', 'bf16', 'fp16',
    or 'int8' (CPU only): the net quantized once when it is loaded (static post-training
    quantization calibrated on shipped positions, ``frugalzero.nn.quantize``), then compiled;
    1.7x bf16's positions/s on a 2-core EPYC, but not yet as strong (docs/network.md)."""
    threads: int = 0
    """PyTorch intra-op threads on CPU, per inference process; 0 = the cores not taken by the
    caller and the other inference processes (at least 1), all of them for 'inline' and for
    a lone self-play worker (its native search takes ~1% of a core)."""
    servers: int = 1
    """Inference processes ('process' backend), each taking whole batches in turn. On a CPU,
    two single-threaded processes run two small batches at once with no threads to
    synchronise, where one two-threaded process runs them one after the other, its threads
    spinning whenever the caller holds a core (one game's search: a 16-leaf batch every few
    milliseconds). Keep as many batches in flight as there are processes."""
    backend: Literal["auto", "process", "inline"] = "auto"
    """'process' (network in an inference process, overlapping the caller), 'inline', or 'auto'
    ('process' when the machine has 2 or more cores)."""
    cache_size: int = 100_000
    """Positions remembered (LRU); 0 turns the cache off."""
    channels_last: bool = True
    """NHWC memory layout, which oneDNN and cuDNN convolutions prefer."""
    compile: Literal["auto", "on", "off"] = "auto"
    """'on', 'off' or 'auto' (on with the process backend): torch.compile with frozen, prepacked
    weights runs the net ~1.3x faster on CPU; it costs 5-20 s once and needs a C++ compiler,
    and falls back to eager if compiling fails."""
    history_fill: Literal["net", "always", "fen_only", "no"] = "net"
    """Missing history steps as the net was trained ('net', its ``NetConfig.history_fill``), or
    another rule for a user who wants it ('always', 'fen_only', 'no'; UCI ``HistoryFill``)."""

    def __post_init__(self) -> None:
        checks = [
            (self.threads >= 0, "threads must be >= 0"),
            (self.servers >= 1, "servers must be at least 1"),
            (self.cache_size >= 0, "cache_size must be >= 0"),
            (
                self.precision != "int8" or not self.device.startswith("cuda"),
                "precision 'int8' runs on a CPU only, not on cuda",
            ),
        ]
        check(self, "evaluator", checks)
