"""Training batches from shards: shuffled across shards through a bounded buffer, assembled
with NumPy, optionally in DataLoader worker processes.

Each worker decodes its share of the games (every k-th game, so one big shard still keeps all
workers busy), replays them into compact samples (shared history frames, sparse targets),
draws from a bounded shuffle buffer that mixes games from several open shards, and assembles
whole batches at once: one ``encode`` for the planes and one scatter each for the legal mask
and the policy. ``iterate_in_order`` reads a fixed set (validation) in order, unshuffled.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from frugalzero.chess.encoding import encode
from frugalzero.chess.moves import NUM_MOVES
from frugalzero.data import codec
from frugalzero.data.replay import (
    LegalCache,
    ReplayError,
    Sample,
    flat_targets,
    replay_game,
    stack_history,
)
from frugalzero.data.selection import Part, Selection, replay_window, select_all
from frugalzero.data.shards import ShardError, game_skipped, read_columns, shard_skipped, warn
from frugalzero.runtime.cores import available_cores


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
    """A batch before expansion: ~1.2 kB a position instead of ~55 kB. Worker processes send
    these (cheap to pickle) and the consumer expands them (``expand``, ~15 us a position),
    which costs less than moving dense tensors between processes."""

    frames: np.ndarray  # (N, 8, 13) uint64, newest first
    meta: np.ndarray  # (N, 7) int64
    legal: np.ndarray  # concatenated legal-move indices (int16)
    legal_len: np.ndarray  # (N,) int32
    policy_index: np.ndarray  # concatenated policy indices (int16)
    policy_prob: np.ndarray  # their probabilities (float32)
    policy_len: np.ndarray  # (N,) int32
    values: np.ndarray  # (N, 6) float32: z, search value, expert value, expert W, D, L

    def __len__(self) -> int:
        return len(self.frames)

    def expand(self) -> TrainingBatch:
        """Dense tensors: planes via one vectorised ``encode``, masks by one scatter each."""
        n = len(self.frames)
        planes = encode(self.frames, self.meta)
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


def pack(samples: list[Sample]) -> CompactBatch:
    """Samples as one CompactBatch (a few NumPy concatenations)."""
    return CompactBatch(
        frames=stack_history(samples),
        meta=np.array([s.meta for s in samples], dtype=np.int64),
        **flat_targets(samples),
    )


def assemble(samples: list[Sample]) -> TrainingBatch:
    """Dense tensors for ``samples`` (``pack`` then ``expand``)."""
    return pack(samples).expand()


@dataclass
class LoaderConfig:
    """How training data is read."""

    batch_size: int = 256
    """Positions per batch."""
    window: int = 500_000
    """Replay window: train on the newest this many positions (whole games); 0 = all."""
    shuffle_buffer: int = 50_000
    """Positions held for shuffling (~300 bytes each per worker); bigger mixes better."""
    open_shards: int = 8
    """Shards decoded at once; games are drawn at random among them, mixing shards."""
    workers: int = -1
    """DataLoader worker processes; -1 = auto (0 on a CPU, up to 4 with CUDA; see
    ``auto_workers``), 0 = load in the training process."""
    seed: int = 0
    """Seed of the shuffling (each worker and epoch derive their own from it)."""
    legal_cache: int = 50_000
    """Positions whose legal moves are remembered per worker (openings recur); 0 = off."""
    prefetch: int = 2
    """Batches each worker prepares ahead."""


def auto_workers() -> int:
    """Worker processes to use by default: 0 (load in the training process) without CUDA.

    On a CPU the training step's threads already use every core, so a worker process only
    competes with them: measured on 2 cores (docs/data.md), training fed in-process ran at
    0.81-0.88 of its unfed speed, fed by one or two workers at 0.76-0.84. With CUDA the
    training process mostly waits for the GPU, so workers on the spare cores pay off.
    """
    if not torch.cuda.is_available():
        return 0
    return max(0, min(4, available_cores() - 1))


def _games(parts: list[Part], rng: np.random.Generator | None, open_shards: int, stride, offset):
    """(shard, columns, offsets, game) for the worker's games; shuffled unless rng is None."""
    order = list(range(len(parts))) if rng is None else list(rng.permutation(len(parts)))
    opened: list[list] = []  # [columns, offsets, remaining game numbers, shard path]
    while order or opened:
        while order and len(opened) < (1 if rng is None else open_shards):
            index = order.pop(0)
            part = parts[index]
            numbers = [g for g in part.game_numbers() if (g + index) % stride == offset]
            if not numbers:
                continue
            try:
                _, columns = read_columns(part.shard.path)
            except ShardError as exc:
                warn(shard_skipped(exc))
                continue
            if rng is not None:
                numbers = list(rng.permutation(numbers))
            numbers.reverse()  # pop() from the end takes them in order
            opened.append([columns, codec.offsets(columns), numbers, part.shard.path])
        if not opened:
            return
        slot = 0 if rng is None else int(rng.integers(len(opened)))
        columns, off, numbers, path = opened[slot]
        yield path, columns, off, int(numbers.pop())
        if not numbers:
            opened.pop(slot)


def _samples(games, cache: LegalCache) -> Iterator[Sample]:
    for path, columns, off, game in games:
        try:
            yield from replay_game(columns, off, game, cache)
        except ReplayError as exc:
            warn(game_skipped(path, game, exc))


class ShuffledPositions(torch.utils.data.IterableDataset):
    """Endless (or ``epochs``-long) shuffled CompactBatches of a selection's positions."""

    def __init__(
        self,
        selection: Selection,
        config: LoaderConfig | None = None,
        epochs: int | None = None,
    ) -> None:
        super().__init__()
        self.parts = list(selection.parts)
        self.positions = selection.positions
        self.config = config or LoaderConfig()
        self.epochs = epochs
        if not self.parts or self.positions == 0:
            raise ShardError("no training positions in the selected shards")

    def __iter__(self) -> Iterator[CompactBatch]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, worker])  # shard and game order
        pick = random.Random(cfg.seed * 1_000_003 + worker)  # per position: 10x cheaper
        cache = LegalCache(cfg.legal_cache)
        capacity = max(cfg.batch_size, cfg.shuffle_buffer // workers)
        start_at = min(capacity, 4 * cfg.batch_size)
        buffer: list[Sample] = []
        out: list[Sample] = []
        pushed = 0
        epoch = 0
        while self.epochs is None or epoch < self.epochs:
            epoch += 1
            games = _games(self.parts, rng, cfg.open_shards, workers, worker)
            produced = False
            for sample in _samples(games, cache):
                produced = True
                pushed += 1
                if len(buffer) < capacity:
                    buffer.append(sample)
                    # while filling, give out one for every two taken in: batches start early
                    if len(buffer) < start_at or pushed % 2:
                        continue
                    j = pick.randrange(len(buffer))
                    out.append(buffer[j])
                    buffer[j] = buffer[-1]
                    buffer.pop()
                else:
                    j = pick.randrange(capacity)
                    out.append(buffer[j])
                    buffer[j] = sample
                if len(out) == cfg.batch_size:
                    yield pack(out)
                    out = []
            if not produced:
                return  # this worker has no games at all
        pick.shuffle(buffer)  # finite epochs: hand out the rest
        buffer = out + buffer
        for i in range(0, len(buffer), cfg.batch_size):
            yield pack(buffer[i : i + cfg.batch_size])


class TrainingLoader:
    """Iterates TrainingBatch: workers (or this process) replay and pack, and the batches are
    expanded here, in the consumer (see CompactBatch)."""

    def __init__(self, dataset: ShuffledPositions, workers: int, pin_memory: bool) -> None:
        self.dataset = dataset
        self.workers = workers
        self.pin_memory = pin_memory
        self.loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=None,
            num_workers=workers,
            prefetch_factor=dataset.config.prefetch if workers else None,
            collate_fn=_identity,
        )

    @property
    def positions(self) -> int:
        """Positions in the selection read (one epoch)."""
        return self.dataset.positions

    def __iter__(self) -> Iterator[TrainingBatch]:
        for compact in self.loader:
            batch = compact.expand()
            yield batch.pin_memory() if self.pin_memory else batch


def _identity(item):
    return item


def training_loader(
    sources: Iterable[str | Path] | Selection,
    config: LoaderConfig | None = None,
    exclude: Selection | None = None,
    epochs: int | None = None,
) -> TrainingLoader:
    """Shuffled TrainingBatch over the replay window of ``sources`` (minus ``exclude``, e.g. a
    validation holdout). Endless unless ``epochs`` is given."""
    config = config or LoaderConfig()
    selection = replay_window(select_all(sources), config.window)
    if exclude is not None:
        selection = selection.without(exclude)
    dataset = ShuffledPositions(selection, config, epochs)
    workers = auto_workers() if config.workers < 0 else config.workers
    return TrainingLoader(dataset, workers, pin_memory=torch.cuda.is_available())


def iterate_in_order(
    sources: Iterable[str | Path] | Selection, batch_size: int = 256, legal_cache: int = 50_000
) -> Iterator[TrainingBatch]:
    """Every position of ``sources`` once, in order (shards, games, plies), no shuffling:
    for a fixed validation set. The last batch may be smaller."""
    selection = select_all(sources)
    cache = LegalCache(legal_cache)
    batch: list[Sample] = []
    for sample in _samples(_games(list(selection.parts), None, 1, 1, 0), cache):
        batch.append(sample)
        if len(batch) == batch_size:
            yield assemble(batch)
            batch = []
    if batch:
        yield assemble(batch)
