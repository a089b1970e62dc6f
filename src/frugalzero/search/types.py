"""What goes into a search and what comes out of it, without the network.

The search never imports torch: ``frugalzero.nn.evaluator.Evaluator`` (or anything else with
``submit``) produces ``Evaluation``s, and the search consumes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

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
