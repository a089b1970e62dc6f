"""What goes into a search and what comes out of it, without the network.

The search never imports torch: ``frugalzero.nn.evaluator.Evaluator`` (or anything else with
``submit``) produces ``Evaluation``s, and the search consumes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import chess
import numpy as np

from frugalzero.chess.history import NetInput


@dataclass(slots=True)
class Evaluation:
    """The network's view of one position."""

    priors: np.ndarray
    """Probabilities of the position's legal moves, in ``NetInput.moves`` order; sums to 1."""
    value: float
    """Expected score for the side to move, in [-1, 1]."""
    wdl: np.ndarray | None = None
    """Win/draw/loss probabilities for the side to move (WDL value head only)."""


class Submitted(Protocol):
    """A batch handed to an evaluator; ``result()`` waits for it."""

    def result(self) -> Sequence[Evaluation]: ...


class Evaluates(Protocol):
    """What the search needs from an evaluator (``frugalzero.nn.evaluator.Evaluator`` and
    ``UniformEvaluator`` have it): ``submit`` a batch of inputs and collect its evaluations
    later (one per input, in order), so the caller can work while the batch is evaluated;
    ``evaluate`` is the same, waited for at once."""

    def submit(self, positions: Sequence[NetInput | chess.Board]) -> Submitted: ...

    def evaluate(self, positions: Sequence[NetInput | chess.Board]) -> Sequence[Evaluation]: ...


class RootLine(NamedTuple):
    """One root move as a line of analysis (a UCI ``multipv`` line): how the search rates the
    move and what it expects to follow. Values are from the root's side to move."""

    move: chess.Move
    visits: float
    """Visits of the move, those kept from earlier searches included."""
    q: float
    """Mean value of the move (NaN when unvisited, exactly +-1 when proven)."""
    mate_in: int | None
    """Plies to mate when the move is proven: positive = the root's side mates with it,
    negative = it is mated after it."""
    draw: float | None
    """The network's draw probability of the position after the move (WDL value heads only;
    None without one, or when the move is unvisited, terminal or proven)."""
    pv: list[chess.Move]
    """The move, then the most visited replies below it."""


class SearchTarget(NamedTuple):
    """What self-play keeps of a search (``tree.training_target()``): the part of ``SearchResult`` a
    training record and the resignation rule read, without the moves and lines."""

    indices: np.ndarray
    """``SearchResult.target_indices``."""
    probs: np.ndarray
    """``SearchResult.target_probs``."""
    value: float
    """``SearchResult.value``."""
    q: np.ndarray
    """``SearchResult.q``."""


TARGET_FIELDS: dict[str, str] = {
    "indices": "target_indices",
    "probs": "target_probs",
    "value": "value",
    "q": "q",
}
"""Each ``SearchTarget`` field by the ``SearchResult`` field it copies: the native tree builds
its target from the core's result by these names (tests/test_search_seam.py holds them to
both tuples)."""


class SearchResult(NamedTuple):
    """One search's outcome (``NativeTree.result()``, ``search(...)``): what every caller reads
    after a search, in one value. Arrays are indexed like ``moves``; values are from the root's
    side to move, in [-1, 1]. A root that was never searched (or has no moves) has empty
    arrays, no best move and no PV."""

    moves: list[chess.Move]
    """The root's legal moves."""
    visits: np.ndarray
    """Visits of each move, those kept from earlier searches (tree reuse) included."""
    q: np.ndarray
    """Mean value of each move (NaN where unvisited; exactly +-1 where proven)."""
    policy: np.ndarray
    """The search policy: the visit distribution, or Gumbel's improved policy."""
    target_indices: np.ndarray
    """The policy as a training target: 4672-indices (side to move's view) of the moves with
    probability > 0 (int64) ..."""
    target_probs: np.ndarray
    """... and their probabilities (float32, summing to 1)."""
    value: float
    """The root's value (a proven root: exactly +-1)."""
    best_move: chess.Move | None
    """The move to play: the fastest proven win, else Gumbel's choice or the most visited move
    (ties: higher Q); never a proven loss while anything else exists."""
    pv: list[chess.Move]
    """Principal variation: the best move, then the most visited replies down the tree."""
    mate_in: int | None
    """Plies to mate when the root is proven: positive = the side to move mates, negative = it
    is mated."""
    nodes: int
    """Simulations through the root, reused ones and the root's own evaluation included."""
    depth: int
    """Deepest leaf reached by this search."""
    simulations: int
    """Simulations this search started."""
    lines: list[RootLine]
    """The root's best moves as lines, best first: ``best_move``'s, then proven wins, then by
    visits (ties: higher Q), proven losses last; as many as ``NativeTree.result(lines=k)`` asked
    for (default 1), and only moves this search was allowed to search."""
