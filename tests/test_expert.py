"""Expert labelling, pure parts: ε-Explore's move choice, playout histories, engine settings."""

from __future__ import annotations

import chess
import chess.engine
import numpy as np
import pytest

from frugalzero.chess.rules import game_result
from frugalzero.errors import UserError
from frugalzero.expert.engine import EngineConfig, EngineSession, resolve_command
from frugalzero.expert.explore import ExploreConfig, explore_choice
from frugalzero.expert.playout import push_trimmed, replay


def _peaked_priors(rng: np.random.Generator, n: int = 30) -> np.ndarray:
    logits = rng.normal(size=n) * 2.5
    p = np.exp(logits - logits.max())
    return p / p.sum()


def test_no_noise_plays_the_networks_favourite_whatever_the_temperature():
    rng = np.random.default_rng(1)
    for _ in range(50):
        priors = _peaked_priors(rng)
        for tau in (0.5, 1.0, 5.0, 100.0):
            assert explore_choice(priors, rng, epsilon=0.0, temperature=tau) == priors.argmax()


def test_same_seed_same_choices_other_seed_other_choices():
    priors = [_peaked_priors(np.random.default_rng(i)) for i in range(200)]

    def run(seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        return [explore_choice(p, rng) for p in priors]

    assert run(7) == run(7)
    assert run(7) != run(8)


def deviation_rate(tau: float, epsilon: float = 0.25, seed: int = 3) -> float:
    """How often the played move is not the network's favourite (same noise for every tau)."""
    rng = np.random.default_rng(seed)
    priors = [_peaked_priors(np.random.default_rng(1000 + i)) for i in range(1000)]
    picks = [explore_choice(p, rng, 0.3, epsilon, tau) for p in priors]
    return float(np.mean([pick != p.argmax() for pick, p in zip(picks, priors)]))


def test_temperature_and_noise_raise_exploration():
    rates = {tau: deviation_rate(tau) for tau in (1.0, 5.0, 1e6)}
    # a flatter policy lets the same noise overturn the favourite more often
    assert rates[1.0] + 0.15 < rates[5.0] < rates[1e6]
    assert deviation_rate(5.0, epsilon=0.1) + 0.1 < rates[5.0]
    # an infinitely hot policy is uniform: the noise alone picks, so the favourite wins ~1/n
    assert rates[1e6] > 0.9


def test_infinite_temperature_plays_the_noise_argmax():
    priors = _peaked_priors(np.random.default_rng(5))
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    pick = explore_choice(priors, rng_a, 0.3, 0.25, 1e9)
    noise = rng_b.dirichlet(np.full(len(priors), 0.3))
    assert pick == noise.argmax()


def test_single_legal_move_is_played_without_drawing_noise():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert explore_choice(np.array([1.0]), rng) == 0
    assert rng.bit_generator.state == state


def test_trimmed_history_is_the_same_game():
    moves = ("e2e4", "g8f6", "f1c4", "f6g8", "c4f1", "g8f6", "f1c4", "f6g8", "c4f1", "g8f6")
    full = chess.Board()
    trimmed = chess.Board()
    for uci in moves:
        move = chess.Move.from_uci(uci)
        full.push(move)
        trimmed = push_trimmed(trimmed, move)
        assert trimmed.fen() == full.fen()
        assert trimmed.is_repetition(3) == full.is_repetition(3)
    assert len(trimmed.move_stack) == len(moves) - 1  # restarted after the pawn move
    assert game_result(trimmed) == 0.0  # the repetition was still seen
    with pytest.raises(ValueError, match="illegal move"):
        replay(chess.STARTING_FEN, ("e2e5",))


def test_engine_config_is_checked():
    with pytest.raises(UserError, match="set a limit"):
        EngineConfig(nodes=0)
    with pytest.raises(UserError, match="engine.hash_mb"):
        EngineConfig(hash_mb=-1)
    with pytest.raises(UserError, match="temperature"):
        ExploreConfig(temperature=0)
    assert EngineSession(EngineConfig(nodes=0, movetime_ms=50), "sf").go == b"go movetime 50\n"
    assert EngineSession(EngineConfig(nodes=400, depth=8), "sf").go == b"go nodes 400 depth 8\n"
    assert EngineConfig(nodes=0, depth=3).describe_limit() == "depth=3"
    assert EngineConfig(nodes=0, movetime_ms=100).deadline() == pytest.approx(20.1)
    with pytest.raises(UserError, match="not found"):
        resolve_command("no-such-engine-xyz")
    with pytest.raises(UserError, match="no such executable"):
        resolve_command("/nonexistent/stockfish")
