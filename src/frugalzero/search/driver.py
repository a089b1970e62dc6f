"""Running searches against an evaluator: one tree, or many trees sharing batches.

With the process backend the network runs in another process, so the caller should always have
a batch in flight while it works. The driver splits its trees into ``groups`` (2 by default):
it collects group A's evaluations, expands and backs them up, walks A's trees down to new leaves
and submits them, then does the same for B while A's batch is being evaluated, and so on. The
network waits only when the search is the slower one.

Both search cores run here. Native trees (``frugalzero.search.native``) are walked and fed in
one call per batch for all of a group's trees, their leaves as NumPy rows; the Python reference
(``frugalzero.search.tree``) hands out leaf nodes one by one, as it always did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import chess

from frugalzero import _native
from frugalzero.chess.history import GameHistory
from frugalzero.chess.native import game_root, refusal
from frugalzero.runtime.collector import PausedGC
from frugalzero.search.config import SearchConfig
from frugalzero.search.native import NativeTree, rows_for
from frugalzero.search.tree import Node, SearchTree
from frugalzero.search.types import Evaluates, SearchResult

Tree = SearchTree | NativeTree


def new_tree(
    history=None,
    config: SearchConfig | None = None,
    rng=None,
    seed: int | None = None,
) -> Tree:
    """A search tree on the core ``config.core`` names: native (the default) or the Python
    reference, which also takes the positions the native core refuses (python-chess accepts
    them but calls them invalid: two kings a side, a king in check on the wrong move, ...)."""
    config = config or SearchConfig()
    if config.core == "native":
        board = history.board if isinstance(history, GameHistory) else history
        if board is None or refusal(game_root(board)) is None:
            return NativeTree(history, config, rng=rng, seed=seed)
    return SearchTree(history, config, rng=rng, seed=seed)


def tree_for(tree: Tree | None, game, config: SearchConfig, rng=None) -> Tree:
    """``tree`` brought to ``game`` (the subtree of the position reached kept when ``game``
    continues the tree's, ``follow``), or a new tree when there is none, or when its core
    cannot take the game's position."""
    if tree is not None:
        try:
            tree.follow(game)
            return tree
        except ValueError:  # a position the native core refuses
            pass
    return new_tree(game, config, rng=rng)


class SearchTask(Protocol):
    """A slot of the driver: its current tree, and what to do when that tree's search is done
    (play the move and start the next search, start a new game, ...). Returning False retires
    the slot."""

    tree: Tree

    def on_search_done(self) -> bool: ...


class _OneSearch:
    def __init__(self, tree: Tree) -> None:
        self.tree = tree

    def on_search_done(self) -> bool:
        return False


def search(
    tree: Tree,
    evaluator: Evaluates,
    simulations: int | None = None,
    stop: Callable[[], bool] | None = None,
    in_flight: int = 2,
    on_batch: Callable[[Tree], None] | None = None,
    moves: list[chess.Move] | None = None,
) -> SearchResult:
    """Run one search on one tree: ``simulations`` (None = the config's; 0 = until ``stop``
    returns True), keeping up to ``in_flight`` batches of ``leaves_per_gather`` leaves in
    flight (virtual loss keeps them apart). ``on_batch`` is called after each applied batch
    (progress output, time checks); ``moves`` restricts the root (``SearchTree.start``)."""
    tree.start(simulations, moves)
    loop = _native_search_loop if isinstance(tree, NativeTree) else _search_loop
    with PausedGC() as paused:
        loop(tree, evaluator, stop, in_flight, on_batch, paused)
    return tree.result()


def _native_search_loop(tree, evaluator, stop, in_flight, on_batch, paused: PausedGC) -> None:
    """``_search_loop`` for a native tree: the same schedule, a LeafBatch per gather."""
    rows = rows_for(evaluator)
    cores = [tree.core]
    queue: deque = deque()
    free = [_native.LeafBatch() for _ in range(in_flight + 1)]  # reused: no allocation a batch
    while True:
        paused.tick()
        stopping = stop is not None and stop()
        gathered = 0
        if not stopping:
            batch = free.pop()
            batch.clear()
            gathered = _native.gather_trees(cores, batch, rows.cache)
            if gathered:
                queue.append((rows.submit(batch), batch))
            else:
                free.append(batch)
        if not queue:
            if stopping or tree.finished:
                return
            continue
        if len(queue) >= in_flight or stopping or not gathered:
            handle, batch = queue.popleft()
            rows.apply(handle, cores, batch)
            free.append(batch)
            if on_batch is not None:
                on_batch(tree)


def _search_loop(tree, evaluator, stop, in_flight, on_batch, paused: PausedGC) -> None:
    queue: deque = deque()
    while True:
        paused.tick()
        stopping = stop is not None and stop()
        leaves: list[Node] = []
        if not stopping:
            leaves = tree.gather()
            if leaves:
                queue.append((evaluator.submit([leaf.inp for leaf in leaves]), leaves))
        if not queue:
            if stopping or tree.finished:
                return
            continue
        if len(queue) >= in_flight or stopping or not leaves:
            handle, batch = queue.popleft()
            for node, evaluation in zip(batch, handle.result()):
                tree.apply(node, evaluation)
            if on_batch is not None:
                on_batch(tree)


def search_many(
    trees: Sequence[Tree],
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
        native = [t for t in tasks if isinstance(t.tree, NativeTree)]
        python = [t for t in tasks if not isinstance(t.tree, NativeTree)]
        with PausedGC() as paused:
            if native:
                self._run_native(native, stop, paused)
            if python:  # positions the native core refuses: searched after, on the reference
                self._run(python, stop, paused)

    def _run_native(self, tasks, stop, paused: PausedGC) -> None:
        """``_run`` for native trees: per group, one call finds the finished searches, one
        gathers every tree's leaves into a LeafBatch, one applies the batch's evaluations."""
        count = min(self.groups, max(1, len(tasks)))
        groups = [list(tasks[g::count]) for g in range(count)]
        pending: list[tuple[object, list, _native.LeafBatch] | None] = [None] * count
        batches = [_native.LeafBatch() for _ in range(count)]  # one a group, reused
        rows = rows_for(self.evaluator)
        while True:
            paused.tick()
            stopping = stop is not None and stop()
            for g in range(count):
                slot = pending[g]
                if slot is not None:
                    pending[g] = None
                    rows.apply(*slot)
                if stopping:
                    continue
                group = groups[g]
                cores = [task.tree.core for task in group]
                done = _native.finished_trees(cores)
                while done:  # play the moves, start the next searches, retire finished games
                    retired = set()
                    for i in done:
                        if group[i].on_search_done():
                            cores[i] = group[i].tree.core
                        else:
                            retired.add(i)
                    if retired:
                        group = [t for i, t in enumerate(group) if i not in retired]
                        cores = [c for i, c in enumerate(cores) if i not in retired]
                    done = _native.finished_trees(cores)
                groups[g] = group
                batch = batches[g]
                batch.clear()
                if _native.gather_trees(cores, batch, rows.cache):
                    pending[g] = (rows.submit(batch), cores, batch)
                    self.batches += 1
                    self.leaves += batch.leaves
            if all(p is None for p in pending) and (stopping or not any(groups)):
                return

    def _run(self, tasks, stop, paused: PausedGC) -> None:
        count = min(self.groups, max(1, len(tasks)))
        groups = [list(tasks[g::count]) for g in range(count)]
        pending: list[tuple[object, list[tuple[SearchTree, Node]]] | None] = [None] * count
        evaluator = self.evaluator
        while True:
            paused.tick()
            stopping = stop is not None and stop()
            for g in range(count):
                slot = pending[g]
                if slot is not None:
                    pending[g] = None
                    handle, leaves = slot
                    for (tree, node), evaluation in zip(leaves, handle.result()):  # type: ignore[attr-defined]
                        tree.apply(node, evaluation)
                if stopping:
                    continue
                inputs = []
                leaves = []
                alive = []
                for task in groups[g]:
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
                groups[g] = alive
                if inputs:
                    pending[g] = (evaluator.submit(inputs), leaves)
                    self.batches += 1
                    self.leaves += len(inputs)
            if all(p is None for p in pending) and (stopping or not any(groups)):
                return
