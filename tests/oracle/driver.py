"""The oracle's driver: ``SearchTree`` searches against an evaluator, leaf by leaf.

It schedules gathers and batches exactly as ``frugalzero.search.driver`` schedules native trees
(the same loop for one search with ``in_flight`` batches, the same alternating groups for many
tasks): virtual loss makes a tree's walks depend on which leaves are still out, so the oracle
must keep the same ones out to grow the same tree. Its leaves go to the evaluator as
``NetInput``s, one ``Evaluation`` applied per leaf.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import NamedTuple

import chess

from frugalzero.runtime.collector import PausedGC
from frugalzero.search.config import SearchConfig
from frugalzero.search.types import Evaluates, SearchResult
from oracle.tree import SearchTree


def new_tree(history=None, config: SearchConfig | None = None, rng=None, seed=None) -> SearchTree:
    """The oracle's tree, with ``frugalzero.search.new_tree``'s signature."""
    return SearchTree(history, config or SearchConfig(), rng=rng, seed=seed)


class _OneSearch:
    def __init__(self, tree: SearchTree) -> None:
        self.tree = tree

    def on_search_done(self) -> bool:
        return False


class _Pending(NamedTuple):
    handle: object
    leaves: list


def _gather(tasks: list, evaluator: Evaluates) -> tuple[list, _Pending | None]:
    """Play the tasks whose search is done (False from ``on_search_done`` retires one), walk
    every tree to its new leaves and submit them as one batch: (the tasks still alive, the
    batch or None)."""
    inputs, leaves, alive = [], [], []
    for task in tasks:
        tree = task.tree
        retired = False
        while tree.finished:
            if not task.on_search_done():
                retired = True
                break
            tree = task.tree
        if retired:
            continue
        alive.append(task)
        for node in tree.gather():
            inputs.append(node.inp)
            leaves.append((tree, node))
    if not inputs:
        return alive, None
    return alive, _Pending(evaluator.submit(inputs), leaves)


def _apply(pending: _Pending) -> None:
    for (tree, node), evaluation in zip(pending.leaves, pending.handle.result()):  # type: ignore[attr-defined]
        tree.apply(node, evaluation)


def search(
    tree: SearchTree,
    evaluator: Evaluates,
    simulations: int | None = None,
    stop: Callable[[], bool] | None = None,
    in_flight: int = 2,
    on_batch: Callable[[SearchTree], None] | None = None,
    moves: list[chess.Move] | None = None,
) -> SearchResult:
    """``frugalzero.search.search`` on the oracle's tree."""
    tree.start(simulations, moves)
    tasks: list = [_OneSearch(tree)]
    queue: deque[_Pending] = deque()
    with PausedGC() as paused:
        while True:
            paused.tick()
            stopping = stop is not None and stop()
            pending = None
            if not stopping and tasks:
                tasks, pending = _gather(tasks, evaluator)
                if pending is not None:
                    queue.append(pending)
            if not queue:
                if stopping or not tasks:
                    break
                if on_batch is not None:
                    on_batch(tree)
                continue
            if len(queue) >= in_flight or stopping or pending is None:
                _apply(queue.popleft())
                if on_batch is not None:
                    on_batch(tree)
    return tree.result()


def search_many(
    trees: Sequence[SearchTree],
    evaluator: Evaluates,
    simulations: int | None = None,
    stop: Callable[[], bool] | None = None,
    groups: int = 2,
) -> list[SearchResult]:
    """``frugalzero.search.search_many`` on the oracle's trees."""
    for tree in trees:
        tree.start(simulations)
    Driver(evaluator, groups).run([_OneSearch(tree) for tree in trees], stop)
    return [tree.result() for tree in trees]


class Driver:
    """``frugalzero.search.Driver`` for tasks whose trees are the oracle's."""

    def __init__(self, evaluator: Evaluates, groups: int = 2) -> None:
        self.evaluator = evaluator
        self.groups = max(1, groups)
        self.batches = 0
        self.leaves = 0

    def run(self, tasks: Sequence, stop: Callable[[], bool] | None = None) -> None:
        if not tasks:
            return
        count = min(self.groups, len(tasks))
        groups = [list(tasks[g::count]) for g in range(count)]
        pending: list[_Pending | None] = [None] * count
        with PausedGC() as paused:
            while True:
                paused.tick()
                stopping = stop is not None and stop()
                for g in range(count):
                    slot = pending[g]
                    if slot is not None:
                        pending[g] = None
                        _apply(slot)
                    if stopping:
                        continue
                    groups[g], slot = _gather(groups[g], self.evaluator)
                    if slot is not None:
                        pending[g] = slot
                        self.batches += 1
                        self.leaves += len(slot.leaves)
                if all(p is None for p in pending) and (stopping or not any(groups)):
                    return
