"""The oracle's own internals: what makes its Python tree a sound reference, apart from the
lockstep tests that hold the native core to it (tests/test_search_native.py)."""

from __future__ import annotations

import math

import chess
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from frugalzero.search.config import SearchConfig
from frugalzero.search.puct import c_puct, puct_scores
from oracle.tree import Node, _puct_slot, _set_priors

QUIET = SearchConfig(root_noise=False)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(-3, 3), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([0.5, 1.0, 2.5]),
    st.sampled_from([-0.4, 0.0, 0.3]),
    st.booleans(),
)
def test_selection_is_the_argmax_of_the_puct_scores(edges, c_init, fpu, blocking) -> None:
    """The tree scores only the visited children and the best unvisited one; it must pick
    what scoring every child picks, ties (lowest slot) and blocked moves included, also
    when visits change between two selections at the same node."""
    weights = np.array([float(e[0]) for e in edges])
    node = Node(chess.Board(), -1)
    _set_priors(node, weights / weights.sum())
    node.N = [float(e[1]) for e in edges]
    node.Q = [e[2] / 4 if e[1] else 0.0 for e in edges]
    node.visited = [s for s, e in enumerate(edges) if e[1]][::-1]
    node.block = None
    if blocking and not all(e[3] for e in edges):
        node.block = np.array([-math.inf if e[3] else 0.0 for e in edges])
    for _ in range(2):
        n = float(sum(node.N)) + 1.0
        scores = puct_scores(node.P, np.array(node.N), np.array(node.Q), n, c_init, 1.0, fpu)
        expected = int((scores + (node.block if node.block is not None else 0.0)).argmax())
        assert _puct_slot(node, c_puct(n, c_init, 1.0) * math.sqrt(n), fpu) == expected
        if node.N[expected] == 0:  # visit it, as the tree does, and select again
            node.visited.append(expected)
        node.N[expected] += 1.0
        node.Q[expected] = 0.25
