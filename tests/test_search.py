"""PUCT search: mates found and played, legality, root noise, draw rules, tree reuse, seeds.

Everything here runs on the product's search (``new_tree``: the native core); the oracle's own
internals are tested in tests/oracle/test_tree.py."""

from __future__ import annotations

import math
import subprocess
import sys

import chess
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oracle
from conftest import shared_file
from frugalzero.chess.history import GameHistory
from frugalzero.chess.moves import legal_mask
from frugalzero.chess.positions import random_boards
from frugalzero.chess.rules import game_ending, leaf_status
from frugalzero.runtime.interpreter import own_code_env
from frugalzero.search import SearchConfig, UniformEvaluator, new_tree, search, search_many
from frugalzero.search.config import PLAY_POLICY_TEMPERATURE
from frugalzero.search.native import TERMINAL
from frugalzero.search.puct import (
    c_puct,
    choose_by_visits,
    fpu_value,
    legal_softmax,
    puct_scores,
    temper_priors,
    temperature_for_ply,
)
from frugalzero.search.uniform import HashEvaluator


def quiet(**overrides) -> SearchConfig:
    """Deterministic search settings (no root noise)."""
    return SearchConfig(root_noise=False, **overrides)


def test_search_imports_without_torch() -> None:
    """The search is pure Python and NumPy: it takes evaluations, never the network (a fresh
    interpreter, so other tests' imports do not count)."""
    code = "import frugalzero.search, frugalzero.chess, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=own_code_env())


# -- mates -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fen",
    [
        "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # back rank
        "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # scholar's mate
        "5rk1/5ppp/8/8/8/8/q4PPP/6K1 b - - 0 1",  # Black mates on White's back rank
    ],
)
def test_mate_in_one_is_found_and_played(fen: str) -> None:
    board = chess.Board(fen)
    tree = new_tree(board, SearchConfig(), seed=1)  # default settings, noise included
    result = search(tree, UniformEvaluator(), 2000)
    move = result.best_move
    board.push(move)
    assert board.is_checkmate()
    assert result.mate_in == 1 and result.value == 1.0
    assert result.pv == [move]
    assert result.simulations < 2000  # the proof ends the search early
    assert tree.choose_move(0) == move  # even at temperature 1 the mate is played


def _forces_mate_in_two(board: chess.Board, move: chess.Move) -> bool:
    """Brute force: after ``move`` every reply allows a mate in one."""
    board = board.copy()
    board.push(move)
    if board.is_checkmate():
        return True
    for reply in list(board.legal_moves):
        board.push(reply)
        mates = False
        for finish in list(board.legal_moves):
            board.push(finish)
            mates = board.is_checkmate()
            board.pop()
            if mates:
                break
        board.pop()
        if not mates:
            return False
    return True


def test_mate_in_two_on_wac_dm2_positions() -> None:
    path = shared_file("suites/wac.epd")
    lines = [line for line in path.read_text().splitlines() if "dm 2;" in line]
    assert len(lines) >= 10
    # a uniform evaluator says 0 everywhere, so only proofs steer the search; no first-play
    # reduction, which would only delay trying new moves when every value is equal
    config = quiet(fpu_value=0.0)
    evaluator = UniformEvaluator()
    for line in lines:
        board, ops = chess.Board.from_epd(line)
        tree = new_tree(board, config, seed=0)
        result = search(tree, evaluator, 20000)
        move = result.best_move
        assert result.mate_in == 3, ops["id"]
        assert len(result.pv) == 3 and result.pv[0] == move
        assert _forces_mate_in_two(board, move), (ops["id"], move)
        assert move in ops["bm"], (ops["id"], board.san(move))


def test_proven_loss_is_reported_and_resisted() -> None:
    board = chess.Board("7k/R7/6K1/8/8/8/8/8 b - - 0 1")  # Black's only move Kg8 allows Ra8#
    tree = new_tree(board, quiet(fpu_value=0.0), seed=0)
    result = search(tree, UniformEvaluator(), 500)
    assert result.mate_in == -2
    assert result.value == -1.0
    assert result.best_move == chess.Move.from_uci("h8g8")
    assert result.q.tolist() == [-1.0]  # the only move, proven to lose


# -- legality and noise --------------------------------------------------------------------------
def test_no_illegal_move_is_ever_chosen() -> None:
    evaluator = HashEvaluator()
    rng = np.random.default_rng(0)
    for board in random_boards(12, seed=7, max_plies=120):
        config = SearchConfig(leaves_per_gather=4, nscl=float(rng.integers(2, 20)))
        tree = new_tree(board, config, seed=int(rng.integers(1 << 30)))
        result = search(tree, evaluator, 150)
        legal = set(board.legal_moves)
        assert set(result.moves) == legal
        assert result.visits.sum() == result.nodes - 1 == result.simulations
        assert result.policy == pytest.approx(result.visits / result.visits.sum())
        assert result.best_move in legal
        assert tree.choose_move(0) in legal
        replay = board.copy()
        for move in result.pv:
            assert replay.is_legal(move)
            replay.push(move)
        assert 1 <= len(result.pv) <= result.depth + 1  # + the prior's pick at an expanded leaf
        assert legal_mask(board)[result.target_indices].all()
        assert result.target_probs.sum() == pytest.approx(1.0, abs=1e-6)
        assert len(result.target_indices) == (result.visits > 0).sum()
        visited = result.visits > 0
        assert np.isnan(result.q[~visited]).all() and (np.abs(result.q[visited]) <= 1).all()


def test_root_noise_touches_legal_moves_only() -> None:
    board = random_boards(1, seed=3, max_plies=30)[0]
    tree = new_tree(board, SearchConfig(), seed=5)
    search(tree, HashEvaluator(), 50)
    root = tree.root
    assert len(root.P) == len(root.raw) == board.legal_moves.count()
    assert legal_mask(board)[root.indices].all()
    assert root.P.sum() == pytest.approx(1.0)
    assert not np.allclose(root.P, root.raw)  # the noise is there...
    noise = (root.P - 0.75 * root.raw) / 0.25  # ...and is a distribution over those moves
    assert (noise >= -1e-12).all() and noise.sum() == pytest.approx(1.0)
    quiet_tree = new_tree(board, quiet(), seed=5)
    search(quiet_tree, HashEvaluator(), 50)
    assert np.array_equal(quiet_tree.root.P, quiet_tree.root.raw)


# -- PUCT maths and reproducibility --------------------------------------------------------------
def test_puct_formula() -> None:
    assert c_puct(0, 1.25, 19652) == pytest.approx(1.25 + math.log(19653 / 19652))
    assert fpu_value("reduction", 0.25, 0.1, 0.64) == pytest.approx(0.1 - 0.25 * 0.8)
    assert fpu_value("reduction", 0.25, 0.1, -1e-17) == 0.1  # rounding cannot break the sqrt
    assert fpu_value("absolute", -1.0, 0.1, 0.64) == -1.0
    priors = np.array([0.5, 0.3, 0.2])
    visits = np.array([3.0, 0.0, 1.0])
    q = np.array([0.1, 0.0, -0.2])
    scores = puct_scores(priors, visits, q, 5.0, 1.25, 19652, fpu=-0.3)
    c = (1.25 + math.log((5 + 19652 + 1) / 19652)) * math.sqrt(5)
    expected = [0.1 + c * 0.5 / 4, -0.3 + c * 0.3 / 1, -0.2 + c * 0.2 / 2]
    assert scores == pytest.approx(expected)


@given(
    st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=40),
    st.floats(0.25, 4.0),
)
def test_policy_temperature_is_a_softmax_temperature(weights, temperature) -> None:
    priors = np.array(weights) / sum(weights)
    tempered = temper_priors(priors, temperature)
    logits = np.log(priors) / temperature
    expected = np.exp(logits - logits.max())
    assert tempered == pytest.approx(expected / expected.sum(), rel=1e-9, abs=1e-12)
    # the raw policy's best move stays best (by value: rounding may split exact ties)
    assert tempered[np.argmax(priors)] == pytest.approx(tempered.max(), rel=1e-12)
    if temperature > 1:  # flatter: the most likely move gives up share
        assert tempered.max() <= priors.max() + 1e-12
    assert temper_priors(priors, 1.0) is priors


def test_the_search_explores_wider_at_a_higher_policy_temperature() -> None:
    board = random_boards(1, seed=8, max_plies=20)[0]
    trees = {t: new_tree(board, quiet(policy_temperature=t)) for t in (1.0, 3.0)}
    results = {t: search(tree, HashEvaluator(), 200) for t, tree in trees.items()}
    (raw,) = HashEvaluator().evaluate([board])  # the net's policy at the root
    assert trees[1.0].root.P == pytest.approx(raw.priors)
    assert trees[3.0].root.P == pytest.approx(temper_priors(raw.priors, 3.0))
    tried = {t: int((r.visits > 0).sum()) for t, r in results.items()}
    assert tried[3.0] > tried[1.0]
    with pytest.raises(Exception, match="policy_temperature"):
        SearchConfig(policy_temperature=0)


def test_temperature_choice() -> None:
    rng = np.random.default_rng(0)
    visits = np.array([10.0, 30.0, 60.0, 0.0])
    assert choose_by_visits(visits, 0.0, rng) == 2
    picks = np.bincount([choose_by_visits(visits, 1.0, rng) for _ in range(4000)], minlength=4)
    assert picks[3] == 0
    assert picks / 4000 == pytest.approx([0.1, 0.3, 0.6, 0.0], abs=0.03)
    ties = np.array([5.0, 5.0, 1.0])
    assert choose_by_visits(ties, 0.0, rng, tiebreak=np.array([0.0, 0.2, 0.9])) == 1


def test_temperature_schedule_constant_or_decaying() -> None:
    assert [temperature_for_ply(p, 1.0, 30, 0.0) for p in (0, 29, 30)] == [1.0, 1.0, 0.0]
    # lc0's search-contempt runs: 0.7 decaying over 5 moves, never below 0.1
    decayed = [temperature_for_ply(p, 0.7, 512, 0.1, decay=10) for p in (0, 4, 8, 10, 300)]
    assert decayed == pytest.approx([0.7, 0.42, 0.14, 0.1, 0.1])
    assert temperature_for_ply(600, 0.7, 512, 0.1, decay=10) == 0.1


def test_play_settings_are_deterministic() -> None:
    play = SearchConfig(nscl=5).for_play()
    assert not play.root_noise and play.temperature == 0 and play.resign_threshold <= -1
    assert play.nscl == 5  # everything else is kept
    # play flattens the priors; self-play keeps the network's policy as it is (AlphaZero)
    assert SearchConfig().policy_temperature == 1.0
    assert play.policy_temperature == PLAY_POLICY_TEMPERATURE > 1.0
    board = random_boards(1, seed=4, max_plies=20)[0]
    moves = set()
    for seed in range(3):
        tree = new_tree(board, SearchConfig().for_play(), seed=seed)
        result = search(tree, HashEvaluator(), 100)
        assert tree.choose_move(0) == result.best_move
        moves.add(result.best_move)
    assert len(moves) == 1


def test_same_seed_same_search() -> None:
    board = random_boards(1, seed=11, max_plies=20)[0]
    counts = []
    for _ in range(2):
        tree = new_tree(board, SearchConfig(nscl=10), seed=42)
        counts.append(search(tree, HashEvaluator(), 300).visits)
    assert np.array_equal(counts[0], counts[1])
    other = new_tree(board, SearchConfig(nscl=10), seed=43)
    assert not np.array_equal(counts[0], search(other, HashEvaluator(), 300).visits)


def test_many_trees_batched_equal_one_at_a_time() -> None:
    """Batching the leaves of many trees into one call changes nothing in any tree."""
    boards = random_boards(6, seed=5, max_plies=40)
    alone = []
    for i, board in enumerate(boards):
        tree = new_tree(board, SearchConfig(), seed=i)
        # one leaf at a time, as in a batch
        alone.append(search(tree, HashEvaluator(), 100, in_flight=1).visits)
    evaluator = HashEvaluator()
    trees = [new_tree(board, SearchConfig(), seed=i) for i, board in enumerate(boards)]
    results = search_many(trees, evaluator, 100, groups=2)
    for result, counts in zip(results, alone):
        assert np.array_equal(result.visits, counts)
        assert result.simulations == 100


# -- tree reuse ----------------------------------------------------------------------------------
def test_tree_reuse_keeps_the_subtree() -> None:
    board = chess.Board()
    tree = new_tree(board, quiet(), seed=0)
    result = search(tree, HashEvaluator(), 400)
    move = result.best_move
    kept = result.visits[result.moves.index(move)]
    reply = result.pv[1]
    tree.advance(move)
    assert tree.board.move_stack == [move]
    after = tree.result()
    assert after.nodes == kept > 1 and after.simulations == 0
    assert after.best_move == reply  # the subtree's statistics came along
    assert search(tree, HashEvaluator(), 100).nodes == kept + 100
    fresh = new_tree(board, SearchConfig(reuse_tree=False, root_noise=False), seed=0)
    search(fresh, HashEvaluator(), 50)
    fresh.advance(move)
    assert fresh.result().nodes == 0 and fresh.result().moves == []


def test_searching_and_playing_leave_no_cycles_to_collect() -> None:
    """The drivers pause the cycle collector for good (a full pass every few minutes): a
    game's searches must leave nothing that only the collector could free."""
    import gc

    tree = new_tree(chess.Board(), SearchConfig(), seed=0)
    gc.collect()
    gc.disable()
    try:
        for _ in range(12):
            tree.advance(search(tree, HashEvaluator(), 150).best_move)
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "make, run", [(new_tree, search), (oracle.new_tree, oracle.search)], ids=["native", "oracle"]
)
def test_leaves_count_repetitions_and_history_along_their_path(make, run) -> None:
    """Every leaf's repetition count and network input equal a replay of the game and the
    tree's moves down to it (kings shuffling behind locked pawns repeat a lot in the tree),
    on the search and on its oracle."""
    submitted: set[bytes] = set()

    class Recording(HashEvaluator):
        def evaluation(self, inp):
            submitted.add(inp.frames)
            return super().evaluation(inp)

    history = _history("8/8/3k4/1p1p1p2/1P1P1P2/3K4/8/8 w - - 0 1", ["d3e3", "d6e6"])
    tree = make(history, quiet(leaves_per_gather=1), seed=0)
    run(tree, Recording(), 1500)
    checked = repeated = 0
    root = tree.root
    stack = [(root, history)]
    while stack:
        node, replay = stack.pop()
        if node is not root:
            assert node.reps == replay.repetitions
            if node.state != TERMINAL:
                assert replay.net_input().frames in submitted
            checked += 1
            repeated += node.reps > 0
        for slot, child in enumerate(node.children or []):
            if child is not None:
                after = replay.copy()
                after.push(node.moves[slot])
                stack.append((child, after))
    assert checked > 1000 and repeated > 50


def test_follow_keeps_the_tree_along_the_game_and_restarts_otherwise() -> None:
    tree = new_tree(chess.Board(), quiet(), seed=0)
    result = search(tree, HashEvaluator(), 400)
    assert tree.follow(chess.Board()) and tree.result().nodes == result.nodes  # no new moves
    game = chess.Board()
    for move in result.pv[:2]:
        game.push(move)
    assert tree.follow(game)  # two plies on: the searched grandchild is the root now
    assert tree.board.move_stack == result.pv[:2] and tree.result().nodes > 1
    assert not tree.follow(GameHistory(game.copy(stack=False)))  # same position, new game
    assert tree.board.move_stack == [] and tree.result().nodes == 0
    search(tree, HashEvaluator(), 50)
    on = chess.Board(game.fen())
    on.push(next(iter(on.legal_moves)))  # that new game goes on
    assert tree.follow(on) and tree.board.move_stack == on.move_stack
    other = chess.Board()
    other.push(next(m for m in other.legal_moves if m != result.pv[0]))  # not via the tree
    assert not tree.follow(other)
    assert tree.board.move_stack == other.move_stack and tree.result().nodes == 0
    assert search(tree, HashEvaluator(), 30).nodes == 31


def test_advance_rejects_illegal_moves() -> None:
    tree = new_tree(chess.Board(), quiet(), seed=0)
    search(tree, UniformEvaluator(), 20)
    with pytest.raises(ValueError):
        tree.advance(chess.Move.from_uci("e2e5"))


def test_unbounded_search_stops_on_flag() -> None:
    tree = new_tree(chess.Board(), quiet(leaves_per_gather=8), seed=0)
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return tree.started >= 300

    result = search(tree, UniformEvaluator(), 0, stop=stop)
    assert 300 <= result.simulations < 400
    assert tree.in_flight == 0
    assert result.best_move in set(chess.Board().legal_moves)


# -- draw rules ----------------------------------------------------------------------------------
def _history(fen: str, moves: list[str]) -> GameHistory:
    history = GameHistory(chess.Board(fen))
    for uci in moves:
        history.push(chess.Move.from_uci(uci))
    return history


SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]


def test_threefold_repetition_ends_the_game() -> None:
    history = _history(chess.STARTING_FEN, SHUFFLE * 2)
    assert history.repetitions == 2
    assert game_ending(history.board, history.repetitions) == ("repetition", 0.0)
    once = _history(chess.STARTING_FEN, SHUFFLE)
    assert game_ending(once.board, once.repetitions) == (None, None)


def _drawn_in_search(start: GameHistory | chess.Board, **config) -> tuple[set[str], int]:
    """Visit every root move once, everything valued 0.5 for the side to move: the moves whose
    position the search scores as a draw by rule (Q exactly 0, no network call), and how many
    positions went to the evaluator."""
    board = start.board if isinstance(start, GameHistory) else start
    moves = board.legal_moves.count()
    # an absolute first-play urgency of 1 tries every unvisited move before any second visit
    tree = new_tree(start, quiet(fpu_mode="absolute", fpu_value=1.0, **config))
    evaluator = UniformEvaluator(value=0.5)
    result = search(tree, evaluator, moves)
    assert (result.visits == 1).all()
    assert set(result.q.tolist()) <= {0.0, -0.5}
    return {m.uci() for m, q in zip(result.moves, result.q) if q == 0.0}, evaluator.positions


def test_repetition_is_a_draw_inside_the_search() -> None:
    """After the shuffle was played once, playing it again in the tree reaches a threefold."""
    history = _history(chess.STARTING_FEN, SHUFFLE + SHUFFLE[:3])  # Black to play f6g8
    drawn, evaluated = _drawn_in_search(history)
    assert drawn == {"f6g8"}
    assert evaluated == history.board.legal_moves.count()  # the root, and every move but one
    # twofold setting: the first repetition already counts
    assert _drawn_in_search(_history(chess.STARTING_FEN, SHUFFLE[:3]))[0] == set()
    early = _history(chess.STARTING_FEN, SHUFFLE[:3])
    assert _drawn_in_search(early, draw_repetitions=2)[0] == {"f6g8"}


def test_fifty_move_rule_and_mate_on_the_last_move() -> None:
    board = chess.Board("8/8/8/8/8/2k5/8/K6R w - - 99 80")
    board.push_uci("h1h2")  # quiet move: the 100th ply without progress
    assert leaf_status(board, 0)[0] == "fifty-move rule"
    assert game_ending(board, 0) == ("fifty-move rule", 0.0)
    mate = chess.Board("k7/8/1K6/8/8/8/8/7R w - - 99 80")
    mate.push_uci("h1h8")
    assert mate.halfmove_clock == 100
    assert leaf_status(mate, 0)[:2] == ("checkmate", -1.0)
    assert game_ending(mate, 0) == ("checkmate", 1.0)
    # in search, the clock-ending move is a draw, the mating one a win
    tree = new_tree(chess.Board("k7/8/1K6/8/8/8/8/7R w - - 99 80"), quiet(), seed=0)
    result = search(tree, UniformEvaluator(), 200)
    assert result.best_move == chess.Move.from_uci("h1h8") and result.mate_in == 1


def test_stalemate_and_insufficient_material() -> None:
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert leaf_status(stalemate, 0)[:2] == ("stalemate", 0.0)
    assert game_ending(stalemate, 0) == ("stalemate", 0.0)
    bare = chess.Board("8/8/4k3/8/8/3BK3/8/8 b - - 0 1")
    assert leaf_status(bare, 0)[:2] == ("insufficient material", 0.0)
    assert game_ending(bare, 0) == ("insufficient material", 0.0)
    # taking the last pawn leaves king and bishop against king: a draw inside the search
    assert _drawn_in_search(chess.Board("8/8/4k3/8/4p3/3BK3/8/8 w - - 0 1"))[0] == {
        "d3e4",
        "e3e4",
    }
    terminal_root = new_tree(stalemate, quiet())
    result = search(terminal_root, UniformEvaluator(), 10)
    assert terminal_root.finished and result.best_move is None and result.moves == []
    assert result.value == 0.0 and result.mate_in is None and result.pv == []


def test_legal_softmax_spreads_each_row_over_its_legal_moves_only():
    """The network's padded rows (legal logits, then -inf) as priors; a row with no legal move
    gets zeros, not NaN (the inference process answers such rows too)."""
    inf = np.inf
    logits = np.array([[1.0, 2.0, -inf, -inf], [0.5, -inf, -inf, -inf], [-inf] * 4])
    priors = legal_softmax(logits)
    expected = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()
    assert np.allclose(priors[0, :2], expected) and np.all(priors[0, 2:] == 0)
    assert priors[1].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert priors[2].tolist() == [0.0] * 4
