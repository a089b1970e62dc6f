"""Evaluators without a network: uniform priors, or pseudo-random ones fixed per position.

They make the search's own behaviour testable and comparable: with uniform priors only the rules
and the tree statistics decide; with ``HashEvaluator`` every position gets the same answer every
time, so two searches (or a search and a reference implementation) can be compared exactly.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import chess
import numpy as np

from frugalzero.chess.history import NetInput, net_input_from_board
from frugalzero.search.types import Evaluation


class Ready:
    """A batch whose evaluations are already known (the ``Submitted`` of a network-free
    evaluator)."""

    def __init__(self, results: list[Evaluation]) -> None:
        self._results = results

    def result(self) -> list[Evaluation]:
        return self._results


class _Counting:
    """Counts positions and batches; subclasses say what each position is worth."""

    def __init__(self) -> None:
        self.positions = 0
        self.batches = 0

    def evaluation(self, inp: NetInput) -> Evaluation:
        raise NotImplementedError

    def submit(self, positions: Sequence[NetInput | chess.Board]) -> Ready:
        inputs = [p if isinstance(p, NetInput) else net_input_from_board(p) for p in positions]
        self.positions += len(inputs)
        self.batches += 1
        return Ready([self.evaluation(inp) for inp in inputs])

    def evaluate(self, positions: Sequence[NetInput | chess.Board]) -> list[Evaluation]:
        return self.submit(positions).result()

    def close(self) -> None:
        pass


class UniformEvaluator(_Counting):
    """Priors uniform over the legal moves and the same value everywhere (default 0)."""

    def __init__(self, value: float = 0.0) -> None:
        super().__init__()
        self.value = value

    def evaluation(self, inp: NetInput) -> Evaluation:
        return Evaluation(np.full(len(inp.moves), 1.0 / max(len(inp.moves), 1)), self.value)


class HashEvaluator(_Counting):
    """Dirichlet(0.5) priors and a value in [-0.6, 0.6], drawn from a generator seeded by the
    position's input (history included): uneven like a network's, and reproducible."""

    def evaluation(self, inp: NetInput) -> Evaluation:
        rng = np.random.default_rng(zlib.crc32(inp.frames + bytes(str(inp.meta), "ascii")))
        priors = rng.dirichlet(np.full(len(inp.moves), 0.5))
        return Evaluation(priors, float(rng.uniform(-0.6, 0.6)))
