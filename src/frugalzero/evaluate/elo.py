"""Maximum-likelihood Elo ratings of many players from all their games.

The model is the logistic one of ``frugalzero.stats`` (where a single match's Elo, its interval
and LOS are): the ratings maximise the likelihood of all games (Newton's method on a concave
function), anchors held at their given ratings; their intervals come from the inverse of the
Fisher information. A player who won (or lost) every game against the rest has no finite
maximum; it alone gets a prior (virtual draws on its own pairings) and is rated against the
others held where the rest of the games put them, so a perfect score moves nobody else.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from frugalzero.stats import Z95, C

# ---------------------------------------------------------------- maximum likelihood ratings


@dataclass
class PlayerRating:
    elo: float
    ci95: tuple[float, float]
    games: int
    points: float
    sigma: float = 0.0
    """Standard error of ``elo`` (0 for an anchor)."""

    @property
    def score(self) -> float:
        return self.points / self.games if self.games else 0.0


@dataclass
class Ratings:
    """Everyone's rating, with what is needed to compare two of them."""

    players: dict[str, PlayerRating]
    covariance: np.ndarray
    names: list[str]
    anchors: dict[str, float]
    prior_draws: float = 0.0
    """Virtual draws added to each pairing of an ``unbounded`` player (0 when there is none)."""
    unbounded: list[str] = field(default_factory=list)
    """Players whose exact maximum-likelihood rating is infinite (perfect scores)."""
    iterations: int = 0
    groups: list[list[str]] = field(default_factory=list)
    """Players linked by games; ratings compare only within a group (each anchor-less group
    is centred on 0)."""

    def los(self, a: str, b: str) -> float:
        """Probability that ``a`` is stronger than ``b``, from the ratings' joint uncertainty."""
        i, j = self.names.index(a), self.names.index(b)
        var = self.covariance[i, i] + self.covariance[j, j] - 2 * self.covariance[i, j]
        diff = self.players[a].elo - self.players[b].elo
        if var <= 0:
            return 0.5 if diff == 0 else float(diff > 0)
        return 0.5 * (1.0 + math.erf(diff / math.sqrt(2.0 * var)))


Game = tuple[str, str, float]  # white, black, white's score (1, 0.5, 0)


def _pair_table(games: Iterable[Game]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Players, games played and points scored for every ordered pair."""
    counts: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    names: dict[str, None] = {}
    for white, black, score in games:
        if white == black:
            continue
        names.setdefault(white)
        names.setdefault(black)
        counts[white, black][0] += 1
        counts[white, black][1] += score
        counts[black, white][0] += 1
        counts[black, white][1] += 1 - score
    order = list(names)
    index = {name: i for i, name in enumerate(order)}
    n = np.zeros((len(order), len(order)))
    s = np.zeros_like(n)
    for (a, b), (played, points) in counts.items():
        n[index[a], index[b]] = played
        s[index[a], index[b]] = points
    return order, n, s


def _reach(edges: np.ndarray, start: int) -> set[int]:
    seen, stack = {start}, [start]
    while stack:
        i = stack.pop()
        for j in np.nonzero(edges[i])[0]:
            if int(j) not in seen:
                seen.add(int(j))
                stack.append(int(j))
    return seen


def _components(n: np.ndarray) -> list[list[int]]:
    left, out = set(range(len(n))), []
    while left:
        comp = _reach(n > 0, min(left))
        out.append(sorted(comp))
        left -= comp
    return out


def unbounded_players(n: np.ndarray, s: np.ndarray, fixed: set[int]) -> list[int]:
    """Players whose maximum-likelihood rating runs off to infinity.

    The maximum exists exactly when, within each group of players linked by games (anchors
    merged into one node), everyone can reach everyone through "scored points against" edges
    (Zermelo's condition). Returned: the players outside the group's largest mutually
    reachable set (or the anchors' one).
    """
    beats = s > 0  # i took points from j
    bad: list[int] = []
    for comp in _components(n):
        members = set(comp)
        # an anchor-less group is fine iff strongly connected; with anchors, merge them
        anchors = members & fixed
        root = min(anchors) if anchors else comp[0]
        edges = beats.copy()
        for a in anchors:
            for b in anchors:
                edges[a, b] = True
        forward = _reach(edges, root)
        backward = _reach(edges.T, root)
        core = forward & backward
        if core != members:
            if not anchors:  # keep the largest strongly connected set as the reference
                best = core
                for i in comp:
                    c = _reach(edges, i) & _reach(edges.T, i)
                    if len(c) > len(best):
                        best = c
                core = best
            bad.extend(sorted(members - core))
    return bad


def mle_ratings(
    games: Iterable[Game],
    anchors: dict[str, float] | None = None,
    prior_draws: float | None = None,
    z: float = Z95,
) -> Ratings:
    """Maximum-likelihood Elo of every player, ``anchors`` held at their given ratings.

    Without an anchor, a group of players is centred on 0. If the exact maximum does not exist
    (a player won or lost every game against the rest), the others are rated from their games
    among themselves, which is where the exact maximum puts them (the perfect scorer's games
    weigh nothing at its infinite rating); the players concerned are named in ``unbounded`` and
    rated against the others held fixed, with ``prior_draws`` virtual draws added to each of
    their own pairings (None: one, BayesElo's remedy at half its default; 0: infinities). Their
    sigma adds the others' uncertainty (delta method), and an anchor-less group is centred on
    its players of finite rating.
    """
    names, n, s = _pair_table(games)
    anchors = dict(anchors or {})
    missing = sorted(set(anchors) - set(names))
    for name in missing:  # an anchor without games still has its rating
        names.append(name)
    if missing:
        size = len(names)
        n = np.pad(n, ((0, size - len(n)), (0, size - len(n))))
        s = np.pad(s, ((0, size - len(s)), (0, size - len(s))))
    index = {name: i for i, name in enumerate(names)}
    fixed = {index[a] for a in anchors}
    bad = unbounded_players(n, s, fixed)
    prior_draws = (1.0 if prior_draws is None else prior_draws) if bad else 0.0
    inner = np.ones(len(names), dtype=bool)
    inner[bad] = False
    keep = np.outer(inner, inner)  # the games among players of finite rating
    r, cov, iterations = _newton(n * keep, s * keep, names, anchors, index)
    if bad and prior_draws > 0:
        own = (n > 0) & ~keep  # the pairings of an unbounded player
        n_fit = n + prior_draws * own
        s_fit = s + 0.5 * prior_draws * own
        held = {names[i]: float(r[i]) for i in np.flatnonzero(inner)}
        r, _, more = _newton(n_fit, s_fit, names, held, index)
        iterations += more
        cov = _with_unbounded(cov, _information(r, n_fit), np.array(bad), np.flatnonzero(inner))
    elif bad:
        r = r.copy()
        for i in bad:  # the maximum is at infinity: say so instead of a large finite number
            r[i] = math.inf if s[i].sum() >= n[i].sum() / 2 else -math.inf
    players = {}
    for name, i in index.items():
        sigma = math.sqrt(max(cov[i, i], 0.0))
        elo = float(r[i])
        players[name] = PlayerRating(
            elo, (elo - z * sigma, elo + z * sigma), int(n[i].sum()), float(s[i].sum()), sigma
        )
    groups = [[names[i] for i in comp] for comp in _components(n)]
    unbounded = [names[i] for i in bad]
    return Ratings(players, cov, names, anchors, prior_draws, unbounded, iterations, groups)


def _information(r: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The Fisher information of the ratings ``r`` from ``n`` games per ordered pair."""
    d = C * (r[:, None] - r[None, :])
    e = 1.0 / (1.0 + np.exp(-d))
    w = C * C * n * e * (1 - e)
    return np.diag(w.sum(axis=1)) - w


def _with_unbounded(
    cov: np.ndarray, info: np.ndarray, bad: np.ndarray, rest: np.ndarray
) -> np.ndarray:
    """``cov`` (of the players of finite rating) with the players ``bad`` added, each rated
    against the rest held fixed: their conditional covariance (the inverse information) plus
    the rest's, carried through the fit (r_bad moves by J dr_rest, J = -I_bb^-1 I_br)."""
    out = cov.copy()
    conditional = np.linalg.pinv(info[np.ix_(bad, bad)])
    carry = -conditional @ info[np.ix_(bad, rest)]
    rest_cov = cov[np.ix_(rest, rest)]
    out[np.ix_(bad, bad)] = conditional + carry @ rest_cov @ carry.T
    out[np.ix_(bad, rest)] = carry @ rest_cov
    out[np.ix_(rest, bad)] = (carry @ rest_cov).T
    return out


def _newton(
    n: np.ndarray, s: np.ndarray, names: list[str], anchors: dict[str, float], index: dict
) -> tuple[np.ndarray, np.ndarray, int]:
    size = len(names)
    r = np.zeros(size)
    for name, value in anchors.items():
        r[index[name]] = value
    comps = _components(n)
    free: list[int] = []
    centred: list[list[int]] = []  # anchor-less groups: one member pinned, centred afterwards
    for comp in comps:
        anchored = [i for i in comp if names[i] in anchors]
        start = float(np.mean([r[i] for i in anchored])) if anchored else 0.0
        for i in comp:
            if names[i] not in anchors:
                r[i] = start
        if anchored:
            free.extend(i for i in comp if names[i] not in anchors)
        else:
            free.extend(comp[1:])
            centred.append(comp)
    free_idx = np.array(sorted(free), dtype=int)

    def loglik(x: np.ndarray) -> float:
        d = C * (x[:, None] - x[None, :])
        # s*log(E) + (n-s)*log(1-E) with E = sigmoid(d), written stably
        return float(np.sum(s * -np.logaddexp(0, -d) + (n - s) * -np.logaddexp(0, d))) / 2

    iterations = 0
    current = loglik(r)
    while len(free_idx) and iterations < 200:
        iterations += 1
        d = C * (r[:, None] - r[None, :])
        e = 1.0 / (1.0 + np.exp(-d))
        grad = C * np.sum(s - n * e, axis=1)
        w = C * C * n * e * (1 - e)
        info = np.diag(w.sum(axis=1)) - w
        g, h = grad[free_idx], info[np.ix_(free_idx, free_idx)]
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(h, g, rcond=None)[0]
        t = 1.0
        while True:  # step halving keeps every iteration an ascent (huge first steps overshoot)
            trial = r.copy()
            trial[free_idx] += t * np.clip(step, -2000, 2000)
            value = loglik(trial)
            if value >= current - 1e-12 or t < 1e-6:
                break
            t /= 2
        r, current = trial, value
        if np.max(np.abs(t * step)) < 1e-7:
            break
    info = _information(r, n)
    cov = np.zeros((size, size))
    for comp in comps:
        anchored = any(names[i] in anchors for i in comp)
        idx = np.array([i for i in comp if names[i] not in anchors], dtype=int)
        if len(idx) == 0:
            continue
        sub = info[np.ix_(idx, idx)]
        if anchored:
            inv = np.linalg.pinv(sub)
        else:
            # centred group: the covariance of the sum-zero solution is the pseudo-inverse
            r[idx] -= r[idx].mean()
            inv = np.linalg.pinv(sub)
        cov[np.ix_(idx, idx)] = inv
    return r, cov, iterations
