"""Playout-cap randomisation (KataGo): a full search with noise and a training target on a
share of the moves, a fast one without either on the others; off, the games are as before."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from frugalzero.data.records import GameRecord
from frugalzero.errors import UserError
from frugalzero.search import Driver, SearchConfig, new_tree
from frugalzero.search.uniform import HashEvaluator
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.game import SelfPlayGame, game_starts
from frugalzero.selfplay.play import play_games
from frugalzero.selfplay.stats import FULL_SEARCHES

NEVER_RESIGN = -2.0


def _config(**overrides) -> SelfPlayConfig:
    search = {"simulations": 24, "resign_threshold": NEVER_RESIGN, **overrides.pop("search", {})}
    return SelfPlayConfig(search=SearchConfig(**search), **{"max_plies": 40, **overrides})


def _play(config: SelfPlayConfig) -> list[GameRecord]:
    records: list[GameRecord] = []
    play_games(HashEvaluator(), game_starts(config), config, records.append, "test")
    return sorted(records, key=lambda r: r.game_id)


class _AsBefore:
    """Self-play as it was before playout caps, the reference: the game's generator draws the
    resignation share, then seeds the tree, and every search is a full one."""

    def __init__(self, config: SelfPlayConfig, index: int) -> None:
        rng = np.random.default_rng([config.seed, index])
        rng.random()  # the no-resignation draw
        self.tree = new_tree(chess.Board(), config.search, rng=rng)
        self.max_plies = config.max_plies
        self.moves: list[str] = []
        self.tree.start()

    def on_search_done(self) -> bool:
        move = self.tree.choose_move(len(self.moves))
        self.moves.append(move.uci())
        self.tree.advance(move)
        if self.tree.ending()[0] is not None or len(self.moves) >= self.max_plies:
            return False
        self.tree.start()
        return True


@pytest.mark.parametrize("search", [{}, {"nscl": 3}, {"gumbel": True}])
def test_every_move_searched_in_full_plays_the_games_as_before(search) -> None:
    config = _config(games=2, concurrent=1, seed=7, fast_simulations=4, search=search)
    assert config.full_search_share == 1.0  # the default
    records = _play(config)
    for index, record in enumerate(records):
        before = _AsBefore(config, index)
        Driver(HashEvaluator(), config.groups).run([before])
        assert record.moves == before.moves
        assert record.positions == len(record.moves) == int(record.extra[FULL_SEARCHES])


class _Watched:
    """A game whose every finished search is looked at before it moves on: was it full, how
    many simulations it ran, whether its root priors were noised."""

    def __init__(self, game: SelfPlayGame) -> None:
        self.game = game
        self.tree = game.tree
        self.seen: list[tuple[bool, int, bool, bool]] = []

    def on_search_done(self) -> bool:
        game, tree = self.game, self.game.tree
        root = tree.root
        noised = len(root.raw) > 1 and not np.array_equal(root.P, root.raw)
        self.seen.append((game.full_search, tree.started, noised, tree.core.root_proven))
        return game.step()


def test_a_quarter_of_the_moves_are_full_searches_with_noise_and_targets() -> None:
    config = _config(games=8, full_search_share=0.25, fast_simulations=4)
    watched = [_Watched(SelfPlayGame(start, config)) for start in game_starts(config)]
    Driver(HashEvaluator(), config.groups).run(watched)
    searches = 0
    full = 0
    for w in watched:
        record = w.game.record()
        assert len(w.seen) == len(record.moves)  # never resigns: one search a move
        searches += len(w.seen)
        full += int(record.extra[FULL_SEARCHES])
        assert int(record.extra[FULL_SEARCHES]) == record.positions
        for (is_full, started, noised, proven), target in zip(w.seen, record.targets):
            assert (target is not None) == is_full
            if not proven:
                assert started == (24 if is_full else 4)
            if is_full and not proven and len(target.policy_indices) > 1:
                assert noised
            if not is_full:
                assert not noised  # the root searched with the network's own priors
    margin = 4.5 * math.sqrt(searches * 0.25 * 0.75)  # binomial, 4.5 standard deviations
    assert abs(full - 0.25 * searches) <= margin
    assert 0 < full < searches


@pytest.mark.parametrize(
    ("search", "method"),
    [({}, "selfplay"), ({"nscl": 3}, "contempt"), ({"gumbel": True}, "gumbel")],
)
def test_playout_caps_for_every_method_reproducible_from_the_seed(search, method) -> None:
    config = _config(games=2, full_search_share=0.5, fast_simulations=6, search=search)
    records = _play(config)
    assert [r.method for r in records] == [method] * 2
    assert all(0 < r.positions < len(r.moves) for r in records)
    again = _play(config)
    assert [r.moves for r in again] == [r.moves for r in records]
    assert [r.extra for r in again] == [r.extra for r in records]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"full_search_share": 0.0}, "selfplay: full_search_share must be in (0, 1]"),
        ({"full_search_share": 1.5}, "selfplay: full_search_share must be in (0, 1]"),
        ({"fast_simulations": 0}, "selfplay: fast_simulations must be at least 1"),
        (
            {"full_search_share": 0.25, "fast_simulations": 25},
            "selfplay: fast_simulations must not exceed search.simulations",
        ),
        ({"full_search_share": math.nan}, "selfplay.full_search_share"),
    ],
)
def test_bad_playout_caps_are_refused_on_one_line(fields, message) -> None:
    with pytest.raises(UserError) as refused:
        _config(**fields)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    _config(fast_simulations=25)  # more than a full search is fine while every search is full
