"""What a training step eats: ``TrainingBatch`` (dense tensors) and ``CompactBatch`` (the same
positions before expansion, ~1.2 kB a position instead of ~55 kB), made from replayed samples
(``frugalzero.data.replay``) by ``pack``, then ``CompactBatch.expand``: one vectorised
``encode`` for the planes and one scatter each for the legal mask and the policy. The net's
history rule and the history truncation that teaches it positions without their game are
``HistoryInputs``.

``frugalzero.train.data.PositionSet`` replays a selection once and batches any indices of it;
``frugalzero.train.feed`` builds batches ahead of the step (on CUDA, compact ones expanded on
the device).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, fields

import numpy as np
import torch

from frugalzero.chess.encoding import HISTORY, HistoryFill, encode
from frugalzero.chess.moves import NUM_MOVES
from frugalzero.data.replay import Sample, flat_targets, stack_history


@dataclass(frozen=True)
class HistoryInputs:
    """How a batch's history steps reach the net being trained: its rule for missing steps, and
    how often a position's history is cut short so that the net learns positions given without
    their game (a FEN, a book line) as well as those with it."""

    fill: HistoryFill
    """The net's ``NetConfig.history_fill``: training and play build the same planes."""
    truncate: float = 0.0
    """Share of positions whose k oldest steps are dropped, k drawn uniformly from 1-7
    (``TrainConfig.history_truncation``; 0 for validation)."""

    def cut(self, frames: np.ndarray, seed: int) -> np.ndarray:
        """``frames`` (N, 8, 13) with the drawn positions' oldest steps dropped (a copy when
        any is): a pure function of the frames and ``seed``, so a batch stays exact."""
        if self.truncate <= 0 or len(frames) == 0:
            return frames
        rng = np.random.default_rng(seed)
        drawn = rng.random(len(frames)) < self.truncate
        kept = HISTORY - rng.integers(1, HISTORY, size=len(frames))  # 1-7 newest steps kept
        if not drawn.any():
            return frames
        out = frames.copy()
        dropped = drawn[:, None] & (np.arange(HISTORY)[None, :] >= kept[:, None])
        out[dropped] = 0
        return out


def batch_seed(indices: np.ndarray) -> int:
    """The truncation draw's seed for a batch of ``indices``: the same batch, the same cut."""
    return zlib.crc32(np.ascontiguousarray(indices, dtype=np.int64).tobytes())


@dataclass
class TrainingBatch:
    """A batch of positions with everything a training step needs (torch tensors)."""

    planes: torch.Tensor
    """(N, 119, 8, 8) float32, channels-last in memory."""
    legal: torch.Tensor
    """(N, 4672) bool: the legal moves."""
    policy: torch.Tensor
    """(N, 4672) float32 target distribution, zero off the legal moves, summing to 1."""
    z: torch.Tensor
    """(N,) float32 game result from the side to move's view (NaN: game without a result)."""
    search_value: torch.Tensor
    """(N,) float32 root value of the search, side to move's view (NaN where absent)."""
    expert_value: torch.Tensor
    """(N,) float32 expert evaluation, side to move's view (NaN where absent)."""
    expert_wdl: torch.Tensor | None = None
    """(N, 3) float32 expert win/draw/loss probabilities, side to move's view (NaN rows where
    absent; None: no position has one)."""

    def __len__(self) -> int:
        return self.planes.shape[0]

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TrainingBatch:
        def move(t: torch.Tensor | None) -> torch.Tensor | None:
            if t is None:
                return None
            fmt = torch.channels_last if t.dim() == 4 else torch.preserve_format
            return t.to(device, non_blocking=non_blocking, memory_format=fmt)

        return TrainingBatch(**{f.name: move(getattr(self, f.name)) for f in fields(self)})

    def pin_memory(self) -> TrainingBatch:
        def pin(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.pin_memory()

        return TrainingBatch(**{f.name: pin(getattr(self, f.name)) for f in fields(self)})


@dataclass
class CompactBatch:
    """A batch before expansion: ~1.2 kB a position instead of ~55 kB. ``expand`` makes the
    dense tensors on the host (~15 us a position); on CUDA ``train.feed.expand_on`` makes them
    on the device, so 45 times fewer bytes cross to it."""

    frames: np.ndarray  # (N, 8, 13) uint64, newest first
    meta: np.ndarray  # (N, 7) int64
    legal: np.ndarray  # concatenated legal-move indices (int16)
    legal_len: np.ndarray  # (N,) int32
    policy_index: np.ndarray  # concatenated policy indices (int16)
    policy_prob: np.ndarray  # their probabilities (float32)
    policy_len: np.ndarray  # (N,) int32
    values: np.ndarray  # (N, 6) float32: z, search value, expert value, expert W, D, L
    history_fill: HistoryFill  # the trained net's rule for missing history steps

    def __len__(self) -> int:
        return len(self.frames)

    def expand(self) -> TrainingBatch:
        """Dense tensors: planes via one vectorised ``encode``, masks by one scatter each."""
        n = len(self.frames)
        planes = encode(self.frames, self.meta, self.history_fill)
        legal = np.zeros((n, NUM_MOVES), dtype=bool)
        legal[np.repeat(np.arange(n), self.legal_len), self.legal] = True
        policy = np.zeros((n, NUM_MOVES), dtype=np.float32)
        policy[np.repeat(np.arange(n), self.policy_len), self.policy_index] = self.policy_prob
        values = self.values
        return TrainingBatch(
            planes=torch.from_numpy(planes),
            legal=torch.from_numpy(legal),
            policy=torch.from_numpy(policy),
            z=torch.from_numpy(values[:, 0].copy()),
            search_value=torch.from_numpy(values[:, 1].copy()),
            expert_value=torch.from_numpy(values[:, 2].copy()),
            expert_wdl=torch.from_numpy(values[:, 3:6].copy()),
        )


def pack(samples: list[Sample], inputs: HistoryInputs, seed: int = 0) -> CompactBatch:
    """Samples as one CompactBatch (a few NumPy concatenations), their histories as ``inputs``
    says (``seed``: the truncation draw's)."""
    return CompactBatch(
        frames=inputs.cut(stack_history(samples), seed),
        meta=np.array([s.meta for s in samples], dtype=np.int64),
        **flat_targets(samples),
        history_fill=inputs.fill,
    )
