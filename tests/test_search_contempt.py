"""search-contempt: N_scl = inf is plain PUCT to the visit; a finite N_scl samples the opponent's
moves from the frozen visit distribution."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

import oracle
from frugalzero.chess.rules import leaf_status
from frugalzero.search import SearchConfig, new_tree, search
from frugalzero.search.native import EXPANDED
from frugalzero.search.uniform import HashEvaluator

# every check here holds the search and the tests' oracle, its Python reference, alike
CORES = pytest.mark.parametrize(
    "make, run", [(new_tree, search), (oracle.new_tree, oracle.search)], ids=["native", "oracle"]
)

START = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"


class _RefNode:
    def __init__(self, board: chess.Board) -> None:
        self.board = board
        self.children: dict[int, _RefNode] = {}
        self.moves: list[chess.Move] = []
        self.P: list[float] | None = None
        self.N: list[float] = []
        self.W: list[float] = []
        self.n = 0
        self.w = 0.0
        self.visited_p = 0.0
        self.terminal: float | None = None


def reference_puct(board: chess.Board, evaluator, sims: int, cfg: SearchConfig, seed: int):
    """Textbook PUCT, one simulation at a time, written independently of the tree (same
    formulas and the same order of floating-point operations), with virtual loss applied
    on the way down and replaced on the way up."""
    rng = np.random.default_rng(seed)

    def expand(node: _RefNode) -> float:
        node.moves = list(node.board.legal_moves)
        (ev,) = evaluator.submit([_input(node.board)]).result()
        node.P = [float(p) for p in ev.priors]
        node.N = [0.0] * len(node.moves)
        node.W = [0.0] * len(node.moves)
        return ev.value

    root = _RefNode(board.copy())
    root.w = expand(root)
    root.n = 1
    if cfg.root_noise:
        noise = rng.dirichlet(np.full(len(root.P), cfg.dirichlet_alpha))
        eps = cfg.dirichlet_epsilon
        root.P = list((1.0 - eps) * np.array(root.P) + eps * noise)
    vl = cfg.virtual_loss
    for _ in range(sims):
        node, path = root, []
        while True:
            if node.terminal is not None:
                value = node.terminal
                break
            if node.P is None:
                value = expand(node)
                break
            n = node.n
            cs = (cfg.c_init + math.log((n + cfg.c_base + 1.0) / cfg.c_base)) * math.sqrt(n)
            fpu = node.w / n - cfg.fpu_value * math.sqrt(node.visited_p)
            best, best_score = 0, -math.inf
            for a, prior in enumerate(node.P):
                q = node.W[a] / node.N[a] if node.N[a] > 0 else fpu
                score = prior * cs / (node.N[a] + 1.0) + q
                if score > best_score:
                    best, best_score = a, score
            if node.N[best] == 0:
                node.visited_p += node.P[best]
            node.N[best] += 1.0
            node.W[best] = node.W[best] - vl
            node.n += 1
            path.append((node, best))
            if best not in node.children:
                child_board = node.board.copy()
                child_board.push(node.moves[best])
                child = _RefNode(child_board)
                ending, value, _ = leaf_status(child_board, 0)
                if ending is not None:
                    child.terminal = value
                node.children[best] = child
            node = node.children[best]
        node.n += 1
        node.w += value
        for parent, a in reversed(path):
            value = -value
            parent.W[a] = parent.W[a] + value + vl
            parent.w += value
    return root


def _input(board: chess.Board):
    from frugalzero.chess.history import net_input_from_board

    return net_input_from_board(board)


@pytest.mark.slow
@CORES
def test_infinite_nscl_is_plain_puct_exactly(make, run) -> None:
    board = chess.Board(START)
    for seed, noise in ((0, True), (1, False), (2, True)):
        cfg = SearchConfig(nscl=math.inf, solver=False, root_noise=noise)
        tree = make(board, cfg, seed=seed)
        result = run(tree, HashEvaluator(), 600, in_flight=1)
        ref = reference_puct(board, HashEvaluator(), 600, cfg, seed)
        assert ref.moves == result.moves
        assert result.visits.tolist() == ref.N
        for slot, child in ref.children.items():  # one level down as well
            mine = tree.root.children[slot]
            if child.P is not None:
                assert mine.N == child.N
        huge_cfg = SearchConfig(nscl=1e12, solver=False, root_noise=noise)
        huge = make(board, huge_cfg, seed=seed)
        assert np.array_equal(run(huge, HashEvaluator(), 600, in_flight=1).visits, result.visits)


def _frozen_nodes(tree):
    """(depth, node) of every expanded node of the tree."""
    stack = [(0, tree.root)]
    while stack:
        depth, node = stack.pop()
        if node.state != EXPANDED:
            continue
        yield depth, node
        stack.extend((depth + 1, c) for c in node.children if c is not None)


@CORES
def test_frozen_nodes_follow_the_frozen_distribution(make, run) -> None:
    nscl = 8
    config = SearchConfig(nscl=nscl, root_noise=False)
    tree = make(chess.Board(START), config, seed=3)
    run(tree, HashEvaluator(), 4000, in_flight=1)
    chi2 = dof = total = 0.0
    chi2_uniform = 0.0
    frozen = 0
    for depth, node in _frozen_nodes(tree):
        if node.frozen_gen != tree.generation:
            assert depth % 2 == 0 or node.n <= nscl + 1 or sum(node.N) == 0
            continue
        assert depth % 2 == 1  # only the opponent's nodes freeze; the root never does
        frozen += 1
        base = node.frozen_base
        later = node.N - base
        assert (later[base == 0] == 0).all()  # children unvisited at the freeze stay so
        assert (later >= 0).all()
        count = later.sum()
        kept = base > 0
        if count < 30 or kept.sum() < 2:
            continue
        expected = count * base[kept] / base.sum()
        chi2 += float(((later[kept] - expected) ** 2 / expected).sum())
        flat = np.full(kept.sum(), count / kept.sum())
        chi2_uniform += float(((later[kept] - flat) ** 2 / flat).sum())
        dof += kept.sum() - 1
        total += count
    assert frozen >= 5 and total >= 1000 and dof >= 10
    # chi-square goodness of fit, pooled over nodes: mean dof, sd sqrt(2 dof)
    assert chi2 < dof + 4 * math.sqrt(2 * dof), (chi2, dof)
    assert chi2_uniform > dof + 10 * math.sqrt(2 * dof)  # the test can tell distributions apart


@CORES
def test_contempt_changes_the_search_and_is_seeded(make, run) -> None:
    board = chess.Board(START)
    runs = []
    for nscl in (math.inf, 4, 4):
        tree = make(board, SearchConfig(nscl=nscl, root_noise=False), seed=9)
        runs.append(run(tree, HashEvaluator(), 800, in_flight=1).visits)
    assert not np.array_equal(runs[0], runs[1])
    assert np.array_equal(runs[1], runs[2])
