"""The native search tree's memory limit (what the UCI engine's ``RamLimitMb`` sets): a search
that would take the tree's arenas past it stops making nodes and finishes with what it has."""

from __future__ import annotations

import time

import chess

from frugalzero.search import NativeTree, SearchConfig, new_tree, search
from frugalzero.search.uniform import HashEvaluator

MB = 1 << 20


def _until(seconds: float):
    """A stop for a search that should end by itself: True only after ``seconds``."""
    end = time.monotonic() + seconds
    return lambda: time.monotonic() > end


def test_a_memory_limit_stops_an_unbounded_search_inside_it():
    tree = new_tree(chess.Board(), SearchConfig().for_play(), seed=1)
    assert isinstance(tree, NativeTree)
    tree.set_memory_limit(2 * MB)
    started = time.monotonic()
    result = search(tree, HashEvaluator(), 0, stop=_until(120))  # 0: until stopped
    assert time.monotonic() - started < 120  # it ended by itself, at the limit
    assert tree.memory_full and tree.memory_bytes <= 2 * MB
    nodes = tree.core.node_count
    assert result.nodes > 500 and nodes > 500
    assert 64 < tree.memory_bytes / nodes < 16_000  # what a node really costs, arenas and all
    # the next search on the full tree answers at once with the tree it has
    again = search(tree, HashEvaluator(), 0, stop=_until(120))
    assert again.nodes >= result.nodes and tree.memory_bytes <= 2 * MB


def test_a_full_tree_makes_room_when_the_game_moves_on():
    """The played move's subtree is kept (copied into fresh arenas when it fits, else the tree
    starts afresh): the next search grows again, still inside the limit."""
    tree = new_tree(chess.Board(), SearchConfig().for_play(), seed=2)
    tree.set_memory_limit(2 * MB)
    first = search(tree, HashEvaluator(), 0, stop=_until(120))
    assert tree.memory_full
    tree.advance(first.best_move)
    kept = tree.result().nodes
    second = search(tree, HashEvaluator(), 0, stop=_until(120))
    assert tree.memory_full and tree.memory_bytes <= 2 * MB
    assert second.nodes > kept  # it searched on, not stuck full of the old subtrees


def test_without_a_limit_the_search_is_untouched():
    tree = new_tree(chess.Board(), SearchConfig().for_play(), seed=3)
    result = search(tree, HashEvaluator(), 3000)
    assert not tree.memory_full and result.simulations == 3000
    assert tree.memory_bytes > 0
