"""Gumbel root search: the maths, and a working search at 8-16 simulations."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from frugalzero.chess.moves import legal_mask
from frugalzero.chess.positions import random_boards
from frugalzero.search import Evaluation, SearchConfig, UniformEvaluator, new_tree, search
from frugalzero.search import gumbel as gm
from frugalzero.search.uniform import HashEvaluator, Ready


def test_sequential_halving_schedule() -> None:
    # 16 actions, 64 simulations: 16 x 1, 8 x 2, 4 x 4, 2 x 8 visits (phases of 16 each)
    seq = gm.considered_visits(16, 64)
    assert len(seq) == 64
    assert seq[:16] == [0] * 16
    assert seq[16:32] == [1] * 8 + [2] * 8
    assert seq[32:48] == [3] * 4 + [4] * 4 + [5] * 4 + [6] * 4
    assert seq[48:] == [n for n in range(7, 15) for _ in range(2)]
    # a budget below m still visits distinct actions first
    assert gm.considered_visits(16, 8) == [0] * 8
    assert gm.considered_visits(1, 5) == [0, 1, 2, 3, 4]
    for m, n in ((4, 16), (16, 200), (3, 7)):
        assert len(gm.considered_visits(m, n)) == n


def test_completed_q_sigma_and_improved_policy() -> None:
    priors = np.array([0.5, 0.3, 0.2])
    visits = np.array([2.0, 1.0, 0.0])
    q = np.array([0.2, -0.4, 0.0])
    v_mix = gm.mixed_value(0.1, priors, visits, q)
    weighted = (0.5 * 0.2 + 0.3 * -0.4) / 0.8
    assert v_mix == pytest.approx((0.1 + 3 * weighted) / 4)
    completed = gm.completed_q(0.1, priors, visits, q, rescale=False)
    assert completed == pytest.approx([(0.2 + 1) / 2, (-0.4 + 1) / 2, (v_mix + 1) / 2])
    rescaled = gm.completed_q(0.1, priors, visits, q, rescale=True)
    assert rescaled.min() == 0.0 and rescaled.max() == pytest.approx(1.0)
    assert gm.sigma(np.array([0.5]), 10, 50.0, 1.0)[0] == pytest.approx(30.0)
    logits = gm.logits_from_priors(priors)
    pi = gm.improved_policy(logits, 0.1, priors, visits, q, 50.0, 1.0)
    sig = (50 + 2) * completed
    expected = np.exp(logits + sig) / np.exp(logits + sig).sum()
    assert pi == pytest.approx(expected)
    assert gm.mixed_value(0.3, priors, np.zeros(3), q) == 0.3  # nothing visited: the net value
    # the interior rule visits where pi' exceeds the visit share, never a blocked move
    share = pi - visits / (1 + visits.sum())
    assert gm.interior_select(pi, visits) == int(np.argmax(share))
    block = np.zeros(3)
    block[int(np.argmax(share))] = -np.inf
    assert gm.interior_select(pi, visits, block) == int(np.argmax(share + block))


@pytest.mark.parametrize("sims", [8, 16])
def test_gumbel_search_returns_legal_move_and_normalised_policy(sims: int) -> None:
    for i, board in enumerate(random_boards(8, seed=21, max_plies=60)):
        tree = new_tree(board, SearchConfig(gumbel=True), seed=i)
        result = search(tree, HashEvaluator(), sims)
        assert result.simulations == sims or result.mate_in is not None
        assert result.best_move in set(board.legal_moves)
        assert tree.choose_move(0) == result.best_move
        assert set(result.moves) == set(board.legal_moves)
        policy = result.policy
        assert policy.sum() == pytest.approx(1.0) and (policy >= 0).all()
        assert legal_mask(board)[result.target_indices].all()
        assert result.target_probs.sum() == pytest.approx(1.0)
        # at most m root actions were searched; the target covers every legal move
        assert (result.visits > 0).sum() <= min(16, sims)
        assert len(result.target_indices) == len(result.moves)


class _KnightF3Evaluator:
    """Uniform priors; White is winning (0.9) whenever a white knight stands on f3."""

    def submit(self, inputs):
        out = []
        for inp in inputs:
            white_knights = int.from_bytes(inp.frames[8:16], "little")  # frame word 1
            white = inp.meta[0] == 1
            value = 0.0
            if white_knights & chess.BB_F3:
                value = 0.9 if white else -0.9
            out.append(Evaluation(np.full(len(inp.moves), 1 / len(inp.moves)), value))
        return Ready(out)


def test_gumbel_finds_and_targets_the_better_move() -> None:
    board = chess.Board()
    good = chess.Move.from_uci("g1f3")
    evaluator = _KnightF3Evaluator()
    # without noise all 20 moves tie on logits; m = 20 considers all of them
    tree = new_tree(board, SearchConfig(gumbel=True, gumbel_m=20, gumbel_noise=False), seed=0)
    result = search(tree, evaluator, 40)
    assert result.best_move == good
    assert result.moves[int(np.argmax(result.policy))] == good
    assert result.policy[result.moves.index(good)] > 0.9


def test_gumbel_noise_is_seeded_and_varies() -> None:
    board = chess.Board()
    picks = set()
    for seed in range(12):
        first = new_tree(board, SearchConfig(gumbel=True), seed=seed)
        second = new_tree(board, SearchConfig(gumbel=True), seed=seed)
        move = search(first, UniformEvaluator(), 16).best_move
        assert search(second, UniformEvaluator(), 16).best_move == move
        picks.add(move)
    assert len(picks) > 3  # uniform priors and values: Gumbel noise decides, differently per seed


def test_gumbel_plays_a_mate_it_sees() -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # 20 moves, all considered
    tree = new_tree(board, SearchConfig(gumbel=True, gumbel_m=32), seed=0)
    result = search(tree, UniformEvaluator(), 32)
    assert result.mate_in == 1 and result.simulations <= 20
    after = board.copy()
    after.push(result.best_move)
    assert after.is_checkmate()
