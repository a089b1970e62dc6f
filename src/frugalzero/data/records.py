"""The one training-record shape every data method produces.

A record is a *game*: a start position and the moves played from it, with a target for each
position that should be trained on. Positions are rebuilt by replaying the moves, which gives
the history planes for free and keeps storage small (a move is a byte or two; 119 dense planes
would be 7.6 kB).

Self-play stores visit distributions and root values; ε-Explore stores Stockfish's move as a
one-hot policy with its evaluation; PGN import and Stockfish games store the played move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from frugalzero.data.methods import NAMES as METHODS  # noqa: F401  (re-exported)


@dataclass
class PlyTarget:
    """What the position before one move learns from."""

    policy_indices: np.ndarray
    """Policy indices (0..4671, side-to-move view) with probability > 0; one entry = one-hot."""
    policy_probs: np.ndarray
    """Their probabilities (float32, summing to 1)."""
    search_value: float | None = None
    """Root value of the search, side to move's view, in [-1, 1] (self-play)."""
    expert_value: float | None = None
    """Expert evaluation as a value, side to move's view, in [-1, 1] (Stockfish labels)."""
    expert_wdl: tuple[int, int, int] | None = None
    """The expert's own win/draw/loss estimate in per mille, side to move's view, summing to
    1000 (Stockfish's UCI_ShowWDL); a WDL value head learns it in place of one derived from
    ``expert_value``."""


@dataclass
class GameRecord:
    """A game with per-ply training targets; positions are rebuilt by replaying ``moves``."""

    start_fen: str
    """Root position (the standard start, a book position, odds chess)."""
    moves: list[str]
    """Every move played from ``start_fen``, in UCI notation."""
    targets: list[PlyTarget | None]
    """One per move: the target of the position before ``moves[i]``; None = history only
    (book moves, an exploration prefix, moves not worth training on)."""
    result: float | None
    """Final result from White's view: 1, 0 or -1; None if the game has no result."""
    method: str
    """Which data method made it (one of METHODS)."""
    net_id: str = ""
    """Network that generated it (empty for Stockfish or PGN data)."""
    game_id: str = ""
    """Unique within a run: worker, batch and game number."""
    extra: dict[str, str] = field(default_factory=dict)
    """Free-form provenance (PGN headers kept, opening name, ...)."""

    def __post_init__(self) -> None:
        if len(self.targets) != len(self.moves):
            raise ValueError(f"{len(self.targets)} targets for {len(self.moves)} moves")

    @property
    def positions(self) -> int:
        """Number of trainable positions."""
        return sum(t is not None for t in self.targets)


def one_hot(index: int) -> tuple[np.ndarray, np.ndarray]:
    """The (indices, probs) pair of a one-hot policy target."""
    return np.array([index], dtype=np.int64), np.ones(1, dtype=np.float32)
