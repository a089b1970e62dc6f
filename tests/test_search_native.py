"""The native search core against its Python reference: the same search, move after move.

With a deterministic evaluator (``HashEvaluator``: priors and values fixed per position) both
cores must give identical visit counts, the same moves, values and PVs to 1e-9, and whole trees
with the same statistics, under every search setting: PUCT, batched gathers with collisions,
search-contempt at several N_scl, Gumbel, the solver, tree reuse over a game, repetitions in
the tree, restricted roots, MultiPV. Root noise draws from the tree's generator at the same
point in both, so noisy self-play games must also be identical; and, as a test of the
distributions themselves, independent noisy searches of each core must choose their moves
alike (a two-sample chi-square).
"""

from __future__ import annotations

import dataclasses
import math

import chess
import numpy as np
import pytest

from frugalzero import _native
from frugalzero.chess.history import GameHistory
from frugalzero.chess.positions import random_boards
from frugalzero.search import (
    HashEvaluator,
    SearchConfig,
    UniformEvaluator,
    new_tree,
    search,
    search_many,
)
from frugalzero.search.config import PLAY_SETTINGS
from frugalzero.search.native import EXPANDED, NativeTree
from frugalzero.search.tree import IDLE_WALKS

CORES = ("python", "native")


def _trees(start, config: SearchConfig, seed: int = 0) -> dict:
    return {
        core: new_tree(start, dataclasses.replace(config, core=core), seed=seed) for core in CORES
    }


def _close(a, b, tol: float = 1e-9) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0, atol=tol, equal_nan=True))


def assert_same_result(ref, nat) -> None:
    assert nat.moves == ref.moves
    assert np.array_equal(nat.visits, ref.visits)
    assert _close(nat.q, ref.q) and _close(nat.policy, ref.policy)
    assert np.array_equal(nat.target_indices, ref.target_indices)
    assert _close(nat.target_probs, ref.target_probs, 1e-6)
    assert math.isclose(nat.value, ref.value, abs_tol=1e-9)
    assert nat.best_move == ref.best_move and nat.pv == ref.pv and nat.mate_in == ref.mate_in
    assert (nat.nodes, nat.depth, nat.simulations) == (ref.nodes, ref.depth, ref.simulations)
    assert len(nat.lines) == len(ref.lines)
    for a, b in zip(ref.lines, nat.lines):
        assert (b.move, b.visits, b.mate_in, b.pv) == (a.move, a.visits, a.mate_in, a.pv)
        assert _close(b.q, a.q) and (a.draw is None) == (b.draw is None)


def assert_same_tree(ref_node, nat_node, limit: int = 4000) -> int:
    """Every node's statistics equal, the whole tree down; returns the nodes compared."""
    stack, compared = [(ref_node, nat_node)], 0
    while stack and compared < limit:
        a, b = stack.pop()
        compared += 1
        assert (a.state, a.n, a.proven) == (b.state, b.n, b.proven)
        assert math.isclose(a.w, b.w, abs_tol=1e-9)
        if a.state != EXPANDED:
            continue
        assert b.moves == a.moves and list(a.N) == b.N and _close(a.W, b.W)
        assert _close(a.P, b.P) and _close(a.raw, b.raw)
        for x, y in zip(a.children, b.children):
            assert (x is None) == (y is None)
            if x is not None:
                stack.append((x, y))
    return compared


def lockstep(start, config: SearchConfig, sims: int, plies: int, seed=0, in_flight=2, lines=1):
    """Both cores search and play the same game; everything compared after every search."""
    trees = _trees(start, config, seed)
    compared = 0
    for ply in range(plies):
        results = {}
        for core, tree in trees.items():
            search(tree, HashEvaluator(), sims, in_flight=in_flight)
            results[core] = tree.result(lines)
        assert_same_result(results["python"], results["native"])
        compared += assert_same_tree(trees["python"].root, trees["native"].root)
        moves = {core: tree.choose_move(ply) for core, tree in trees.items()}
        assert moves["python"] == moves["native"]
        if moves["python"] is None:
            break
        for tree in trees.values():
            tree.advance(moves["python"])
        endings = {core: tree.ending() for core, tree in trees.items()}
        assert endings["python"] == endings["native"]
        if endings["python"][0] is not None:
            break
    return trees, compared


QUIET = SearchConfig(root_noise=False, gumbel_noise=False, temperature=0.0)
SETTINGS = {
    "puct": {},
    "fpu-absolute": {"fpu_mode": "absolute", "fpu_value": -1.0},
    "play": {k: v for k, v in PLAY_SETTINGS.items() if k != "gumbel_noise"},
    "batched": {"leaves_per_gather": 8, "collisions": 8, "virtual_loss": 2.0},
    "contempt-1": {"nscl": 1},
    "contempt-4": {"nscl": 4},
    "contempt-16": {"nscl": 16, "leaves_per_gather": 4},
    "gumbel": {"gumbel": True, "gumbel_m": 8},
    "gumbel-rescaled": {"gumbel": True, "gumbel_m": 16, "gumbel_rescale": True, "c_visit": 10.0},
    "no-solver": {"solver": False},
    "twofold": {"draw_repetitions": 2, "fifty_move_draw": False},
    "no-reuse": {"reuse_tree": False},
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_both_cores_play_the_same_game(name: str) -> None:
    config = dataclasses.replace(QUIET, **SETTINGS[name])
    start = random_boards(1, seed=sorted(SETTINGS).index(name), max_plies=16)[0]
    _, compared = lockstep(start, config, sims=160, plies=8)
    assert compared > 300


def test_both_cores_agree_where_positions_repeat() -> None:
    """Kings shuffling behind locked pawns: repetitions along the game and the tree paths."""
    history = GameHistory(chess.Board("8/8/3k4/1p1p1p2/1P1P1P2/3K4/8/8 w - - 0 1"))
    for uci in ["d3e3", "d6e6", "e3d3", "e6d6"]:
        history.push(chess.Move.from_uci(uci))
    trees, _ = lockstep(history, QUIET, sims=400, plies=12)
    assert trees["native"].board.move_stack == trees["python"].board.move_stack


@pytest.mark.parametrize(
    "fen",
    [
        "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # mate in one
        "r1b1kb1r/pppp1ppp/5q2/4n3/3KP3/2N3PN/PPP4P/R1BQ1B1R b kq - 0 1",  # WAC.001: mate in 2
        "7k/R7/6K1/8/8/8/8/8 b - - 0 1",  # a proven loss
        "8/1P6/8/8/8/8/6kp/K7 w - - 0 1",  # a promotion race
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
        "k7/8/1K6/8/8/8/8/7R w - - 99 80",  # mate on the fifty-move ply
    ],
)
def test_both_cores_prove_the_same_results(fen: str) -> None:
    config = dataclasses.replace(QUIET, fpu_value=0.0)
    lockstep(chess.Board(fen), config, sims=600, plies=3, lines=4)


def test_restricted_roots_and_multipv_agree() -> None:
    board = chess.Board()
    allowed = [chess.Move.from_uci(u) for u in ("e2e4", "d2d4", "g1f3")]
    trees = _trees(board, QUIET)
    for moves in (allowed, None, allowed[:1]):
        results = {
            core: search(tree, HashEvaluator(), 200, moves=moves) for core, tree in trees.items()
        }
        assert_same_result(results["python"], results["native"])
        lines = {core: tree.result(lines=5) for core, tree in trees.items()}
        assert_same_result(lines["python"], lines["native"])
        assert trees["native"].leader() == trees["python"].leader()


@pytest.mark.parametrize(
    "count, groups, leaves, collisions",
    # the second: more trees a batch than the native gather walks at once (its walkers take
    # the next tree as one finishes), several leaves a tree, and collisions
    [(5, 2, 2, 0), (17, 1, 3, 2)],
)
def test_many_trees_in_one_driver_agree(
    count: int, groups: int, leaves: int, collisions: int
) -> None:
    boards = random_boards(count, seed=12, max_plies=30)
    config = dataclasses.replace(QUIET, nscl=6, leaves_per_gather=leaves, collisions=collisions)
    results = {}
    for core in CORES:
        trees = [
            new_tree(b, dataclasses.replace(config, core=core), seed=i)
            for i, b in enumerate(boards)
        ]
        results[core] = search_many(trees, HashEvaluator(), 120, groups=groups)
    for ref, nat in zip(results["python"], results["native"]):
        assert_same_result(ref, nat)


def test_unbounded_searches_stop_alike() -> None:
    trees = _trees(chess.Board(), dataclasses.replace(QUIET, leaves_per_gather=8))
    results = {}
    for core, tree in trees.items():
        results[core] = search(tree, UniformEvaluator(), 0, stop=lambda t=tree: t.started >= 300)
        assert tree.in_flight == 0
    assert_same_result(results["python"], results["native"])


def _forced_repetition() -> GameHistory:
    """White's only move draws by repetition (from a clocked game that once hung the engine):
    every walk of a search ends in a terminal node, none needs the network."""
    history = GameHistory(chess.Board("1q6/8/PK1k4/8/1NR5/8/8/8 w - - 11 59"))
    for move in "b6a5 b8a8 a5b6 a8b8 b6a5 b8a8 a5b6 a8b8".split():
        history.push(chess.Move.from_uci(move))
    return history


def test_a_search_whose_every_walk_ends_in_a_terminal_still_returns() -> None:
    assert _native.IDLE_WALKS == IDLE_WALKS
    for core in ("python", "native"):
        config = dataclasses.replace(QUIET, core=core)
        tree = new_tree(_forced_repetition(), config)
        checks = []
        # unbounded: gather hands control back, so the caller's stop (its clock) is consulted
        search(
            tree,
            UniformEvaluator(),
            0,
            stop=lambda t=tree: t.started >= 5000,
            on_batch=lambda t, seen=checks: seen.append(t.started),
        )
        assert tree.started >= 5000 and checks, core  # progress seen between the idle gathers
        result = search(new_tree(_forced_repetition(), config), UniformEvaluator(), 3000)
        assert result.simulations == 3000 and [m.uci() for m in result.moves] == ["b6a5"], core


def test_noisy_self_play_games_are_identical() -> None:
    """Dirichlet noise, temperature sampling and contempt: every random draw the same."""
    from frugalzero.selfplay.config import SelfPlayConfig
    from frugalzero.selfplay.game import game_starts
    from frugalzero.selfplay.play import play_games

    records = {}
    for core in CORES:
        search_config = SearchConfig(core=core, simulations=48, nscl=6, temperature_plies=12)
        config = SelfPlayConfig(games=3, concurrent=3, search=search_config, max_plies=40, seed=3)
        records[core] = []
        play_games(HashEvaluator(), game_starts(config), config, records[core].append)
        records[core].sort(key=lambda r: r.game_id)
    assert len(records["native"]) == len(records["python"]) == 3
    for ref, nat in zip(records["python"], records["native"]):
        assert nat.moves == ref.moves and nat.result == ref.result
        for a, b in zip(ref.targets, nat.targets):
            assert (a is None) == (b is None)
            if a is not None:
                assert np.array_equal(a.policy_indices, b.policy_indices)
                assert _close(a.policy_probs, b.policy_probs, 1e-6)
                assert math.isclose(a.search_value, b.search_value, abs_tol=1e-9)


def test_noisy_searches_choose_from_the_same_distribution() -> None:
    """Independent seeds per core (root noise on, sampling at temperature 1): the first
    moves chosen follow one distribution (two-sample chi-square, p > 0.001)."""
    board = random_boards(1, seed=21, max_plies=10)[0]
    config = SearchConfig(simulations=32)
    counts = {}
    for offset, core in enumerate(CORES):
        chosen = []
        seeded = dataclasses.replace(config, core=core)
        for seed in range(200):
            tree = new_tree(board, seeded, seed=1000 * offset + seed)
            search(tree, HashEvaluator(), 32)
            chosen.append(tree.choose_move(0).uci())
        counts[core] = chosen
    moves = sorted(set(counts["python"]) | set(counts["native"]))
    table = np.array([[c.count(m) for m in moves] for c in counts.values()], dtype=float)
    table = table[:, table.sum(axis=0) >= 5]  # the test needs expected counts >= ~5
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    chi2 = float(((table - expected) ** 2 / expected).sum())
    dof = table.shape[1] - 1
    assert dof >= 3
    assert chi2 < dof + 4.5 * math.sqrt(2 * dof)  # ~p > 0.001 for these dof


def test_native_tree_is_the_default_and_rejects_illegal_moves() -> None:
    tree = new_tree(chess.Board(), QUIET)
    assert isinstance(tree, NativeTree)
    search(tree, UniformEvaluator(), 20)
    with pytest.raises(ValueError, match="illegal move e2e5"):
        tree.advance(chess.Move.from_uci("e2e5"))
    with pytest.raises(Exception, match="core"):
        SearchConfig(core="cuda")


def test_positions_the_native_core_refuses_are_searched_on_the_reference() -> None:
    """python-chess accepts two white kings but calls the board invalid: the native core never
    sees it, the reference searches it, and a tree that meets it follows on the reference."""
    from frugalzero.search import SearchTree, tree_for

    odd = chess.Board("4k3/8/8/8/8/8/8/K3K3 w - - 0 1")
    assert not odd.is_valid()
    tree = new_tree(odd, QUIET)
    assert isinstance(tree, SearchTree) and search(tree, UniformEvaluator(), 30).best_move
    native = new_tree(chess.Board(), QUIET)
    search(native, UniformEvaluator(), 30)
    assert isinstance(tree_for(native, odd, QUIET), SearchTree)
    dirty = chess.Board("4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1")  # rights without rooks: cleaned
    assert isinstance(new_tree(dirty, QUIET), NativeTree)
