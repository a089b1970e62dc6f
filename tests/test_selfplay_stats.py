"""Self-play's training-data statistics: distinct positions and openings, decisive value
targets, the root KL, on games whose answers are counted by hand, and the KL a real game
measures while it is played."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from frugalzero.chess.moves import move_to_index
from frugalzero.data.records import GameRecord, PlyTarget, one_hot
from frugalzero.data.shards import read_shard, write_shard
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.search import SearchConfig
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.game import game_starts
from frugalzero.selfplay.play import play_games
from frugalzero.selfplay.stats import (
    KL_PLIES,
    KL_SUM,
    PRIOR_FLOOR,
    decisive_targets,
    distinct_positions_per_1000,
    policy_kl,
    root_kl,
    selfplay_stats,
)

INLINE = EvaluatorConfig(device="cpu", backend="inline", precision="fp32", compile="off")
SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]  # the knights out and back: the start again
AFTER_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq"


def _record(
    moves: list[str],
    result: float | None = 0.0,
    fen: str = chess.STARTING_FEN,
    trained: list[bool] | None = None,
    **extra: str,
) -> GameRecord:
    """A game from ``fen`` with a one-hot target on each move ``trained`` says (default all)."""
    board = chess.Board(fen)
    targets: list[PlyTarget | None] = []
    for i, uci in enumerate(moves):
        move = chess.Move.from_uci(uci)
        on = trained is None or trained[i]
        targets.append(PlyTarget(*one_hot(move_to_index(move, board.turn))) if on else None)
        board.push(move)
    return GameRecord(fen, moves, targets, result, "selfplay", extra=dict(extra))


def test_distinct_positions_count_the_repetition_rules_identity() -> None:
    records = [
        # start (White), Nf3 (Black), Nf3 Nf6 (White), Nf6 (Black): four positions
        _record(SHUFFLE),
        # the same three positions after the first, seen again
        _record(SHUFFLE, trained=[False, True, True, True]),
        # the start again, then 1.e4 (Black to move): one new
        _record(["e2e4", "e7e5"]),
        # 1.e4 written with its en-passant square (no pawn can take) and other move counters
        _record(["e7e5"], fen=f"{AFTER_E4} e3 0 1"),
        _record(["d7d5"], fen=f"{AFTER_E4} - 3 7"),
    ]
    assert sum(r.positions for r in records) == 4 + 3 + 2 + 1 + 1
    assert distinct_positions_per_1000(records) == pytest.approx(1000 * 5 / 11)
    assert distinct_positions_per_1000([_record(["e2e4"], trained=[False])]) is None
    assert selfplay_stats(records)["distinct_positions_per_1000"] == pytest.approx(454.5)


def test_distinct_openings_are_the_first_ten_plies() -> None:
    line = SHUFFLE * 3  # 12 plies
    records = [
        _record(line),
        _record(line[:10] + ["b1c3"]),  # leaves the line at ply 11: the same opening
        _record(line[:9] + ["b8c6"]),  # leaves it at ply 10: another
        _record(line[:4]),  # shorter than 10 plies: compared whole
        _record(line[:4]),
    ]
    stats = selfplay_stats(records)
    assert stats["distinct_openings"] == 3
    assert stats["distinct_opening_share"] == pytest.approx(3 / 5)
    other_start = _record(["e7e5"], fen=f"{AFTER_E4} - 0 1")
    assert selfplay_stats([*records, other_start])["distinct_openings"] == 4


def test_decisive_targets_weigh_games_by_their_training_positions() -> None:
    records = [
        _record(SHUFFLE, 1.0),  # 4 decisive positions
        _record(SHUFFLE[:3], 0.0),  # 3 drawn
        _record(SHUFFLE[:2], -1.0),  # 2 decisive
        _record(SHUFFLE, None),  # no result: no value target
        _record(SHUFFLE, 1.0, trained=[False] * 4),  # decisive, but nothing trained on
    ]
    assert decisive_targets(records) == pytest.approx(6 / 9)
    assert selfplay_stats(records)["decisive_targets"] == pytest.approx(6 / 9, abs=1e-4)
    assert decisive_targets([_record(SHUFFLE, None)]) is None


def test_policy_kl_by_hand() -> None:
    indices, probs = np.array([1, 5]), np.array([0.5, 0.5], np.float32)
    prior_indices, priors = np.array([5, 1, 9], np.uint16), np.array([0.25, 0.5, 0.25])
    # 0.5 ln(0.5 / 0.5) + 0.5 ln(0.5 / 0.25)
    assert policy_kl(indices, probs, prior_indices, priors) == pytest.approx(0.5 * math.log(2))
    same = np.array([0.25, 0.5, 0.25], np.float32)
    assert policy_kl(prior_indices, same, prior_indices, priors) == 0.0
    # a target move the priors do not have: the floor, a large finite surprise
    missing = policy_kl(np.array([7]), np.ones(1), prior_indices, priors)
    assert missing == pytest.approx(-math.log(PRIOR_FLOOR))


def test_root_kl_is_the_mean_over_the_measured_plies() -> None:
    records = [
        _record(SHUFFLE, **{KL_SUM: "0.5", KL_PLIES: "2"}),
        _record(SHUFFLE, **{KL_SUM: "1.0", KL_PLIES: "3"}),
        _record(SHUFFLE),  # not measured (another method's game): left out
    ]
    assert root_kl(records) == pytest.approx(1.5 / 5)
    assert selfplay_stats(records)["root_kl"] == pytest.approx(0.3)
    assert root_kl(records[2:]) is None and selfplay_stats(records[2:])["root_kl"] is None


def test_root_priors_are_the_networks_before_the_noise(tiny_net) -> None:
    from frugalzero.chess import net_input_from_board
    from frugalzero.nn.evaluator import Evaluator
    from frugalzero.search import new_tree, search

    board = chess.Board()
    board.push_uci("e2e4")
    with Evaluator(tiny_net, INLINE) as evaluator:
        tree = new_tree(board, SearchConfig(simulations=16), seed=1)
        result = search(tree, evaluator)
        net = evaluator.evaluate([board])[0].priors
    inp = net_input_from_board(board)
    indices, priors = tree.root_priors()
    by_index = dict(zip(indices.tolist(), priors.tolist()))
    assert sorted(by_index) == sorted(inp.indices.tolist())
    expected = [float(np.float32(p)) for p in net]
    assert [by_index[i] for i in inp.indices.tolist()] == pytest.approx(expected, rel=1e-5)
    assert not np.allclose(tree.root.P, tree.root.raw)  # the search saw noised priors
    kl = policy_kl(result.target_indices, result.target_probs, indices, priors)
    assert kl > 0 and math.isfinite(kl)


def test_self_play_reads_the_root_kl_from_the_core_in_one_call_a_move(monkeypatch) -> None:
    """The per-move root KL is the core's ``target_kl``: the Python definition and the arrays
    it reads (``policy_kl``, ``root_priors``) cost most of the 20% of the search's own CPU
    that issue 71 found lost, so they stay off self-play's path; the sum is the definition's."""
    from frugalzero.search.native import NativeTree
    from frugalzero.search.uniform import HashEvaluator
    from frugalzero.selfplay import game

    def off_the_path(*_args, **_kwargs):
        raise AssertionError("self-play's per-move path reached the Python root KL")

    calls = []

    def by_definition(tree, floor):
        calls.append(floor)
        target = tree.training_target()
        return policy_kl(target.indices, target.probs, *tree.root_priors(), floor=floor)

    config = SelfPlayConfig(games=2, concurrent=2, max_plies=10, search=SearchConfig(simulations=8))
    core: list[GameRecord] = []
    python: list[GameRecord] = []
    monkeypatch.setattr(NativeTree, "root_priors", off_the_path)
    monkeypatch.setattr(game, "policy_kl", off_the_path, raising=False)
    play_games(HashEvaluator(), game_starts(config), config, core.append)
    monkeypatch.undo()
    monkeypatch.setattr(NativeTree, "target_kl", by_definition)
    play_games(HashEvaluator(), game_starts(config), config, python.append)
    plies = sum(int(r.extra[KL_PLIES]) for r in core)
    assert len(calls) == plies > 0 and set(calls) == {PRIOR_FLOOR}
    for a, b in zip(sorted(core, key=_id), sorted(python, key=_id), strict=True):
        assert a.moves == b.moves
        assert float(a.extra[KL_SUM]) == pytest.approx(float(b.extra[KL_SUM]), rel=1e-12)


def _id(record: GameRecord) -> str:
    return record.game_id


def test_a_real_game_measures_its_root_kl_and_keeps_it_through_a_shard(tiny_net, tmp_path):
    from frugalzero.nn.evaluator import Evaluator

    config = SelfPlayConfig(
        games=2, concurrent=2, max_plies=12, search=SearchConfig(simulations=8), evaluator=INLINE
    )
    records: list[GameRecord] = []
    with Evaluator(tiny_net, INLINE) as evaluator:
        play_games(evaluator, game_starts(config), config, records.append, "tiny")
    assert len(records) == 2
    for record in records:
        kl, plies = float(record.extra[KL_SUM]), int(record.extra[KL_PLIES])
        assert plies == record.positions > 0
        assert math.isfinite(kl) and kl > 0  # 8 visits never spread like the priors
    expected = sum(float(r.extra[KL_SUM]) for r in records) / sum(r.positions for r in records)
    assert root_kl(records) == pytest.approx(expected)
    back = read_shard(write_shard(tmp_path / "g.fzs", records))
    assert [r.extra for r in back] == [r.extra for r in records]
    assert selfplay_stats(back) == selfplay_stats(records)
