"""SPRT (trinomial and pentanomial GSPRT) and gating."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frugalzero.errors import UserError
from frugalzero.evaluate.gating import gate
from frugalzero.evaluate.sprt import SprtConfig, llr, sprt
from frugalzero.stats import score_from_elo


def _run_trinomial(true_elo: float, cfg: SprtConfig, seed: int, draw: float = 0.3):
    """Play simulated games one at a time until the test decides."""
    rng = np.random.default_rng(seed)
    s = score_from_elo(true_elo)
    probs = [s - draw / 2, draw, 1 - s - draw / 2]
    w = d = lo = 0
    for n in range(1, 200_000):
        outcome = rng.choice(3, p=probs)
        w, d, lo = w + (outcome == 0), d + (outcome == 1), lo + (outcome == 2)
        if n % 10 == 0:
            result = sprt(w, d, lo, cfg)
            if result.decision:
                return result, n
    raise AssertionError("no decision")


def _run_pentanomial(true_elo: float, cfg: SprtConfig, seed: int):
    """Pairs of games where the opening favours one colour: game scores are correlated."""
    rng = np.random.default_rng(seed)
    penta = [0] * 5
    s = score_from_elo(true_elo)
    for n in range(1, 100_000):
        bias = rng.uniform(-0.3, 0.3)  # the opening's push towards whoever has White
        total = 0.0
        for sign in (1, -1):
            p = min(max(s + sign * bias, 0.0), 1.0)
            u = rng.random()
            total += 1.0 if u < p - 0.15 else 0.5 if u < p + 0.15 else 0.0
        penta[int(round(2 * total))] += 1
        if n % 5 == 0:
            result = sprt(0, 0, 0, cfg, penta)
            if result.decision:
                return result, n
    raise AssertionError("no decision")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sprt_accepts_h1_for_a_clearly_stronger_player(seed):
    result, games = _run_trinomial(60.0, SprtConfig(0, 20), seed)
    assert result.decision == "H1" and result.llr >= result.upper
    assert games < 5000


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sprt_accepts_h0_for_equal_players(seed):
    result, games = _run_trinomial(0.0, SprtConfig(0, 20), seed)
    assert result.decision == "H0" and result.llr <= result.lower


def test_pentanomial_sprt_decides_both_ways():
    assert _run_pentanomial(60.0, SprtConfig(0, 20), 7)[0].decision == "H1"
    assert _run_pentanomial(-20.0, SprtConfig(0, 20), 8)[0].decision == "H0"


def test_wald_bounds():
    result = sprt(0, 0, 0, SprtConfig(0, 5, alpha=0.05, beta=0.05))
    assert result.lower == pytest.approx(math.log(0.05 / 0.95))
    assert result.upper == pytest.approx(math.log(0.95 / 0.05))
    assert result.llr == 0.0 and result.decision is None


def test_llr_matches_the_normal_approximation_for_many_games():
    # for small Elo differences the GSPRT LLR is ~ N (s1 - s0)(2 s - s0 - s1) / (2 var)
    w, d, lo = 5200, 3000, 4800
    n = w + d + lo
    s = (w + d / 2) / n
    var = (w * (1 - s) ** 2 + d * (0.5 - s) ** 2 + lo * s**2) / n
    s0, s1 = score_from_elo(0), score_from_elo(5)
    approx = n * (s1 - s0) * (2 * s - s0 - s1) / (2 * var)
    exact = llr([lo, d, w], [0, 0.5, 1], 0, 5)
    assert exact == pytest.approx(approx, rel=0.02)


def test_gate_modes():
    assert gate("threshold", 55, 0, 45)
    assert gate("threshold", 50, 10, 40)  # 55% with draws counting half
    assert not gate("threshold", 54, 1, 45)
    assert gate("always", 0, 0, 100)
    assert not gate("threshold", 0, 0, 0)
    assert gate("sprt", 300, 100, 100, sprt_config=SprtConfig(0, 20))
    assert not gate("sprt", 100, 100, 100, sprt_config=SprtConfig(0, 20))
    with pytest.raises(UserError, match="gating mode"):
        gate("sometimes", 1, 1, 1)


@pytest.mark.usefixtures("stockfish")
def test_gate_match_plays_and_judges():
    from frugalzero.evaluate.gating import GateConfig, gate_match
    from frugalzero.evaluate.match import MatchConfig

    strong, weak = "stockfish?depth=1&elo=1350", "random"
    cfg = GateConfig(mode="sprt", games=40, sprt=SprtConfig(0, 300))
    accepted, result = gate_match(strong, weak, cfg, MatchConfig(concurrency=2))
    assert accepted and result.sprt.decision == "H1" and result.tally.games < 40
    accepted, result = gate_match(weak, strong, GateConfig(games=4), MatchConfig(concurrency=2))
    assert not accepted and result.tally.losses == 4
    assert gate_match(weak, strong, GateConfig(mode="always")) == (True, None)
