"""A budget of network evaluations ends exactly where it says: the last iteration's games are
kept in number order while they fit, the one that reaches the budget keeps only the targets of
its searches made within it, and a run is charged exactly its budget (``pipeline.spend``)."""

from __future__ import annotations

import numpy as np
import pytest

from frugalzero.config import load_config
from frugalzero.data.methods import BY_NAME, NAMES, TABLE, method
from frugalzero.data.records import METHODS, GameRecord, PlyTarget
from frugalzero.errors import UserError
from frugalzero.pipeline.config import Method, RunConfig
from frugalzero.pipeline.spend import SpendCut, charged, cut_game, searches
from frugalzero.selfplay.play import SEARCHES


def _game(sims: list[int], book: int = 0, resigned: bool = False) -> GameRecord:
    """A game of ``book`` book moves then one searched move per entry of ``sims`` (the last
    one a resignation's search, without a move, where ``resigned``)."""
    moves = len(sims) - resigned
    target = PlyTarget(np.array([0], dtype=np.int64), np.array([1.0], dtype=np.float32))
    per_move = [0] * book + sims
    return GameRecord(
        start_fen="startpos",
        moves=["e2e4"] * (book + moves),
        targets=[None] * book + [target] * moves,
        result=1.0,
        method="selfplay",
        extra={"simulations": str(sum(sims)), SEARCHES: ",".join(map(str, per_move))},
    )


def test_a_cut_game_keeps_the_targets_of_the_searches_made_within_the_budget() -> None:
    game = _game([10, 10, 10, 10], book=2)
    cut = cut_game(game, 25)  # the first two searches fit whole; the third began within it
    assert [t is not None for t in cut.targets] == [False, False, True, True, False, False]
    assert charged(cut) == 25  # charged what was left: the third search's part is spent
    assert cut.moves == game.moves and cut.result == game.result  # history and result stay
    assert searches(cut) == [0, 0, 10, 10]
    assert sum(t is not None for t in cut_game(game, 9).targets) == 0
    resigned = cut_game(_game([5, 5, 5], resigned=True), 12)  # a last search without a move
    assert [t is not None for t in resigned.targets] == [True, True]


def test_games_are_admitted_in_order_until_the_budget_then_none() -> None:
    cut = SpendCut(50, written=[_game([10, 10])])  # a resumed iteration: 20 charged already
    assert (cut.charged, cut.games) == (20, 1)
    assert cut.games_wanted(mean_cost=10.0) == 5  # 30 left: 3 games, a tenth more, and one
    assert cut.admit(_game([10, 10])) is not None and cut.charged == 40
    last = cut.admit(_game([6, 6]))
    assert last is not None and charged(last) == 10 and sum(t is not None for t in last.targets)
    assert cut.reached and cut.admit(_game([1])) is None and cut.charged == 50
    assert cut.games_wanted(10.0) == 0


def test_the_data_method_table_is_every_method_once() -> None:
    assert METHODS == NAMES == Method.__args__  # the config's literal and the records' list
    assert len({m.name for m in TABLE}) == len(TABLE) and set(BY_NAME) == set(NAMES)
    counted = {m.name for m in TABLE if m.counts_evaluations}
    assert counted == {"selfplay", "contempt", "gumbel"}
    with pytest.raises(UserError, match="method 'alpha' is not one of selfplay"):
        method("alpha")


def test_a_budget_of_evaluations_is_refused_for_a_method_that_counts_none() -> None:
    with pytest.raises(UserError, match="budget.evaluations: method sfgames spends no"):
        load_config(RunConfig, "smoke", ["budget.evaluations=1000"])


# A run's data cut at its budget, in real games: tests/test_experiment_fork.py (every arm-unit
# of a forked experiment charged exactly its budget, the cut game's targets past it dropped).
