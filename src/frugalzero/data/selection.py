"""Which games training reads: all shards, the replay window, a held-out validation set.

A ``Selection`` is an ordered list of (shard, games) parts, oldest first. Games are the unit
of selection, so a held-out set never shares a game (and its correlated positions) with the
training set, and the same inputs always give the same selection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frugalzero.data import codec
from frugalzero.data.shards import ShardInfo, read_columns, scan_shards, shard_info
from frugalzero.errors import UserError


@dataclass(frozen=True)
class Part:
    """Some games of one shard."""

    shard: ShardInfo
    games: tuple[int, ...] | None = None
    """Game numbers within the shard, ascending; None = every game."""
    positions: int = -1
    """Trainable positions in those games (-1: the whole shard's)."""

    def __post_init__(self) -> None:
        if self.positions < 0:
            object.__setattr__(self, "positions", self.shard.positions)

    def game_numbers(self) -> range | tuple[int, ...]:
        return range(self.shard.games) if self.games is None else self.games

    @property
    def key(self) -> str:
        return str(self.shard.path.resolve())


@dataclass(frozen=True)
class Selection:
    """Games of some shards, oldest shard first."""

    parts: tuple[Part, ...] = ()

    @property
    def positions(self) -> int:
        return sum(p.positions for p in self.parts)

    @property
    def games(self) -> int:
        return sum(len(p.game_numbers()) for p in self.parts)

    def __iter__(self) -> Iterator[Part]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def without(self, other: Selection) -> Selection:
        """These games minus ``other``'s (matched by shard file and game number)."""
        removed: dict[str, set[int] | None] = {}
        for part in other.parts:
            if part.games is None:
                removed[part.key] = None
            elif removed.get(part.key, set()) is not None:
                removed.setdefault(part.key, set()).update(part.games)
        parts = []
        for part in self.parts:
            if part.key not in removed:
                parts.append(part)
                continue
            drop = removed[part.key]
            if drop is None:
                continue
            keep = tuple(g for g in part.game_numbers() if g not in drop)
            if keep:
                counts = game_positions(part.shard)
                parts.append(Part(part.shard, keep, int(counts[list(keep)].sum())))
        return Selection(tuple(parts))

    def to_json(self) -> dict:
        """A description that ``Selection.from_json`` turns back into the same selection."""
        return {
            "parts": [
                {"shard": str(p.shard.path), "games": None if p.games is None else list(p.games)}
                for p in self.parts
            ]
        }

    @classmethod
    def from_json(cls, data: dict) -> Selection:
        parts = []
        for item in data.get("parts", []):
            info = shard_info(item["shard"])
            games = item.get("games")
            if games is None:
                parts.append(Part(info))
            else:
                games = tuple(int(g) for g in games)
                if games and not 0 <= min(games) <= max(games) < info.games:
                    raise UserError(f"{info.path}: selection names games the shard lacks")
                parts.append(Part(info, games, int(game_positions(info)[list(games)].sum())))
        return cls(tuple(parts))


_POSITIONS_CACHE: dict[tuple[str, int, int], np.ndarray] = {}


def game_positions(shard: ShardInfo) -> np.ndarray:
    """Trainable positions of each game of a shard (reads and decompresses it once)."""
    key = (str(shard.path), shard.size, shard.created_ns)
    found = _POSITIONS_CACHE.get(key)
    if found is None:
        _, columns = read_columns(shard.path)
        has_target = (columns.arrays["kinds"] & codec.KIND_MASK) > 0
        off = codec.offsets(columns)
        cum = np.concatenate([[0], np.cumsum(has_target)])
        found = cum[off.ply[1:]] - cum[off.ply[:-1]]
        _POSITIONS_CACHE[key] = found
    return found


def select_all(sources: Iterable[str | Path] | Selection) -> Selection:
    """Every game of every readable shard under ``sources`` (directories or files)."""
    if isinstance(sources, Selection):
        return sources
    if isinstance(sources, str | Path):
        sources = [sources]
    return Selection(tuple(Part(info) for info in scan_shards(sources)))


def replay_window(sources: Iterable[str | Path] | Selection, window: int) -> Selection:
    """The newest games holding ``window`` positions (at least; whole games), oldest first.

    Shards are ordered by creation time and games within a shard by when they were added, so
    "newest" means the same on every machine. ``window <= 0`` selects everything.
    """
    selection = select_all(sources)
    if window <= 0 or selection.positions <= window:
        return selection
    chosen: list[Part] = []
    total = 0
    for part in reversed(selection.parts):
        if total + part.positions <= window:
            chosen.append(part)
            total += part.positions
            continue
        counts = game_positions(part.shard)
        numbers = list(part.game_numbers())
        keep: list[int] = []
        for g in reversed(numbers):
            if total >= window:
                break
            keep.append(g)
            total += int(counts[g])
        if keep:
            keep.reverse()
            chosen.append(Part(part.shard, tuple(keep), int(counts[keep].sum())))
        break
    return Selection(tuple(reversed(chosen)))


def split_holdout(
    sources: Iterable[str | Path] | Selection, fraction: float, min_positions: int = 0
) -> tuple[Selection, Selection]:
    """(train, holdout): the holdout is the last ``fraction`` of the positions, whole games.

    With ``fraction`` > 0 it holds at least ``min_positions`` (but never more than a quarter
    of the data): 2% of a few dozen self-play games is a single game, too few to measure on.
    Deterministic: the same shards always give the same split, so a validation set fixed from
    the first iteration's data stays fixed (save it with ``Selection.to_json``).
    """
    if not 0.0 <= fraction < 1.0:
        raise UserError(f"holdout fraction must be in [0, 1), got {fraction}")
    selection = select_all(sources)
    want = int(round(selection.positions * fraction))
    if fraction > 0:
        want = max(want, min(min_positions, selection.positions // 4))
    if want == 0:
        return selection, Selection()
    holdout = replay_window(selection, want)
    return selection.without(holdout), holdout
