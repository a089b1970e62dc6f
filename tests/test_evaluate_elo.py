"""Elo arithmetic, match intervals and maximum-likelihood ratings."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from frugalzero.evaluate.elo import mle_ratings
from frugalzero.stats import elo_from_score, elo_interval, los, score_from_elo, score_interval


def test_75_percent_is_190_8_elo():
    assert elo_from_score(0.75) == pytest.approx(190.85, abs=0.01)
    assert elo_from_score(0.25) == pytest.approx(-190.85, abs=0.01)
    assert elo_from_score(0.5) == 0.0
    assert elo_from_score(1.0) == math.inf and elo_from_score(0.0) == -math.inf


@given(st.floats(min_value=-1500, max_value=1500))
def test_score_and_elo_invert_each_other(diff):
    assert elo_from_score(score_from_elo(diff)) == pytest.approx(diff, abs=1e-6)


def test_match_interval_narrows_as_games_grow():
    widths = []
    for n in (10, 100, 1000, 10000):
        elo, lo, hi = elo_interval(4 * n, 3 * n, 3 * n)
        assert lo < elo < hi
        widths.append(hi - lo)
    assert all(a > 2.5 * b for a, b in zip(widths, widths[1:]))  # ~sqrt(10) per step


def test_pentanomial_interval_is_tighter_when_pairs_cancel_the_opening():
    # 100 pairs that mostly split 1-1 (each side wins with White): same W/D/L, less variance
    wins, draws, losses = 120, 0, 80
    penta = [0, 0, 80, 0, 20]  # 80 pairs 1-1 and 20 pairs 2-0: 120 wins, 80 losses
    _, lo_t, hi_t = elo_interval(wins, draws, losses)
    _, lo_p, hi_p = elo_interval(wins, draws, losses, penta)
    assert hi_p - lo_p < 0.7 * (hi_t - lo_t)


def test_interval_covers_the_truth_about_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    true, n, hits, trials = 120.0, 200, 0, 400
    s = score_from_elo(true)
    p_draw = 0.3
    p_win = s - p_draw / 2
    for _ in range(trials):
        w, d, lo_ = rng.multinomial(n, [p_win, p_draw, 1 - p_win - p_draw])
        _, lo, hi = elo_interval(int(w), int(d), int(lo_))
        hits += lo <= true <= hi
    assert 0.91 <= hits / trials <= 0.98


def test_all_lost_still_has_a_finite_upper_bound():
    mean, lo, hi = score_interval(0, 0, 10)
    assert mean == 0 and lo == 0 and 0 < hi < 0.35


def test_los():
    assert los(5, 5) == 0.5
    assert los(20, 5) > 0.99 and los(5, 20) < 0.01
    assert los(0, 0) == 0.5


def _chain_games() -> list[tuple[str, str, float]]:
    """A beats B 3:1, B beats C 3:1, C and D draw 2:2 in wins (colours alternate)."""
    games = []
    for strong, weak in (("A", "B"), ("B", "C")):
        for i in range(40):
            score = 1.0 if i % 4 else 0.0  # 30 wins, 10 losses: 75%
            games.append((strong, weak, score) if i % 2 else (weak, strong, 1 - score))
    for i in range(20):
        games.append(("C", "D", 1.0 if i % 2 else 0.0))
    return games


def test_chain_of_known_results_gives_the_exact_ratings():
    # on a chain (a tree of pairings) the maximum-likelihood difference of each pair is exactly
    # the Elo of its own score
    r = mle_ratings(_chain_games(), {"C": 0.0})
    assert r.players["B"].elo == pytest.approx(190.85, abs=0.05)
    assert r.players["A"].elo == pytest.approx(381.70, abs=0.1)
    assert r.players["D"].elo == pytest.approx(0.0, abs=0.05)
    assert r.players["C"].ci95 == (0.0, 0.0)
    assert r.players["A"].sigma > r.players["B"].sigma > 0  # errors add up along the chain
    assert r.players["A"].games == 40 and r.players["B"].games == 80
    assert len(r.groups) == 1
    split = mle_ratings(_chain_games() + [("X", "Y", 1.0), ("X", "Y", 0.0)], {"C": 0.0})
    assert len(split.groups) == 2 and split.players["X"].elo == pytest.approx(0.0)


def test_ratings_satisfy_the_likelihood_equations_on_a_cycle():
    # with cycles there is no closed form; the maximum is where every player's points equal
    # the points the ratings predict
    rng = random.Random(5)
    truth = {"a": 0, "b": 150, "c": 300, "d": -200, "e": 80}
    games = []
    names = list(truth)
    for _ in range(2000):
        x, y = rng.sample(names, 2)
        p = score_from_elo(truth[x] - truth[y])
        u = rng.random()
        games.append((x, y, 1.0 if u < p - 0.1 else 0.5 if u < p + 0.1 else 0.0))
    r = mle_ratings(games)
    for name in names:
        expected = sum(
            score_from_elo(r.players[w].elo - r.players[b].elo)
            if w == name
            else 1 - score_from_elo(r.players[w].elo - r.players[b].elo)
            for w, b, _ in games
            if name in (w, b)
        )
        assert expected == pytest.approx(r.players[name].points, abs=1e-4)
    assert sum(p.elo for p in r.players.values()) == pytest.approx(0.0, abs=1e-6)
    # and the ratings recover the truth's differences within their intervals (loosely)
    for name in names:
        diff = (r.players[name].elo - r.players["a"].elo) - (truth[name] - truth["a"])
        assert abs(diff) < 4 * math.hypot(r.players[name].sigma, r.players["a"].sigma) + 1


def test_intervals_of_ratings_narrow_as_games_grow():
    small = mle_ratings(_chain_games(), {"C": 0.0})
    big = mle_ratings(_chain_games() * 16, {"C": 0.0})
    assert big.players["A"].elo == pytest.approx(small.players["A"].elo, abs=0.1)
    assert big.players["A"].sigma == pytest.approx(small.players["A"].sigma / 4, rel=1e-3)


def test_perfect_scores_are_named_and_regularised():
    games = [("X", "Y", 1.0)] * 6 + [("Y", "Z", 0.5)] * 4
    exact = mle_ratings(games, prior_draws=0)
    assert exact.unbounded == ["X"] and exact.players["X"].elo == math.inf
    prior = mle_ratings(games)
    assert prior.unbounded == ["X"] and prior.prior_draws == 1.0
    assert 200 < prior.players["X"].elo - prior.players["Y"].elo < 600


def _star(results: dict[str, tuple[int, int, int]]) -> list[tuple[str, str, float]]:
    """Each net's (wins, draws, losses) against the anchor "A", colours alternating."""
    games = []
    for net, (wins, draws, losses) in results.items():
        scores = [1.0] * wins + [0.5] * draws + [0.0] * losses
        for i, score in enumerate(scores):
            games.append((net, "A", score) if i % 2 else ("A", net, 1 - score))
    return games


def test_a_perfect_score_moves_no_other_rating():
    # nets rated against an anchor, as an experiment rates its kept nets: one more net that
    # wins every game must leave the others where their own games put them (a virtual draw
    # added to every pairing once moved a 3-of-4 net from 845.8 to 802.2)
    anchors = {"A": 655.0}
    nets = {"n1": (3, 0, 1), "n2": (1, 2, 1), "n3": (5, 3, 12)}
    before = mle_ratings(_star(nets), anchors)
    after = mle_ratings(_star(nets | {"perfect": (4, 0, 0)}), anchors)
    assert before.unbounded == [] and after.unbounded == ["perfect"]
    assert before.players["n1"].elo == pytest.approx(655 + 190.85, abs=0.01)
    for net in nets:
        assert after.players[net].elo == pytest.approx(before.players[net].elo, abs=0.5)
        assert after.players[net].sigma == pytest.approx(before.players[net].sigma, rel=1e-6)
    # the perfect scorer alone gets its virtual draw: 4.5 of 5 against the anchor
    assert after.players["perfect"].elo == pytest.approx(655 + elo_from_score(0.9), abs=0.01)
    assert 0 < after.players["perfect"].sigma < math.inf
    assert after.players["perfect"].games == 4 and after.players["perfect"].points == 4.0
    zero = mle_ratings(_star(nets | {"zero": (0, 0, 6)}), anchors)
    assert zero.unbounded == ["zero"] and zero.players["zero"].elo < 655 - 300
    assert zero.players["n3"].elo == pytest.approx(before.players["n3"].elo, abs=0.5)


def test_a_perfect_score_in_a_pool_without_anchors_moves_no_other_rating():
    # a pool centred on 0 stays centred on its players of finite rating; a player beating
    # several of them, and one losing to a single one, change none of their ratings
    rng = random.Random(11)
    truth = {"a": 0, "b": 120, "c": -80, "d": 200}
    games = []
    for _ in range(400):
        x, y = rng.sample(list(truth), 2)
        p = score_from_elo(truth[x] - truth[y])
        u = rng.random()
        games.append((x, y, 1.0 if u < p - 0.15 else 0.5 if u < p + 0.15 else 0.0))
    before = mle_ratings(games)
    extra = [("top", "a", 1.0), ("b", "top", 0.0), ("top", "d", 1.0), ("bottom", "c", 0.0)]
    after = mle_ratings(games + extra * 3)
    assert sorted(after.unbounded) == ["bottom", "top"]
    for name in truth:
        assert after.players[name].elo == pytest.approx(before.players[name].elo, abs=0.5)
    assert after.players["top"].elo > max(before.players[n].elo for n in truth)
    assert after.players["bottom"].elo < before.players["c"].elo
    assert after.los("top", "d") > 0.9
    exact = mle_ratings(games + extra * 3, prior_draws=0)
    assert exact.players["top"].elo == math.inf and exact.players["bottom"].elo == -math.inf
    assert exact.players["a"].elo == pytest.approx(before.players["a"].elo, abs=0.5)


def test_a_perfect_scorers_sigma_carries_its_opponents_uncertainty():
    # P beat only B, so P = B + (its own games' estimate): var(P) = var(own) + var(B)
    games = [("A", "B", 1.0), ("A", "B", 0.0), ("B", "A", 0.5)] * 4 + [("P", "B", 1.0)] * 5
    free = mle_ratings(games)
    held = mle_ratings(games, {"A": free.players["A"].elo, "B": free.players["B"].elo})
    own = held.players["P"].sigma  # B held fixed: P's own games only
    assert free.players["P"].elo == pytest.approx(held.players["P"].elo, abs=1e-6)
    assert free.players["P"].sigma ** 2 == pytest.approx(own**2 + free.players["B"].sigma ** 2)


def test_los_between_rated_players():
    r = mle_ratings(_chain_games(), {"C": 0.0})
    assert r.los("A", "B") > 0.99
    assert r.los("C", "D") == pytest.approx(0.5, abs=0.01)


def _write_pgn(path, games):
    lines = []
    for i, (white, black, score) in enumerate(games):
        result = {1.0: "1-0", 0.0: "0-1", 0.5: "1/2-1/2"}[score]
        lines.append(
            f'[Event "t"]\n[Site "?"]\n[Date "????.??.??"]\n[Round "{i + 1}"]\n'
            f'[White "{white}"]\n[Black "{black}"]\n[Result "{result}"]\n\n1. e4 e5 {result}\n'
        )
    lines.append('[White "A"]\n[Black "B"]\n[Result "*"]\n\n1. d4 *\n')  # unfinished: skipped
    path.write_text("\n".join(lines))


def test_elo_command_reproduces_the_chain(tmp_path, capsys):
    from frugalzero.cli import main

    path = tmp_path / "chain.pgn"
    _write_pgn(path, _chain_games())
    assert main(["elo", str(path), "--anchor", "C=0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ratings = out["ratings"]
    assert ratings["A"]["elo"] == pytest.approx(381.7, abs=2)
    assert ratings["B"]["elo"] == pytest.approx(190.8, abs=2)
    assert ratings["B"]["ci95"][0] < 190.8 < ratings["B"]["ci95"][1]
    assert ratings["A"]["games"] == 40
    assert out["skipped"] == 1 and out["games"] == 100


def test_elo_command_errors_are_one_line(tmp_path, capsys):
    from frugalzero.cli import main

    path = tmp_path / "chain.pgn"
    _write_pgn(path, _chain_games())
    assert main(["elo", str(path), "--anchor", "Nobody=100"]) == 2
    assert "Nobody" in capsys.readouterr().err
    assert main(["elo", str(tmp_path / "missing.pgn")]) == 2
    assert "not found" in capsys.readouterr().err
