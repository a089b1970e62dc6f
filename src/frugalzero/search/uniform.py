"""Evaluators without a network: uniform priors and a fixed value.

They make the search's own behaviour testable (with uniform priors, only the rules and the
tree statistics decide), and give a baseline player for debugging.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np

from frugalzero.chess.history import NetInput, net_input_from_board
from frugalzero.search.types import Evaluation


class _Done:
    def __init__(self, results: list[Evaluation]) -> None:
        self._results = results

    def result(self) -> list[Evaluation]:
        return self._results


class UniformEvaluator:
    """Priors uniform over the legal moves and the same value everywhere (default 0)."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value
        self.positions = 0
        self.batches = 0

    def submit(self, positions: Sequence[NetInput | chess.Board]) -> _Done:
        inputs = [p if isinstance(p, NetInput) else net_input_from_board(p) for p in positions]
        self.positions += len(inputs)
        self.batches += 1
        return _Done(
            [
                Evaluation(np.full(len(i.moves), 1.0 / max(len(i.moves), 1)), self.value)
                for i in inputs
            ]
        )

    def evaluate(self, positions: Sequence[NetInput | chess.Board]) -> list[Evaluation]:
        return self.submit(positions).result()

    def close(self) -> None:
        pass
