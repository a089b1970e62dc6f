"""Which shipped net the UCI engine plays under a clock: the measured rule, its cache, and the
engine saying which net it took and why."""

from __future__ import annotations

import json
import threading

import chess
import pytest

from frugalzero.chess.history import GameHistory
from frugalzero.evaluate.specs import parse_spec, uci_command
from frugalzero.nn import choice
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.uci import NetSearcher, SearchRequest
from frugalzero.uci.searcher import BATCH_SIZE


def test_the_rule_plays_medium_only_where_its_nodes_are_cheap_enough():
    # 164 Elo at equal nodes, 206 a doubling: break-even at 2^(-164/206) of small's speed
    assert choice.THRESHOLD == pytest.approx(0.576, abs=0.001)
    assert choice.pick(medium_per_s=1000.0, small_per_s=1000.0) == "medium"  # a GPU at batch 16
    assert choice.pick(medium_per_s=590.0, small_per_s=1000.0) == "medium"
    assert choice.pick(medium_per_s=560.0, small_per_s=1000.0) == "small"
    assert choice.pick(medium_per_s=230.0, small_per_s=1000.0) == "small"  # this 2-core CPU


def _key() -> str:
    return choice.machine_key("cpu", 1, BATCH_SIZE)


def test_a_cached_measurement_is_used_and_a_damaged_cache_is_measured_again(monkeypatch, tmp_path):
    monkeypatch.setenv("FRUGALZERO_CACHE", str(tmp_path))
    cache = tmp_path / choice.CACHE_FILE
    cache.write_text(json.dumps({_key(): {"medium": 900.0, "small": 1000.0}}))

    def never(*args):
        raise AssertionError("measured although the cache holds this machine")

    monkeypatch.setattr(choice, "_positions_per_s", never)
    got = choice.clock_net("cpu", 1, BATCH_SIZE, EvaluatorConfig())
    assert (got.net, got.cached, got.ratio) == ("medium", True, pytest.approx(0.9))
    assert "0.90" in got.describe() and "once" in got.describe()

    cache.write_text('{"not json')  # a cut file: measured again, and the cache rewritten
    speeds = {"medium": 200.0, "small": 1000.0}
    monkeypatch.setattr(choice, "_positions_per_s", lambda net, *args: speeds[net])
    got = choice.clock_net("cpu", 1, BATCH_SIZE, EvaluatorConfig())
    assert (got.net, got.cached) == ("small", False)
    assert json.loads(cache.read_text())[_key()] == speeds
    assert choice.read_cache(cache)[_key()] == speeds

    cache.write_text(json.dumps({_key(): {"medium": -1, "small": "fast"}}))  # nonsense values
    assert choice.read_cache(cache) == {}


@pytest.mark.parametrize(
    ("speeds", "net"), [((900.0, 1000.0), "medium"), ((100.0, 1000.0), "small")]
)
@pytest.mark.slow
def test_the_engine_plays_the_chosen_net_and_says_so(monkeypatch, tmp_path, speeds, net):
    monkeypatch.setenv("FRUGALZERO_CACHE", str(tmp_path))
    # the engine's own layout on this machine: its measurement's key
    from frugalzero.runtime.cores import available_cores
    from frugalzero.uci.searcher import network_layout

    _, per_server = network_layout(0, available_cores(), cpu=True)
    key = choice.machine_key("cpu", per_server, BATCH_SIZE)
    medium, small = speeds
    (tmp_path / choice.CACHE_FILE).write_text(json.dumps({key: {"medium": medium, "small": small}}))
    searcher = NetSearcher("default", default_nodes=8)
    try:
        searcher.wait_ready()
        assert searcher.note is not None and searcher.note.startswith(f"net {net}:")
        blocks = searcher.net.config.blocks
        assert blocks == (10 if net == "medium" else 6)
        move, _ = searcher.search(
            SearchRequest(GameHistory(chess.Board()), 8, None, False, []),
            threading.Event(),
            lambda line: None,
        )
        assert move in chess.Board().legal_moves
    finally:
        searcher.close()


@pytest.mark.slow
def test_a_forced_net_is_not_replaced():
    searcher = NetSearcher("small", default_nodes=8)
    try:
        searcher.wait_ready()
        assert searcher.note is None and searcher.net.config.blocks == 6
    finally:
        searcher.close()


def test_a_clocked_shipped_net_runs_the_engine_by_its_name():
    argv, _ = uci_command(parse_spec("net:default?tc=10+0.1"))
    assert argv[argv.index("--net") + 1] == "default"  # the engine chooses for this machine
    argv, _ = uci_command(parse_spec("net:medium?tc=10+0.1"))
    assert argv[argv.index("--net") + 1] == "medium"
