"""``net:`` engines in matches: raw policy, search with shared batches, spec errors."""

from __future__ import annotations

import chess
import numpy as np
import pytest
import torch

from frugalzero.chess.history import net_input_from_board
from frugalzero.errors import UserError
from frugalzero.evaluate.adjudicate import AdjudicationConfig
from frugalzero.evaluate.match import MatchConfig, play_match
from frugalzero.evaluate.netplayer import net_configs
from frugalzero.evaluate.specs import parse_spec
from frugalzero.nn.checkpoint import save_net
from frugalzero.nn.config import architecture
from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.search.config import PLAY_POLICY_TEMPERATURE, SearchConfig

PLAY = SearchConfig().for_play()

INLINE = "backend=inline&compile=off&precision=fp32"
SHORT = AdjudicationConfig(max_plies=40)


@pytest.fixture(scope="module")
def net_file(tmp_path_factory):
    torch.manual_seed(1)
    path = tmp_path_factory.mktemp("net") / "tiny.safetensors"
    save_net(PolicyValueNet(architecture("tiny")), path)
    return path


def test_nodes_1_plays_the_raw_policy(net_file):
    spec = f"net:{net_file}?nodes=1&{INLINE}"
    result = play_match(spec, "random?seed=5", MatchConfig(games=2, adjudication=SHORT))
    torch.manual_seed(1)
    inline = EvaluatorConfig(device="cpu", backend="inline", compile="off", precision="fp32")
    evaluator = Evaluator(PolicyValueNet(architecture("tiny")), inline)
    checked = 0
    for outcome in result.outcomes:
        board = chess.Board(outcome.opening.root_fen)
        net_white = outcome.white.startswith("net:")
        for move, comment in zip(outcome.moves, outcome.comments):
            if comment != "book" and (board.turn == chess.WHITE) == net_white:
                inp = net_input_from_board(board)
                priors = evaluator.evaluate([inp])[0].priors
                assert move == inp.moves[int(np.argmax(priors))]
                checked += 1
            board.push(move)
    assert checked >= 30


@pytest.mark.slow
def test_concurrent_games_share_the_nets_batches(net_file):
    spec = f"net:{net_file}?nodes=12&leaves_per_gather=1&{INLINE}"
    cfg = MatchConfig(games=4, concurrency=4, adjudication=SHORT)
    result = play_match(spec, "random?seed=2", cfg)
    assert result.tally.games == 4 and not any(o.failed for o in result.outcomes)
    stats = result.batching[result.engine_a]
    # one leaf per tree per batch: more than one leaf a batch means games shared batches
    assert stats["mean_batch"] > 1.5
    assert result.summary()["net_batching"] == result.batching


@pytest.mark.slow
def test_seats_searched_in_worker_processes_play_the_same_games(net_file):
    """Two worker processes on one inference process: the same searches, so the same games
    as one process (fp32, deterministic search), and batches still shared."""
    common = f"net:{net_file}?nodes=16&compile=off&precision=fp32&device=cpu"
    cfg = MatchConfig(games=4, concurrency=4, adjudication=SHORT)
    one = play_match(common, "random?seed=3", cfg)
    two = play_match(f"{common}&workers=2", "random?seed=3", cfg)
    assert two.tally.games == 4 and not any(o.failed for o in two.outcomes)
    assert [o.moves for o in two.outcomes] == [o.moves for o in one.outcomes]
    stats = two.batching[two.engine_a]
    assert stats["workers"] == 2 and stats["leaves"] == one.batching[one.engine_a]["leaves"]


def test_net_spec_keys_go_to_search_or_evaluator():
    spec = parse_spec("net:default?nodes=50&c_init=2.0&backend=inline&device=cpu")
    search, evaluator, workers = net_configs(spec, 2)
    assert search.simulations == 50 and search.c_init == 2.0 and not search.root_noise
    assert search.temperature == 0.0 and evaluator.backend == "inline"
    assert search.policy_temperature == PLAY_POLICY_TEMPERATURE  # a net plays at its play default
    paper = net_configs(parse_spec("net:default?nodes=50&policy_temperature=1"), 2)[0]
    assert paper.policy_temperature == 1.0  # ... unless the spec says otherwise
    assert workers == 1  # on a CPU one process searches for every seat
    gathers = {net_configs(spec, seats)[0].leaves_per_gather for seats in (1, 2, 16)}
    assert gathers == {PLAY.leaves_per_gather}  # the same search at any concurrency...
    assert search.collisions == PLAY.collisions  # ... as UCI's (uci.searcher uses PLAY too)
    assert net_configs(parse_spec("net:default?leaves_per_gather=1"), 2)[0].leaves_per_gather == 1
    assert net_configs(parse_spec("net:default?nodes=50&workers=3"), 2)[2] == 2  # <= seats
    assert net_configs(parse_spec("net:default?nodes=1&workers=3"), 4)[2] == 1  # raw policy
    with pytest.raises(UserError, match="workers must be"):
        net_configs(parse_spec("net:default?workers=-1"), 1)
    with pytest.raises(UserError, match="unknown key 'cinit'"):
        net_configs(parse_spec("net:default?cinit=2"), 1)
    with pytest.raises(UserError, match="c_init"):
        net_configs(parse_spec("net:default?c_init=fast"), 1)


@pytest.mark.slow
def test_missing_net_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        play_match(f"net:{tmp_path}/none.safetensors?{INLINE}", "random", MatchConfig(games=2))
