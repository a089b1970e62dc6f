"""The experiment's decision rule does what it states: simulated experiments whose arms are equal
are called different in alpha of them (5% at 95% confidence), and a true difference as large as
the stated minimum detectable effect is found with the stated power (0.8).

The model is the one the rule assumes: each arm-seed's final Elo is its arm's mean plus a seed
effect of s.d. ``seed_sd`` plus a rating error of s.d. ``sigma`` (the sigma its rating reports).
The figures of the pilot's design: four seed pairs, a seed s.d. of 85 and a rating error of
about 60 a net (85 a pair). Seeded, so the counts are fixed; the binomial s.d. of a rate is
0.15 points at alpha and 0.3 at the power over 20,000 experiments, 0.35 and 0.65 over 4,000:
the +-2 and +-5 points asked are more than 5 s.d. either way.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from frugalzero.experiment.results import ArmResult, KeptNet, UnitResult
from frugalzero.experiment.spec import load_spec
from frugalzero.experiment.verdict import compare, minimum_detectable_effect, verdict
from frugalzero.stats import elo_sd, paired_t

SEED_SD, SIGMA, PAIRS = 85.0, 60.0, 4


def _differences(rng, trials: int, pairs: int, true: float, seed_sd: float, sigma: float):
    """Paired differences of ``trials`` experiments: arm minus baseline of each seed."""
    seed, rating = rng.standard_normal((2, 2, trials, pairs))  # [arm, base] each
    arm, base = seed_sd * seed + sigma * rating
    return true + arm - base


def _rejections(d: np.ndarray) -> tuple[float, float]:
    """Shares of experiments the rule calls (better or worse, better)."""
    _, low, high = paired_t(d, 0.95)
    return float(np.mean((low > 0) | (high < 0))), float(np.mean(low > 0))


@pytest.mark.parametrize(
    "pairs, seed_sd, sigma", [(PAIRS, SEED_SD, SIGMA), (3, 120.0, 0.0), (6, 40.0, 90.0)]
)
def test_the_rule_holds_alpha_and_its_power_at_the_mde(pairs, seed_sd, sigma):
    rng = np.random.default_rng(70 + pairs)
    trials = 20_000
    null = _differences(rng, trials, pairs, 0.0, seed_sd, sigma)
    either, _ = _rejections(null)
    assert either == pytest.approx(0.05, abs=0.02)
    mde = minimum_detectable_effect(pairs, seed_sd, 0.95, 0.8, rating_error=sigma * math.sqrt(2))
    _, better = _rejections(_differences(rng, trials, pairs, mde, seed_sd, sigma))
    assert better == pytest.approx(0.8, abs=0.05)


def _arm(name: str, elos: np.ndarray, sigma: float, checkpoint: float) -> ArmResult:
    seeds = [
        UnitResult(seed=k, kept=[KeptNet(checkpoint, evaluations=1, elo=float(e), sigma=sigma)])
        for k, e in enumerate(elos)
    ]
    return ArmResult(name=name, seeds=seeds)


def test_the_verdict_calls_equal_arms_different_in_alpha_of_experiments():
    """Through ``compare``, as the experiment calls it: the rule once added the rating error to
    the spread that already holds it and called 0.6% of these experiments different."""
    rng = np.random.default_rng(61)
    trials, called = 4000, 0
    for _ in range(trials):
        seeds = SEED_SD * rng.standard_normal((2, PAIRS)) + SIGMA * rng.standard_normal((2, PAIRS))
        result = compare(
            _arm("a", 700 + seeds[0], SIGMA, 1.0), _arm("b", 700 + seeds[1], SIGMA, 1.0), 1.0, 0.95
        )
        called += result.conclusion != "inconclusive"
    assert called / trials == pytest.approx(0.05, abs=0.02)


def _first_pilot():
    """The first pilot's design (its spec was replaced by fork designs): two of its arms from
    nothing, four paired seeds, a seed s.d. of 85, each net rated by 20 games against each of
    two anchors."""
    spec = load_spec("smoke")
    rating = dataclasses.replace(spec.rating, games=20, anchors=["random", "fairy"])
    decision = dataclasses.replace(spec.decision, seed_sd=85.0)
    return dataclasses.replace(spec, seeds=[0, 1, 2, 3], rating=rating, decision=decision)


def test_the_verdicts_stated_mde_is_found_with_the_stated_power():
    """The pilot's spec as the experiment states it (its MDE from the seed s.d. and the rating
    protocol's error), its nets rated with that error: a true difference of the MDE is called
    "better" in 80% of experiments (at the 250 Elo once stated, without the rating error, the
    rule of the time called it in 51%)."""
    spec = _first_pilot()
    final = spec.checkpoints()[-1]
    sigma = elo_sd(spec.rating.games * len(spec.rating.anchors))  # the protocol's, at best
    seed_sd = spec.decision.seed_sd
    stated = verdict(
        spec,
        [_arm("puct", np.zeros(4), sigma, final), _arm("contempt", np.zeros(4), sigma, final)],
        True,
    )
    mde = stated.mde_elo
    rng = np.random.default_rng(62)
    trials, better = 4000, 0
    for _ in range(trials):
        elos = seed_sd * rng.standard_normal((2, 4)) + sigma * rng.standard_normal((2, 4))
        arms = [
            _arm("puct", 700 + elos[0], sigma, final),
            _arm("contempt", 700 + mde + elos[1], sigma, final),
        ]
        result = verdict(spec, arms, True)
        better += result.comparisons[0].conclusion == "better"
    assert better / trials == pytest.approx(0.8, abs=0.05)
    assert mde > 250  # the rating error is in it


def test_each_comparison_reports_the_seed_spread_and_the_rating_error_apart():
    rng = np.random.default_rng(63)
    pairs = 400
    elos = SEED_SD * rng.standard_normal((2, pairs)) + SIGMA * rng.standard_normal((2, pairs))
    result = compare(
        _arm("a", 800 + elos[0], SIGMA, 1.0), _arm("b", 700 + elos[1], SIGMA, 1.0), 1.0, 0.95
    )
    assert result.conclusion == "better" and result.difference == pytest.approx(100, abs=15)
    assert result.rating_error_sd == pytest.approx(SIGMA * math.sqrt(2), abs=0.1)
    assert result.spread_sd == pytest.approx(math.sqrt(2 * SEED_SD**2 + 2 * SIGMA**2), rel=0.08)
    assert result.seed_sd == pytest.approx(SEED_SD, rel=0.12)
    assert result.measured_by == ["anchors"] * pairs and 0 <= result.p_value < 1e-6


def test_one_pair_adds_the_assumed_seed_spread_and_head_to_head_games_measure_a_pair():
    one = compare(
        _arm("a", np.array([900.0]), 30.0, 1.0), _arm("b", np.array([700.0]), 40.0, 1.0), 1.0, 0.95
    )
    assert one.conclusion == "better"  # 200 against its rating error of 50 alone
    assert one.ci95 == pytest.approx([200 - 1.96 * 50, 200 + 1.96 * 50], abs=0.1)
    spread = compare(
        _arm("a", np.array([900.0]), 30.0, 1.0),
        _arm("b", np.array([700.0]), 40.0, 1.0),
        1.0,
        0.95,
        seed_sd=85.0,
    )
    half = 1.96 * math.sqrt(2 * 85**2 + 50**2)
    assert spread.conclusion == "inconclusive"
    assert spread.ci95 == pytest.approx([200 - half, 200 + half], abs=0.1)
    # seed 1's nets played each other: that pair is the head-to-head Elo, not the anchors'
    arm, base = (
        _arm("a", np.array([800.0, 900.0]), 30.0, 1.0),
        _arm("b", np.array([700.0, 700.0]), 30.0, 1.0),
    )
    arm.seeds[1].head_to_head = [2, 5, 10, 8, 5]
    mixed = compare(arm, base, 1.0, 0.95)
    assert mixed.measured_by == ["anchors", "head-to-head"] and mixed.units == ["seed-0", "seed-1"]
    assert mixed.differences[0] == 100.0 and 0 < mixed.differences[1] < 100
