"""Position sets the trainer can index: a deterministic order and exact resume need random
access, and many epochs over one window should replay its games only once.

``PositionSet`` replays a selection's games once into compact samples (shared history
frames, sparse targets; see ``frugalzero.data.replay``) and assembles any list of them into a
``TrainingBatch``. ``TensorSet`` holds ready tensors (tests, benchmarks). ``fixed_holdout``
keeps the validation set of a run: the last games of its first iteration's data, remembered
in the run directory so that every later iteration validates on the very same positions and
never trains on them.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from frugalzero.data.batches import CompactBatch, HistoryInputs, TrainingBatch, batch_seed, pack
from frugalzero.data.replay import LegalCache, Sample, replay_flat, replay_shard_games
from frugalzero.data.selection import Selection, select_all, split_holdout
from frugalzero.data.shards import warn
from frugalzero.errors import UserError
from frugalzero.runtime.collector import PausedGC
from frugalzero.runtime.cores import available_cores
from frugalzero.runtime.files import atomic_write_text

VALIDATION_FILE = "validation.json"


class SampleSet(Protocol):
    """What the trainer needs from data: a size, batches by index, and an identity."""

    fingerprint: str

    def __len__(self) -> int: ...

    def batch(self, indices: np.ndarray, inputs: HistoryInputs) -> TrainingBatch: ...


class PositionSet:
    """Replayed positions of some games, held compactly in memory."""

    def __init__(self, samples: list[Sample], fingerprint: str, skipped_games: int = 0) -> None:
        self.samples = samples
        self.fingerprint = fingerprint
        self.skipped_games = skipped_games

    def __len__(self) -> int:
        return len(self.samples)

    def batch(self, indices: np.ndarray, inputs: HistoryInputs) -> TrainingBatch:
        return self.compact(indices, inputs).expand()

    def compact(self, indices: np.ndarray, inputs: HistoryInputs) -> CompactBatch:
        """The batch of ``indices`` before expansion (a GPU expands it on the device)."""
        samples = [self.samples[i] for i in np.asarray(indices).tolist()]
        return pack(samples, inputs, batch_seed(indices))

    @classmethod
    def load(
        cls,
        selection: Selection,
        progress: Callable[[int, int], None] | None = None,
        legal_cache: int = 50_000,
        replayed: dict[tuple[str, int], list[Sample]] | None = None,
        workers: int = -1,
    ) -> PositionSet:
        """Replay every game of ``selection`` once; games that do not replay are skipped,
        counted and reported, never fatal. ``replayed`` carries games from one load to the next
        (a run's replay window moves on by an iteration's games): those found there are not
        replayed again, and afterwards it holds exactly this selection's games. ``workers``
        processes replay at once (-1: one per available core); a small load stays here. The
        cycle collector is paused meanwhile: the samples hold no cycles, and its passes over
        the millions already loaded cost a third of the load (``runtime.collector``)."""
        with PausedGC():
            known = replayed if replayed is not None else {}
            tasks = []
            for part in selection.parts:
                path = str(part.shard.path)
                missing = [game for game in part.game_numbers() if (path, game) not in known]
                if missing:
                    tasks.append((path, missing))
            total = selection.games
            done = total - sum(len(games) for _, games in tasks)
            fresh: dict[tuple[str, int], list[Sample]] = {}
            skipped = 0
            reported: set[str] = set()
            for path, asked, games, messages in _replay(tasks, legal_cache, workers):
                for message in messages:
                    if message not in reported:  # a shard split among workers fails once each
                        reported.add(message)
                        warn(message)
                skipped += asked - len(games)
                fresh.update(((path, game), game_samples) for game, game_samples in games)
                done += asked
                if progress is not None:
                    progress(done, total)
            kept: dict[tuple[str, int], list[Sample]] = {}
            samples: list[Sample] = []
            for part in selection.parts:
                path = str(part.shard.path)
                for game in part.game_numbers():
                    key = (path, game)
                    game_samples = known.get(key)
                    if game_samples is None:
                        game_samples = fresh.get(key)
                    if game_samples is not None:
                        kept[key] = game_samples
                        samples.extend(game_samples)
            if progress is not None:
                progress(total, total)
            if replayed is not None:
                replayed.clear()
                replayed.update(kept)
            return cls(samples, selection_fingerprint(selection), skipped)


MIN_GAMES_PER_WORKER = 64
"""Fewer games than this per worker process and its start (about a second) costs more than
it saves: the load stays in the calling process."""


def _replay(
    tasks: list[tuple[str, list[int]]], legal_cache: int, workers: int
) -> Iterator[tuple[str, int, list[tuple[int, list[Sample]]], list[str]]]:
    """(shard, games asked, replayed games, messages) per piece of ``tasks``,
    in order: in worker processes when the load is big enough to pay for them."""
    missing = sum(len(games) for _, games in tasks)
    workers = available_cores() if workers < 0 else workers
    workers = min(workers, missing // MIN_GAMES_PER_WORKER)
    if workers <= 1:
        cache = LegalCache(legal_cache)
        for path, games in tasks:
            yield path, len(games), *replay_shard_games(Path(path), games, cache)
        return
    chunk = max(MIN_GAMES_PER_WORKER, -(-missing // (4 * workers)))  # ~4 jobs a worker
    jobs = [
        (path, games[i : i + chunk], legal_cache)
        for path, games in tasks
        for i in range(0, len(games), chunk)
    ]
    with mp.get_context("spawn").Pool(workers) as pool:  # fork beside torch threads can hang
        for (path, games, _), flat in zip(jobs, pool.imap(replay_flat, jobs)):
            yield path, len(games), flat.unpack(), flat.messages


class TensorSet:
    """Ready tensors indexed directly (synthetic data for tests and benchmarks)."""

    def __init__(self, batch: TrainingBatch, fingerprint: str = "") -> None:
        self.data = batch
        self.fingerprint = fingerprint or f"tensors:{len(batch)}"

    def __len__(self) -> int:
        return len(self.data)

    def batch(self, indices: np.ndarray, inputs: HistoryInputs) -> TrainingBatch:
        """Its ready planes (built when the set was: ``inputs`` cannot change them)."""
        index = torch.from_numpy(np.asarray(indices, dtype=np.int64))
        d = self.data
        return TrainingBatch(
            planes=d.planes[index].contiguous(memory_format=torch.channels_last),
            legal=d.legal[index],
            policy=d.policy[index],
            z=d.z[index],
            search_value=d.search_value[index],
            expert_value=d.expert_value[index],
            expert_wdl=None if d.expert_wdl is None else d.expert_wdl[index],
        )


def selection_fingerprint(selection: Selection) -> str:
    """Identity of a selection: shard files (name, size, creation) and game numbers."""
    h = hashlib.sha256()
    for part in selection.parts:
        info = part.shard
        games = "all" if part.games is None else ",".join(map(str, part.games))
        h.update(f"{info.path.name}|{info.size}|{info.created_ns}|{games}\n".encode())
    return h.hexdigest()[:16]


def fixed_holdout(
    run_dir: Path,
    sources: Iterable[str | Path] | Selection,
    fraction: float,
    min_positions: int = 0,
) -> tuple[Selection, Selection]:
    """(train, holdout) for this iteration's ``sources``.

    The first call splits off the last ``fraction`` of the positions, at least
    ``min_positions`` (whole games; see ``split_holdout``), and writes
    the holdout to ``run_dir/validation.json``; later calls read it back, so validation stays
    on the same positions, and take those games out of whatever training data comes later.
    """
    path = run_dir / VALIDATION_FILE
    selection = select_all(_absolute(sources))
    if path.exists():
        try:
            holdout = Selection.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{path}: unreadable validation set ({exc})") from None
        return selection.without(holdout), holdout
    train, holdout = split_holdout(selection, fraction, min_positions)
    if holdout.positions:
        atomic_write_text(path, json.dumps(holdout.to_json(), indent=1))
    return train, holdout


def _absolute(sources: Iterable[str | Path] | Selection) -> Iterable[str | Path] | Selection:
    if isinstance(sources, Selection):
        return sources
    if isinstance(sources, str | Path):
        sources = [sources]
    return [Path(s).resolve() for s in sources]
