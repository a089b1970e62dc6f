"""Running searches against an evaluator: one tree, or many trees sharing batches.

With the process backend the network runs in another process, so the caller should always have
a batch in flight while it works. The driver splits its trees into ``groups`` (2 by default):
it collects group A's evaluations, expands and backs them up, walks A's trees down to new leaves
and submits them, then does the same for B while A's batch is being evaluated, and so on. The
network waits only when the search is the slower one.

The trees are native (``frugalzero.search.native``): a group's trees are walked and fed in one
call per batch, their leaves as NumPy rows. There is one search; a position the core refuses is
an ``UnsupportedPosition`` from ``new_tree`` (or ``tree_for``), never a quiet switch to
something else.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import chess

from frugalzero import _native
from frugalzero.runtime.collector import PausedGC
from frugalzero.search.config import SearchConfig
from frugalzero.search.native import NativeTree, rows_for
from frugalzero.search.types import Evaluates, SearchResult


def new_tree(
    history=None,
    config: SearchConfig | None = None,
    rng=None,
    seed: int | None = None,
) -> NativeTree:
    """A search tree for one game (a ``GameHistory``, or a board with its move stack; None: the
    start position); ``UnsupportedPosition`` (a one-line UserError) for a position the native
    core refuses (python-chess calls it invalid: two kings a side, a king in check on the
    wrong move, ...)."""
    return NativeTree(history, config or SearchConfig(), rng=rng, seed=seed)


def tree_for(tree: NativeTree | None, game, config: SearchConfig, rng=None) -> NativeTree:
    """``tree`` brought to ``game`` (the subtree of the position reached kept when ``game``
    continues the tree's, ``follow``), or a new tree when there is none. A game the core
    refuses raises ``UnsupportedPosition`` and leaves ``tree`` as it was."""
    if tree is None:
        return new_tree(game, config, rng=rng)
    tree.follow(game)
    return tree


class SearchTask(Protocol):
    """A slot of the driver: its current tree, and what to do when that tree's search is done
    (play the move and start the next search, start a new game, ...). Returning False retires
    the slot."""

    tree: NativeTree

    def on_search_done(self) -> bool: ...


class _OneSearch:
    def __init__(self, tree: NativeTree) -> None:
        self.tree = tree

    def on_search_done(self) -> bool:
        return False


def search(
    tree: NativeTree,
    evaluator: Evaluates,
    simulations: int | None = None,
    stop: Callable[[], bool] | None = None,
    in_flight: int = 2,
    on_batch: Callable[[NativeTree], None] | None = None,
    moves: list[chess.Move] | None = None,
) -> SearchResult:
    """Run one search on one tree: ``simulations`` (None = the config's; 0 = until ``stop``
    returns True), keeping up to ``in_flight`` batches of ``leaves_per_gather`` leaves in
    flight (virtual loss keeps them apart). ``on_batch`` is called after each applied batch, and
    after each gather that needed no network (progress output, time checks); ``moves``
    restricts the root (``NativeTree.start``)."""
    tree.start(simulations, moves)
    batches = _Batches(evaluator)
    group = _Group([_OneSearch(tree)])
    queue: deque[_Pending] = deque()
    with PausedGC() as paused:
        while True:
            paused.tick()
            stopping = stop is not None and stop()
            pending = None
            if not stopping and group.tasks:
                pending = batches.gather(group)
                if pending is not None:
                    queue.append(pending)
            if not queue:
                if stopping or not group.tasks:
                    break
                if on_batch is not None:  # walks that needed no network (terminals) count too
                    on_batch(tree)
                continue
            if len(queue) >= in_flight or stopping or pending is None:
                batches.apply(queue.popleft())
                if on_batch is not None:
                    on_batch(tree)
    return tree.result()


def search_many(
    trees: Sequence[NativeTree],
    evaluator: Evaluates,
    simulations: int | None = None,
    stop: Callable[[], bool] | None = None,
    groups: int = 2,
) -> list[SearchResult]:
    """One search on each of many trees, their leaves batched together."""
    for tree in trees:
        tree.start(simulations)
    Driver(evaluator, groups).run([_OneSearch(tree) for tree in trees], stop)
    return [tree.result() for tree in trees]


class Driver:
    """Runs many search tasks against one evaluator, gathering their leaves into batches."""

    def __init__(self, evaluator: Evaluates, groups: int = 2) -> None:
        self.evaluator = evaluator
        self.groups = max(1, groups)
        self.batches = 0
        self.leaves = 0

    def run(self, tasks: Sequence[SearchTask], stop: Callable[[], bool] | None = None) -> None:
        """Until every task retires (or ``stop()`` turns True: then the batches in flight are
        applied and the trees keep their unfinished searches, to be resumed by another run)."""
        if not tasks:
            return
        with PausedGC() as paused:
            self._run(tasks, stop, paused, _Batches(self.evaluator))

    def _run(self, tasks, stop, paused: PausedGC, batches: _Batches) -> None:
        count = min(self.groups, max(1, len(tasks)))
        groups = [_Group(list(tasks[g::count])) for g in range(count)]
        pending: list[_Pending | None] = [None] * count
        while True:
            paused.tick()
            stopping = stop is not None and stop()
            for g in range(count):
                slot = pending[g]
                if slot is not None:
                    pending[g] = None
                    batches.apply(slot)
                if stopping:
                    continue
                slot = batches.gather(groups[g])
                if slot is not None:
                    pending[g] = slot
                    self.batches += 1
                    self.leaves += slot.leaves
            if all(p is None for p in pending) and (stopping or not any(g.tasks for g in groups)):
                return


# -- batches: how the trees are walked, evaluated and backed up ---------------------------------


class _Group:
    """Tasks whose leaves share a batch; ``cores`` (the native trees of the tasks, in order) is
    kept between batches, since a task's tree changes only when its search is done."""

    def __init__(self, tasks: list[SearchTask]) -> None:
        self.tasks = tasks
        self.cores: list | None = None


class _Pending(NamedTuple):
    """A batch submitted to the evaluator, and what its evaluations go back to."""

    handle: object
    targets: object
    leaves: int


class _Batches:
    """One call finds the finished searches, one gathers every tree's leaves into a LeafBatch
    (reused: no allocation a batch), one applies the batch's evaluations."""

    def __init__(self, evaluator: Evaluates) -> None:
        self.rows = rows_for(evaluator)
        self._free: list[_native.LeafBatch] = []

    def gather(self, group: _Group) -> _Pending | None:
        """Play the group's tasks whose search is done (``on_search_done``; False retires a
        task, which leaves ``group.tasks``), walk every tree to its new leaves and submit them
        as one batch: the batch in flight, or None when there was no leaf."""
        tasks, cores = group.tasks, group.cores
        if cores is None:
            cores = [task.tree.core for task in tasks]
        done = _native.finished_trees(cores)
        while done:  # play the moves, start the next searches, retire finished games
            cores = list(cores)  # a batch in flight keeps the list it was gathered with
            retired = set()
            for i in done:
                if tasks[i].on_search_done():
                    cores[i] = tasks[i].tree.core
                else:
                    retired.add(i)
            if retired:
                tasks = [t for i, t in enumerate(tasks) if i not in retired]
                cores = [c for i, c in enumerate(cores) if i not in retired]
            done = _native.finished_trees(cores)
        group.tasks, group.cores = tasks, cores
        batch = self._free.pop() if self._free else _native.LeafBatch()
        batch.clear()
        if not _native.gather_trees(cores, batch, self.rows.cache):
            self._free.append(batch)
            return None
        return _Pending(self.rows.submit(batch), (cores, batch), batch.leaves)

    def apply(self, pending: _Pending) -> None:
        """Back a batch's evaluations up its trees."""
        cores, batch = pending.targets  # type: ignore[misc]
        self.rows.apply(pending.handle, cores, batch)
        self._free.append(batch)
