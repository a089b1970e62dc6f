"""ε-Explore end to end: the network explores, a real Stockfish (tiny limit) labels playouts."""

from __future__ import annotations

import json
import statistics

import chess
import pytest
import torch

from frugalzero.chess.history import GameHistory
from frugalzero.cli import main
from frugalzero.data.shards import read_shard, shard_paths
from frugalzero.expert.explore import ExploreConfig, Explorer
from frugalzero.expert.playout import PlayoutTask
from frugalzero.nn.config import architecture
from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
from frugalzero.nn.model import PolicyValueNet


@pytest.fixture(scope="module")
def confident_net():
    """A tiny net whose policy has clear favourites, as a trained one would."""
    torch.manual_seed(0)
    net = PolicyValueNet(architecture("tiny")).eval()
    with torch.no_grad():
        net.policy[2].weight.mul_(300.0)
    return net


def inline(net) -> Evaluator:
    # one thread: a tiny net gains nothing from more, and a busy machine makes them wait
    config = EvaluatorConfig(
        device="cpu", backend="inline", precision="fp32", compile="off", threads=1
    )
    return Evaluator(net, config)


@pytest.mark.slow
def test_twenty_steps_give_legal_labels_in_range(stockfish, tmp_path, capsys):
    out = tmp_path / "labels"
    code = main(
        ["explore", "--steps", "20", "--out", str(out), "--engine-nodes", "20", "--workers", "2"]
        + ["--set", "playout_max_plies=120", "--json"]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    records = [r for path in shard_paths([out]) for r in read_shard(path)]
    assert summary["steps"] == 20
    assert summary["playouts"] == len(records) == 20  # no exploration game ended this soon
    assert summary["labels"] == sum(r.positions for r in records) > 20
    assert summary["failed"] == 0
    depths = []
    for record in records:
        assert record.method == "eps-explore" and record.net_id == summary["net_id"]
        board = chess.Board(record.start_fen)
        explored = 0
        for uci, target in zip(record.moves, record.targets):
            move = chess.Move.from_uci(uci)
            assert move in board.legal_moves, f"{uci} illegal in {board.fen()}"
            if target is None:
                explored += 1
                assert board.ply() == explored - 1  # history comes first, then only labels
            else:
                assert len(target.policy_indices) == 1 and target.policy_probs[0] == 1.0
                assert -1.0 <= target.expert_value <= 1.0
            board.push(move)
        assert explored >= 1
        depths.append(explored)
        if record.result is not None:
            assert board.outcome(claim_draw=True) is not None
    # 8 exploration games side by side: 20 steps reach depth 1 and 2 in all, 3 in four
    assert sorted(depths) == [1] * 8 + [2] * 8 + [3] * 4
    assert len({r.game_id for r in records}) == 20
    assert len(list(out.glob("explore-*.toml"))) == 1


def greedy_moves(evaluator: Evaluator, tasks: list[PlayoutTask]) -> list[str]:
    """The net's favourite move at each position a task's last move was played from."""
    inputs = []
    for task in tasks:
        history = GameHistory(chess.Board(task.start_fen))
        for uci in task.moves[:-1]:
            history.push(chess.Move.from_uci(uci))
        inputs.append(history.net_input())
    return [
        inp.moves[int(ev.priors.argmax())].uci()
        for inp, ev in zip(inputs, evaluator.evaluate(inputs))
    ]


def explore_lines(net, steps: int = 12, **settings) -> tuple[list[tuple[str, ...]], float]:
    """Positions explored (as move sequences) and the share of moves that were not the net's
    favourite."""
    config = ExploreConfig(games=8, **settings)
    evaluator = inline(net)
    explorer = Explorer(evaluator, config)
    lines, deviations, moves = [], 0, 0
    for _ in range(steps):
        tasks = explorer.step()
        assert len(tasks) == 8
        greedy = greedy_moves(evaluator, tasks)
        for task, best in zip(tasks, greedy):
            lines.append(task.moves)
            deviations += task.moves[-1] != best
            moves += 1
    return lines, deviations / moves


def test_without_noise_the_network_plays_its_favourite(confident_net):
    lines, deviation = explore_lines(confident_net, noise_epsilon=0.0, temperature=5.0)
    assert deviation == 0.0
    same, _ = explore_lines(confident_net, noise_epsilon=0.0, temperature=1.0, seed=99)
    assert same == lines  # neither the temperature nor the seed matters without noise


def test_noise_and_temperature_change_the_explored_positions(confident_net):
    hot, hot_dev = explore_lines(confident_net, seed=5)  # the α=0.3, ε=0.25, τ=5
    again, _ = explore_lines(confident_net, seed=5)
    other, _ = explore_lines(confident_net, seed=6)
    assert hot == again  # a fixed seed reproduces the walk
    assert hot != other
    _, cold_dev = explore_lines(confident_net, seed=5, temperature=1.0)
    _, faint_dev = explore_lines(confident_net, seed=5, noise_epsilon=0.05)
    # a flatter policy lets the noise overturn the favourite more often, and so does more noise
    assert hot_dev > max(2 * cold_dev, cold_dev + 0.1)
    assert hot_dev > max(2 * faint_dev, faint_dev + 0.1)
    assert len(set(hot)) > len(set(explore_lines(confident_net, seed=5, temperature=1.0)[0]))


@pytest.mark.slow
def test_bench_label_reports_both_rates(stockfish, capsys):
    args = ["bench", "label", "--steps", "4", "--rounds", "2", "--nodes", "20", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["labels_per_s"] > 0 and result["stockfish_only_labels_per_s"] > 0
    assert len(result["ratios"]) == 2
    assert result["ratio"] == pytest.approx(statistics.median(result["ratios"]), abs=2e-3)
    assert 0.3 < result["ratio"] < 3
    assert result["limit"] == "nodes=20" and result["engine_restarts"] == 0
