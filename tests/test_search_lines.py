"""The root's moves as lines (UCI's MultiPV) and searches restricted to some root moves."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from frugalzero.search import (
    Evaluation,
    NativeTree,
    SearchConfig,
    UniformEvaluator,
    new_tree,
    search,
)
from frugalzero.search.uniform import HashEvaluator

E4, D4 = chess.Move.from_uci("e2e4"), chess.Move.from_uci("d2d4")


def _tree(board: chess.Board | None = None, **settings) -> NativeTree:
    config = SearchConfig(leaves_per_gather=4, **settings).for_play()
    return new_tree(board or chess.Board(), config, seed=0)


def _visited(result) -> set[chess.Move]:
    return {m for m, n in zip(result.moves, result.visits) if n > 0}


@pytest.mark.parametrize("gumbel", [False, True])
def test_a_restricted_search_visits_only_its_moves(gumbel):
    tree = _tree(gumbel=gumbel)
    result = search(tree, HashEvaluator(), 128, moves=[E4, D4])
    assert _visited(result) == {E4, D4} and result.best_move in (E4, D4)
    assert result.visits.sum() == 128  # every simulation went there
    assert {line.move for line in tree.result(lines=10).lines} == {E4, D4}
    result = search(tree, HashEvaluator(), 128)  # the next search is not restricted
    assert len(_visited(result)) > 2 and len(tree.result(lines=10).lines) == 10


def test_a_restricted_search_on_a_kept_tree_spends_nothing_on_the_others():
    tree = _tree()
    before = search(tree, HashEvaluator(), 200).visits
    after = search(tree, HashEvaluator(), 100, moves=[E4, D4]).visits
    others = [i for i, m in enumerate(tree.result().moves) if m not in (E4, D4)]
    assert np.array_equal(before[others], after[others])
    assert after.sum() - before.sum() == 100


def test_a_restricted_search_ends_when_every_allowed_move_is_lost():
    board = chess.Board()
    board.push_uci("f2f3")
    board.push_uci("e7e5")  # g4 now loses to Qh4 mate
    g4 = chess.Move.from_uci("g2g4")
    result = search(_tree(board), UniformEvaluator(), 100_000, moves=[g4])
    assert result.simulations < 1000 and _visited(result) == {g4} and result.best_move == g4
    (line,) = result.lines
    assert line.mate_in == -2 and line.q == -1.0  # mated after it, two plies on
    assert [m.uci() for m in line.pv] == ["g2g4", "d8h4"]


def test_lines_are_the_best_moves_each_with_its_own_q_and_pv():
    tree = _tree()
    result = search(tree, HashEvaluator(), 300)
    lines = tree.result(lines=4).lines
    assert len({line.move for line in lines}) == 4
    assert lines[0].move == result.best_move and lines[0].pv == result.pv
    assert [line.visits for line in lines] == sorted((line.visits for line in lines), reverse=True)
    for line in lines:
        slot = result.moves.index(line.move)
        assert line.visits == result.visits[slot] and line.q == result.q[slot]
        assert line.pv[0] == line.move and line.mate_in is None
        board = chess.Board()
        for move in line.pv:
            assert move in board.legal_moves
            board.push(move)
    assert result.lines == lines[:1]  # one line unless asked


def test_a_mating_line_carries_its_mate():
    tree = _tree(chess.Board("6k1/8/6K1/8/8/8/8/R7 w - - 0 1"))
    result = search(tree, UniformEvaluator(), 200)
    best = result.lines[0]
    assert best.move.uci() == "a1a8" and best.mate_in == 1 and best.q == 1.0
    assert best.draw is None


class _WdlEvaluator(UniformEvaluator):
    """Uniform priors with a WDL head's answer: 20% wins, 50% draws, 30% losses."""

    def evaluation(self, inp):
        plain = super().evaluation(inp)
        return Evaluation(plain.priors, -0.1, np.array([0.2, 0.5, 0.3]))


def test_a_line_has_the_networks_draw_probability_when_it_has_a_wdl_head():
    tree = _tree()
    search(tree, _WdlEvaluator(), 64)
    lines = tree.result(lines=3).lines
    assert len(lines) == 3 and [line.draw for line in lines] == [0.5] * 3
    tree = _tree()
    search(tree, UniformEvaluator(), 64)
    lines = tree.result(lines=3).lines
    assert len(lines) == 3 and [line.draw for line in lines] == [None] * 3


def test_unvisited_moves_are_the_last_lines():
    tree = _tree()
    result = search(tree, HashEvaluator(), 8)
    lines = tree.result(lines=len(result.moves)).lines
    assert {line.move for line in lines} == set(result.moves)
    unvisited = [line for line in lines if line.visits == 0]
    assert unvisited and all(math.isnan(line.q) and line.pv == [line.move] for line in unvisited)
    assert lines[-len(unvisited) :] == unvisited
