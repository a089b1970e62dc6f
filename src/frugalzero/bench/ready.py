"""The network's answers without the wait: what the search itself costs a simulation.

On a CPU the search spends most of its time waiting for the network, and on a machine shared
with others (a cloud VM) a tree left alone for the ~10 ms of a forward pass is out of the CPU's
caches when its next walk comes: the same walks then cost up to twice the CPU (measured on
the 2-core machine with instant answers and a 10 ms pause a batch, spent asleep or spinning:
2.4 against 4.2-4.6 us a simulation in the native gather alone). Where the network is fast (a
GPU) nothing waits, and the search's own CPU is what bounds self-play. ``ReadyNet`` answers
every batch at once with the bench's own network's outputs, taken beforehand on random
positions (the logits of all 4,672 moves of each, and its value), so the trees grow much as
under the network itself, and it keeps apart the CPU it spends answering, for the bench to
leave out.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from frugalzero.chess.moves import NUM_MOVES
from frugalzero.search.types import Evaluation


class _Answered:
    def __init__(self, out, owner: ReadyNet) -> None:
        self._out = out
        self._owner = owner

    def result(self):
        owner = self._owner
        if owner.pause_s > 0:  # a network that takes this long (the CPU the wait costs is kept)
            start = time.thread_time()
            time.sleep(owner.pause_s)
            owner.spent_s += time.thread_time() - start
        return self._out


class ReadyNet:
    """An evaluator with both ways in (``submit`` for the reference core, ``submit_leaves`` for
    the native one) that never waits; ``spent_s`` is this thread's CPU spent answering.
    ``pause_s`` > 0 makes every answer take that long instead (asleep), to show what the wait
    itself does to the search's CPU (``bench selfplay --ready-pause``)."""

    def __init__(
        self, net, evaluator_config, cache_size: int, positions: int = 512, pause_s: float = 0.0
    ) -> None:
        from frugalzero import _native
        from frugalzero.chess.history import net_input_from_board
        from frugalzero.chess.positions import random_boards
        from frugalzero.nn.evaluator import pack_inputs
        from frugalzero.nn.runner import NetRunner

        boards = random_boards(positions, seed=7)
        frames, meta, _, _ = pack_inputs([net_input_from_board(b) for b in boards])
        every = np.tile(np.arange(NUM_MOVES, dtype=np.int64), (positions, 1))
        counts = np.full(positions, NUM_MOVES, dtype=np.int64)
        runner = NetRunner(net, replace(evaluator_config, compile="off"), threads=1)
        logits, values, wdl = runner.run(frames, meta, every, counts, softmax=False)
        self.logits = np.ascontiguousarray(logits, dtype=np.float32)
        self.values = np.ascontiguousarray(values, dtype=np.float32)
        self.wdl = None if wdl is None else np.ascontiguousarray(wdl, dtype=np.float32)
        self.native_cache = _native.EvalCache(cache_size) if cache_size > 0 else None
        self.spent_s = 0.0
        self.pause_s = pause_s
        self._next = 0

    def _rows(self, n: int) -> np.ndarray:
        """The table rows of the next ``n`` answers (in turn)."""
        rows = (self._next + np.arange(n)) % len(self.values)
        self._next = (self._next + n) % len(self.values)
        return rows

    def submit_leaves(self, batch) -> _Answered:
        start = time.thread_time()
        width, counts = batch.width, batch.counts()
        rows = self._rows(batch.rows)
        logits = self.logits[rows[:, None], batch.indices(width).astype(np.int64)]
        logits[np.arange(width)[None, :] >= counts[:, None]] = -np.inf
        wdl = None if self.wdl is None else self.wdl[rows]
        out = _Answered((logits, self.values[rows], wdl), self)
        self.spent_s += time.thread_time() - start
        return out

    def submit(self, inputs) -> _Answered:
        start = time.thread_time()
        evaluations = []
        for row, inp in zip(self._rows(len(inputs)).tolist(), inputs):
            z = self.logits[row, inp.indices].astype(np.float64)
            priors = np.exp(z - z.max()) if len(z) else z
            wdl = None if self.wdl is None else self.wdl[row]
            evaluations.append(Evaluation(priors / priors.sum(), float(self.values[row]), wdl))
        out = _Answered(evaluations, self)
        self.spent_s += time.thread_time() - start
        return out
