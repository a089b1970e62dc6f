"""The native search core against the tests' oracle, its Python reference: the same search, move
after move.

With a deterministic evaluator (``HashEvaluator``: priors and values fixed per position) both
must give identical visit counts, the same moves, values and PVs to 1e-9, and whole trees with
the same statistics, under every search setting: PUCT, batched gathers with collisions,
search-contempt at several N_scl, Gumbel, the solver, tree reuse over a game, repetitions in
the tree, restricted roots, MultiPV. Root noise draws from the tree's generator at the same
point in both, so noisy self-play games must also be identical; and, as a test of the
distributions themselves, independent noisy searches of each must choose their moves alike (a
two-sample chi-square). The oracle (``tests/oracle``) runs on its own driver, which schedules
batches as the product's does.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import chess
import numpy as np
import pytest

import oracle
from frugalzero import _native
from frugalzero.chess.history import GameHistory
from frugalzero.chess.positions import random_boards
from frugalzero.errors import UserError
from frugalzero.search import (
    NativeTree,
    SearchConfig,
    UniformEvaluator,
    new_tree,
    search,
    search_many,
    tree_for,
)
from frugalzero.search.config import PLAY_SETTINGS
from frugalzero.search.native import EXPANDED
from frugalzero.search.uniform import HashEvaluator
from frugalzero.selfplay.stats import PRIOR_FLOOR, policy_kl


class Core(NamedTuple):
    """One side of the comparison: how it makes trees and runs searches."""

    new_tree: object
    search: object
    search_many: object


CORES = {
    "oracle": Core(oracle.new_tree, oracle.search, oracle.search_many),
    "native": Core(new_tree, search, search_many),
}


def _trees(start, config: SearchConfig, seed: int = 0) -> dict:
    return {name: core.new_tree(start, config, seed=seed) for name, core in CORES.items()}


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
            CORES[core].search(tree, HashEvaluator(), sims, in_flight=in_flight)
            results[core] = tree.result(lines)
        assert_same_result(results["oracle"], results["native"])
        compared += assert_same_tree(trees["oracle"].root, trees["native"].root)
        kl = {core: tree.target_kl(PRIOR_FLOOR) for core, tree in trees.items()}
        assert math.isclose(kl["native"], kl["oracle"], rel_tol=1e-9, abs_tol=1e-12)
        moves = {core: tree.choose_move(ply) for core, tree in trees.items()}
        assert moves["oracle"] == moves["native"]
        if moves["oracle"] is None:
            break
        for tree in trees.values():
            tree.advance(moves["oracle"])
        endings = {core: tree.ending() for core, tree in trees.items()}
        assert endings["oracle"] == endings["native"]
        if endings["oracle"][0] is not None:
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


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_both_cores_play_the_same_game(name: str) -> None:
    config = dataclasses.replace(QUIET, **SETTINGS[name])
    start = random_boards(1, seed=sorted(SETTINGS).index(name), max_plies=16)[0]
    _, compared = lockstep(start, config, sims=160, plies=8)
    assert compared > 300


@pytest.mark.slow
def test_both_cores_agree_where_positions_repeat() -> None:
    """Kings shuffling behind locked pawns: repetitions along the game and the tree paths."""
    history = GameHistory(chess.Board("8/8/3k4/1p1p1p2/1P1P1P2/3K4/8/8 w - - 0 1"))
    for uci in ["d3e3", "d6e6", "e3d3", "e6d6"]:
        history.push(chess.Move.from_uci(uci))
    trees, _ = lockstep(history, QUIET, sims=400, plies=12)
    assert trees["native"].board.move_stack == trees["oracle"].board.move_stack


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
            core: CORES[core].search(tree, HashEvaluator(), 200, moves=moves)
            for core, tree in trees.items()
        }
        assert_same_result(results["oracle"], results["native"])
        lines = {core: tree.result(lines=5) for core, tree in trees.items()}
        assert_same_result(lines["oracle"], lines["native"])
        assert trees["native"].leader() == trees["oracle"].leader()


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
    for name, core in CORES.items():
        trees = [core.new_tree(b, config, seed=i) for i, b in enumerate(boards)]
        results[name] = core.search_many(trees, HashEvaluator(), 120, groups=groups)
    for ref, nat in zip(results["oracle"], results["native"]):
        assert_same_result(ref, nat)


def test_the_cores_root_kl_is_policy_kl_of_its_target_and_priors() -> None:
    """Self-play's root KL, read from the core in one call a move (``target_kl``), is
    ``policy_kl`` of the tree's own target and priors before noise: at the start (no root yet:
    0), mid-search, after a search, under a floor that binds, on a restricted root."""
    checked = 0
    for i, board in enumerate(random_boards(6, seed=31, max_plies=24)):
        tree = new_tree(board, SearchConfig(simulations=64), seed=i)
        assert (
            tree.target_kl(PRIOR_FLOOR)
            == 0.0
            == policy_kl(*tree.training_target()[:2], *tree.root_priors())
        )
        moves = list(board.legal_moves)[:3] if i % 2 else None
        for sims in (3, 40, 200):
            search(tree, HashEvaluator(), sims, moves=moves)
            target = tree.training_target()
            for floor in (PRIOR_FLOOR, 0.05):
                expected = policy_kl(target.indices, target.probs, *tree.root_priors(), floor=floor)
                assert tree.target_kl(floor) == pytest.approx(expected, rel=1e-12, abs=1e-15)
                checked += expected > 0
    assert checked >= 30


def test_unbounded_searches_stop_alike() -> None:
    trees = _trees(chess.Board(), dataclasses.replace(QUIET, leaves_per_gather=8))
    results = {}
    for core, tree in trees.items():
        stop = lambda t=tree: t.started >= 300  # noqa: E731
        results[core] = CORES[core].search(tree, UniformEvaluator(), 0, stop=stop)
        assert tree.in_flight == 0
    assert_same_result(results["oracle"], results["native"])


def _forced_repetition() -> GameHistory:
    """White's only move draws by repetition (from a clocked game that once hung the engine):
    every walk of a search ends in a terminal node, none needs the network."""
    history = GameHistory(chess.Board("1q6/8/PK1k4/8/1NR5/8/8/8 w - - 11 59"))
    for move in "b6a5 b8a8 a5b6 a8b8 b6a5 b8a8 a5b6 a8b8".split():
        history.push(chess.Move.from_uci(move))
    return history


def test_a_search_whose_every_walk_ends_in_a_terminal_still_returns() -> None:
    assert _native.IDLE_WALKS == oracle.IDLE_WALKS
    for core, (make, run, _) in CORES.items():
        tree = make(_forced_repetition(), QUIET)
        checks = []
        # unbounded: gather hands control back, so the caller's stop (its clock) is consulted
        run(
            tree,
            UniformEvaluator(),
            0,
            stop=lambda t=tree: t.started >= 5000,
            on_batch=lambda t, seen=checks: seen.append(t.started),
        )
        assert tree.started >= 5000 and checks, core  # progress seen between the idle gathers
        result = run(make(_forced_repetition(), QUIET), UniformEvaluator(), 3000)
        assert result.simulations == 3000 and [m.uci() for m in result.moves] == ["b6a5"], core


@pytest.mark.slow
def test_noisy_self_play_games_are_identical(monkeypatch) -> None:
    """Dirichlet noise, temperature sampling and contempt: every random draw the same. The
    product's self-play plays both: on the oracle, its trees and driver stand in."""
    from frugalzero.selfplay import game, play
    from frugalzero.selfplay.config import SelfPlayConfig

    records = {}
    for core in ("oracle", "native"):
        if core == "oracle":
            monkeypatch.setattr(game, "new_tree", oracle.new_tree)
            monkeypatch.setattr(play, "Driver", oracle.Driver)
        search_config = SearchConfig(simulations=48, nscl=6, temperature_plies=12)
        config = SelfPlayConfig(games=3, concurrent=3, search=search_config, max_plies=40, seed=3)
        records[core] = []
        play.play_games(HashEvaluator(), game.game_starts(config), config, records[core].append)
        records[core].sort(key=lambda r: r.game_id)
        monkeypatch.undo()
    assert len(records["native"]) == len(records["oracle"]) == 3
    for ref, nat in zip(records["oracle"], records["native"]):
        assert nat.moves == ref.moves and nat.result == ref.result
        # the root KL self-play records: the same priors before noise on both cores
        assert math.isclose(float(nat.extra["kl_sum"]), float(ref.extra["kl_sum"]), rel_tol=1e-5)
        for a, b in zip(ref.targets, nat.targets):
            assert (a is None) == (b is None)
            if a is not None:
                assert np.array_equal(a.policy_indices, b.policy_indices)
                assert _close(a.policy_probs, b.policy_probs, 1e-6)
                assert math.isclose(a.search_value, b.search_value, abs_tol=1e-9)


@pytest.mark.slow
def test_noisy_searches_choose_from_the_same_distribution() -> None:
    """Independent seeds per core (root noise on, sampling at temperature 1): the first
    moves chosen follow one distribution (two-sample chi-square, p > 0.001)."""
    board = random_boards(1, seed=21, max_plies=10)[0]
    config = SearchConfig(simulations=32)
    counts = {}
    for offset, (core, (make, run, _)) in enumerate(CORES.items()):
        chosen = []
        for seed in range(200):
            tree = make(board, config, seed=1000 * offset + seed)
            run(tree, HashEvaluator(), 32)
            chosen.append(tree.choose_move(0).uci())
        counts[core] = chosen
    moves = sorted(set(counts["oracle"]) | set(counts["native"]))
    table = np.array([[c.count(m) for m in moves] for c in counts.values()], dtype=float)
    table = table[:, table.sum(axis=0) >= 5]  # the test needs expected counts >= ~5
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    chi2 = float(((table - expected) ** 2 / expected).sum())
    dof = table.shape[1] - 1
    assert dof >= 3
    assert chi2 < dof + 4.5 * math.sqrt(2 * dof)  # ~p > 0.001 for these dof


def test_native_tree_is_the_search_and_rejects_illegal_moves() -> None:
    tree = new_tree(chess.Board(), QUIET)
    assert isinstance(tree, NativeTree)
    search(tree, UniformEvaluator(), 20)
    with pytest.raises(ValueError, match="illegal move e2e5"):
        tree.advance(chess.Move.from_uci("e2e5"))
    with pytest.raises(TypeError, match="core"):
        SearchConfig(core="oracle")  # type: ignore[call-arg]


def test_a_position_the_core_refuses_is_a_one_line_error_naming_it() -> None:
    """python-chess accepts two white kings but calls the board invalid: the core never sees
    it, and nothing else searches it in its place: one line says which position and why, and
    a tree asked to follow a game from it stays where it was."""
    odd = chess.Board("4k3/8/8/8/8/8/8/K3K3 w - - 0 1")
    assert not odd.is_valid()
    message = (
        f"position not supported by the search: {odd.fen()} (invalid position (too_many_kings))"
    )
    with pytest.raises(UserError) as refused:
        new_tree(odd, QUIET)
    assert str(refused.value) == message
    native = new_tree(chess.Board(), QUIET)
    before = search(native, UniformEvaluator(), 30)
    with pytest.raises(UserError, match="position not supported by the search: 4k3/"):
        tree_for(native, GameHistory(odd), QUIET)
    assert native.board.move_stack == [] and native.result().nodes == before.nodes
    with pytest.raises(UserError, match="too_many_kings"):
        tree_for(None, odd, QUIET)
    dirty = chess.Board("4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1")  # rights without rooks: cleaned
    assert isinstance(new_tree(dirty, QUIET), NativeTree)
