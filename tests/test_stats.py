"""``frugalzero.stats``: the head-to-head estimate of a pair from its game pairs against
published values, Student's t and the paired design's minimum detectable effect against tables,
and the Elo standard error of a number of games."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frugalzero.stats import (
    elo_from_score,
    elo_interval,
    elo_sd,
    head_to_head,
    minimum_detectable_effect,
    nct_sf,
    paired_t,
    paired_t_p_value,
    paired_t_power,
    pairs_for_effect,
    score_from_elo,
    t_quantile,
    t_sf,
)


# -- head to head (pentanomial) ---------------------------------------------------------------
@pytest.mark.parametrize(
    "ll, ld, wl, dd, wd, ww, elo, error, los",
    [
        # fastchess's tests/elo_test (EloPentanomial 1-3): Stats(ll, ld, wl, dd, wd, ww), its
        # diff(), error() (the half-width of the 95% interval in Elo) and los(); fishtest's
        # stat_util.get_elo applies the same formulas to [LL, LD, WL+DD, WD, WW]
        (34, 54, 31, 32, 64, 75, 55.58, 27.65, 1.0000),
        (332, 433, 457, 41, 333, 334, -8.64, 10.33, 0.0505),
        (7895, 8757, 5485, 200, 568, 9999, -21.04, 2.95, 0.0),
    ],
)
def test_head_to_head_matches_fastchess_and_fishtest(ll, ld, wl, dd, wd, ww, elo, error, los):
    match = head_to_head([ll, ld, wl + dd, wd, ww])
    assert match.pairs == ll + ld + wl + dd + wd + ww
    assert match.elo == pytest.approx(elo, abs=0.01)
    assert (match.high - match.low) / 2 == pytest.approx(error, abs=0.01)
    assert match.los == pytest.approx(los, abs=5e-5)  # fastchess prints it to 0.01%


def test_head_to_head_is_antisymmetric_and_its_sigma_is_the_intervals():
    counts = [3, 5, 10, 6, 4]
    ours, theirs = head_to_head(counts), head_to_head(counts[::-1])
    assert ours.elo == pytest.approx(-theirs.elo) and ours.sigma == pytest.approx(theirs.sigma)
    assert ours.los == pytest.approx(1 - theirs.los)
    assert (ours.low, ours.high) == pytest.approx((-theirs.high, -theirs.low))
    # for many pairs the interval is +- 1.96 sigma (the delta method's slope)
    big = head_to_head([c * 400 for c in counts])
    assert (big.high - big.low) / 2 == pytest.approx(1.96 * big.sigma, rel=1e-3)
    assert big.sigma == pytest.approx(ours.sigma / 20, rel=1e-2)
    ninety = head_to_head(counts, confidence=0.9)
    assert ninety.high - ninety.low < ours.high - ours.low and ninety.elo == ours.elo


def test_head_to_head_cancels_the_openings_bias_a_game_count_keeps():
    # 40 pairs that split 1-1 (each side wins with White) and 10 won 2-0: the same 60 wins
    # and 40 losses rated as single games have a far wider interval
    match = head_to_head([0, 0, 40, 0, 10])
    _, low, high = elo_interval(60, 0, 40)
    assert match.elo == pytest.approx(elo_from_score(0.6))
    assert match.high - match.low < 0.7 * (high - low)


def test_head_to_head_without_variance_is_bounded_like_wilson():
    even = head_to_head([0, 0, 10, 0, 0])  # every pair 1-1: the score is not known exactly
    assert even.elo == 0 and even.sigma > 0 and even.low < 0 < even.high and even.los == 0.5
    perfect = head_to_head([0, 0, 0, 0, 10])
    assert perfect.elo == math.inf and perfect.sigma == math.inf and perfect.high == math.inf
    assert 0 < perfect.low < math.inf and perfect.los > 0.999
    none = head_to_head([0, 0, 0, 0, 0])
    assert none.pairs == 0 and none.elo == 0 and none.sigma == math.inf and none.los == 0.5
    with pytest.raises(ValueError):
        head_to_head([1, 2, 3])


def test_head_to_head_sigma_is_the_spread_of_simulated_matches():
    # pairs of a player 80 Elo stronger with draws, the opening adding a White edge: the
    # sigma each match reports is the s.d. of the Elo over many matches
    rng = np.random.default_rng(7)
    s = score_from_elo(80)
    edge = 0.08  # White's extra expected score
    elos, sigmas = [], []
    for _ in range(2000):
        counts = [0] * 5
        for _pair in range(100):
            points = 0.0
            for white in (True, False):
                p = s + (edge if white else -edge)
                u = rng.random()
                points += 1.0 if u < p - 0.15 else 0.5 if u < p + 0.15 else 0.0
            counts[int(2 * points)] += 1
        match = head_to_head(counts)
        elos.append(match.elo)
        sigmas.append(match.sigma)
    assert np.mean(elos) == pytest.approx(80, abs=3)
    assert np.mean(sigmas) == pytest.approx(np.std(elos), rel=0.08)


# -- Student's t --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "p, df, table",
    [
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 9, 2.262),
        (0.8, 2, 1.061),
        (0.975, math.inf, 1.960),
    ],
)
def test_t_quantiles_match_the_table(p, df, table):
    assert t_quantile(p, df) == pytest.approx(table, abs=1e-3)
    assert t_quantile(1 - p, df) == pytest.approx(-table, abs=1e-3)


def test_the_distributions_are_scipy_stats():
    # scipy.special's functions, which scipy.stats' t and nct call, without its per-call cost
    from scipy import stats

    for p, df in [(0.975, 3), (0.8, 1), (0.01, 40)]:
        assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-12)
    assert t_quantile(0.9, math.inf) == pytest.approx(stats.norm.ppf(0.9), rel=1e-12)
    assert t_sf(2.5, 4) == pytest.approx(stats.t.sf(2.5, 4), rel=1e-10)
    assert nct_sf(2.0, 5, 1.5) == pytest.approx(stats.nct.sf(2.0, 5, 1.5), rel=1e-8)


def test_paired_t_is_the_textbook_interval_row_by_row():
    mean, low, high = paired_t([10.0, 30.0], 0.95)
    assert mean == 20 and high - mean == pytest.approx(12.706 * math.sqrt(200 / 2), rel=1e-4)
    rows = np.array([[10.0, 30.0, 20.0], [1.0, 2.0, 6.0]])
    means, lows, highs = paired_t(rows, 0.95)
    for row, m, lo, hi in zip(rows, means, lows, highs):
        se = np.std(row, ddof=1) / math.sqrt(3)
        assert (m, lo, hi) == pytest.approx(
            (row.mean(), row.mean() - 4.303 * se, row.mean() + 4.303 * se), abs=1e-2
        )
    with pytest.raises(ValueError):
        paired_t([1.0], 0.95)
    # t = 20 / (10 / sqrt 3) on 2 degrees of freedom, where P(|T| > t) = 1 - t / sqrt(t^2 + 2)
    t2 = 2 * math.sqrt(3)
    assert paired_t_p_value([10.0, 30.0, 20.0]) == pytest.approx(1 - t2 / math.sqrt(t2**2 + 2))
    assert paired_t_p_value([5.0, 5.0]) is None and paired_t_p_value([5.0]) is None


def test_the_minimum_detectable_effect_is_exact_on_the_noncentral_t():
    # the sample size tables (Cohen; G*Power's paired t): d_z = 0.5 at alpha 0.05 two-sided
    # needs 34 pairs for power 0.80 (0.8078 with 34, short of 0.80 with 33)
    assert paired_t_power(0.5, 34, 1.0, 0.95) == pytest.approx(0.8078, abs=1e-4)
    assert paired_t_power(0.5, 33, 1.0, 0.95) < 0.8
    assert 0.49 < minimum_detectable_effect(34, 1.0, 0.95, 0.8) < 0.5
    for pairs in (2, 3, 4, 10):
        mde = minimum_detectable_effect(pairs, 100.0, 0.95, 0.8)
        assert paired_t_power(mde, pairs, 100.0, 0.95) == pytest.approx(0.8, abs=1e-6)
        # the large-sample (t + t) * sd / sqrt(n) claims more than the design has
        approx = (t_quantile(0.975, pairs - 1) + t_quantile(0.8, pairs - 1)) * 100 / pairs**0.5
        assert mde > approx
    assert minimum_detectable_effect(1, 100.0, 0.95, 0.8) is None
    assert minimum_detectable_effect(4, 0.0, 0.95, 0.8) == 0.0
    big = minimum_detectable_effect(400, 100.0, 0.95, 0.8)
    assert big == pytest.approx((1.960 + 0.842) * 100 / 20, rel=1e-2)


def test_a_pilots_spread_sizes_its_follow_up_as_the_sample_size_tables_do():
    # the same table: d_z = 0.5 needs 34 pairs, d_z = 0.8 needs 15 (G*Power, paired t)
    assert pairs_for_effect(50.0, 100.0, 0.95, 0.8) == 34
    assert pairs_for_effect(80.0, 100.0, 0.95, 0.8) == 15
    for pairs in (3, 8, 40):  # the inverse of the minimum detectable effect
        mde = minimum_detectable_effect(pairs, 60.0, 0.95, 0.8)
        assert pairs_for_effect(mde * 1.001, 60.0, 0.95, 0.8) == pairs
        assert pairs_for_effect(mde * 0.99, 60.0, 0.95, 0.8) == pairs + 1
    assert pairs_for_effect(0.0, 60.0, 0.95, 0.8) is None
    assert pairs_for_effect(10.0, 0.0, 0.95, 0.8) == 2


# -- the Elo error of a number of games ---------------------------------------------------------
def test_elo_sd_is_347_over_root_n_at_an_even_score_and_matches_a_match_interval():
    assert elo_sd(1) == pytest.approx(800 / math.log(10))
    assert elo_sd(40) == pytest.approx(54.93, abs=0.01)
    assert elo_sd(100, draw_rate=0.5) < elo_sd(100) < elo_sd(100, score=0.8)
    assert elo_sd(0) == math.inf and elo_sd(10, score=1.0) == math.inf
    # the s.e. of a big match's Elo: its interval's half-width / 1.96
    _, low, high = elo_interval(3000, 4000, 3000)
    assert elo_sd(10_000, 0.5, 0.4) == pytest.approx((high - low) / 2 / 1.96, rel=1e-3)
