"""The rating ladder: an engine plays rungs of known rating; its rating comes out with a 95%
interval on one fixed scale (Glaurung 2.2 = 2793, CCRL 40/40).

Nominal ``UCI_Elo`` is not a rating, so the rungs' ratings come from a calibration table shipped
with the package (``assets/ladder.json``, made by ``frugalzero ladder --calibrate``). The ladder
finds the engine's level by itself: it plays a few games against the rung nearest its current
estimate (starting in the middle; halving the rest of the ladder while every game is lost or
won), re-estimates (maximum likelihood with the rungs held at their ratings, one virtual draw
per rung while all games are won or lost), and repeats until the ``neighbours`` rungs nearest
the estimate each have ``games_per_rung`` games. The interval adds the rungs' own calibration
uncertainty to that of the games.

A rating goes on from the games of an earlier one (``resumed_tallies``, read from its PGN): a
killed rating loses no game, and a finished one is narrowed by asking for more games per rung.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from frugalzero.errors import UserError
from frugalzero.evaluate.elo import mle_ratings
from frugalzero.evaluate.match import MatchConfig, Tally, play_match
from frugalzero.evaluate.pgn import PgnStats, read_headers
from frugalzero.evaluate.specs import parse_spec
from frugalzero.results import SCORE
from frugalzero.stats import Z95


@dataclass(frozen=True)
class Rung:
    name: str
    """Engine spec string."""
    elo: float
    sigma: float
    """Standard error of ``elo`` from the calibration (0 for the anchor)."""
    games: int = 0
    """Calibration games behind the rating."""


@dataclass
class LadderTable:
    rungs: list[Rung]
    meta: dict = field(default_factory=dict)
    added: dict[str, dict] = field(default_factory=dict)
    """Rungs added after the calibration (``ladder --add-rung``): how, and their games."""

    def by_name(self) -> dict[str, Rung]:
        return {r.name: r for r in self.rungs}


def table_path() -> Path:
    return Path(str(resources.files("frugalzero") / "assets" / "ladder.json"))


def load_table(path: str | Path | None = None) -> LadderTable:
    """The calibration table (the shipped one by default)."""
    path = Path(path) if path else table_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rungs = [
            Rung(r["name"], float(r["elo"]), float(r.get("sigma", 0.0)), int(r.get("games", 0)))
            for r in data["rungs"]
        ]
    except FileNotFoundError:
        raise UserError(
            f"{path}: ladder table not found (make one: frugalzero ladder --calibrate)"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a ladder table ({exc})") from None
    if not rungs:
        raise UserError(f"{path}: ladder table has no rungs")
    meta = {k: v for k, v in data.items() if k != "rungs"}
    added = {r["name"]: r["added"] for r in data["rungs"] if isinstance(r.get("added"), dict)}
    return LadderTable(sorted(rungs, key=lambda r: r.elo), meta, added)


def select_rungs(table: LadderTable, names: list[str] | None) -> list[Rung]:
    """The rungs to use: all, or those named (by spec string or by position from 0)."""
    if not names:
        return list(table.rungs)
    known = table.by_name()
    out = []
    for name in names:
        spec = name.strip()
        if spec.isdigit() and int(spec) < len(table.rungs):
            out.append(table.rungs[int(spec)])
            continue
        canonical = parse_spec(spec).name
        if canonical not in known:
            raise UserError(
                f"rung {spec!r} is not in the ladder table (see frugalzero ladder --list)"
            )
        out.append(known[canonical])
    return sorted(set(out), key=lambda r: r.elo)


@dataclass
class LadderConfig:
    """How an engine is placed on the ladder."""

    games_per_rung: int = 20
    """Games against each of the rungs nearest the engine (even: whole opening pairs)."""
    neighbours: int = 3
    """Rungs near the estimate that must each get ``games_per_rung`` games."""
    probe_games: int = 4
    """Games per step while still searching for the engine's level."""
    max_games: int = 0
    """Most games in all; 0 = games_per_rung * (neighbours + 2)."""


@dataclass
class LadderResult:
    engine: str
    tallies: dict[str, Tally]
    rungs: dict[str, Rung]
    elo: float
    ci95: tuple[float, float]
    sigma_games: float
    sigma_rungs: float
    bound: str = ""
    """'' for a finite estimate, 'above'/'below' when every game was won/lost."""

    def totals(self) -> Tally:
        out = Tally()
        for t in self.tallies.values():
            out.wins += t.wins
            out.draws += t.draws
            out.losses += t.losses
        return out

    def nearest(self) -> str:
        return min(self.tallies, key=lambda n: abs(self.rungs[n].elo - self.elo))

    def los_against(self, name: str) -> float:
        rung = self.rungs[name]
        sigma = math.hypot(self.sigma_games, rung.sigma)
        if sigma == 0:
            return 0.5
        return 0.5 * (1 + math.erf((self.elo - rung.elo) / (sigma * math.sqrt(2))))

    def summary(self) -> dict:
        t = self.totals()
        near = self.nearest()
        out = {
            "engine": self.engine,
            "games": t.games,
            "wins": t.wins,
            "draws": t.draws,
            "losses": t.losses,
            "score": round(t.score, 4),
            "elo": round(self.elo, 1),
            "elo_ci95": [round(self.ci95[0], 1), round(self.ci95[1], 1)],
            "los": round(self.los_against(near), 4),
            "los_rung": near,
        }
        if self.bound:
            out["bound"] = self.bound
        out["sigma_games"] = round(self.sigma_games, 1)
        # what more games narrow; the calibration's share is common to all rated on this table
        out["games_halfwidth95"] = round(Z95 * self.sigma_games, 1)
        out["sigma_calibration"] = round(self.sigma_rungs, 1)
        out["rungs"] = {
            name: {
                "elo": round(self.rungs[name].elo, 1),
                "games": tally.games,
                "score": round(tally.score, 4),
                "wins": tally.wins,
                "draws": tally.draws,
                "losses": tally.losses,
                "los": round(self.los_against(name), 4),
            }
            for name, tally in sorted(self.tallies.items(), key=lambda kv: self.rungs[kv[0]].elo)
        }
        return out


def estimate(
    engine: str, tallies: dict[str, Tally], rungs: dict[str, Rung], exact: bool = False
) -> tuple[float, float, float, str]:
    """(elo, sigma of the games, sigma from the rungs' calibration, bound) of ``engine``."""
    engine = f"{engine} (rated)"  # never the name of a rung, even when it is a rung's engine
    games = []
    for name, t in tallies.items():
        games += [(engine, name, 1.0)] * t.wins + [(engine, name, 0.5)] * t.draws
        games += [(engine, name, 0.0)] * t.losses
    anchors = {name: rungs[name].elo for name in tallies}
    ratings = mle_ratings(games, anchors, prior_draws=None)
    player = ratings.players[engine]
    bound = ""
    if engine in ratings.unbounded:
        bound = "above" if player.points >= player.games / 2 else "below"
    # rung uncertainty enters through the information-weighted mean of the rungs' ratings; the
    # rungs share one calibration, so their errors are added as if fully correlated (an upper
    # bound on that share)
    weights, elo = {}, player.elo
    for name, t in tallies.items():
        e = 1.0 / (1.0 + 10 ** (-(elo - rungs[name].elo) / 400))
        weights[name] = t.games * e * (1 - e)
    total = sum(weights.values()) or 1.0
    sigma_rungs = sum(w / total * rungs[n].sigma for n, w in weights.items())
    return elo, player.sigma, sigma_rungs, bound


def run_ladder(
    engine: str,
    rungs: list[Rung],
    config: LadderConfig,
    match: MatchConfig,
    play: Callable[..., object] = play_match,
    on_step: Callable[[str, Tally, float], None] | None = None,
    resumed: dict[str, Tally] | None = None,
) -> LadderResult:
    """Place ``engine`` on the ladder of ``rungs`` (see the module docstring), counting the
    ``resumed`` games already played against them."""
    if not rungs:
        raise UserError("the ladder has no rungs")
    spec = parse_spec(engine)
    by_name = {r.name: r for r in rungs}
    # copies: the caller's tallies stay as they were
    tallies = {n: copy.deepcopy(t) for n, t in (resumed or {}).items() if n in by_name and t.games}
    cap = config.max_games or config.games_per_rung * (config.neighbours + 2)
    guess = estimate(spec.name, tallies, by_name)[0] if tallies else rungs[len(rungs) // 2].elo
    # past the earlier rating's steps (each played at least one game): new seeds, new openings
    step = sum(t.games for t in tallies.values())
    while True:
        near = sorted(rungs, key=lambda r: abs(r.elo - guess))[: config.neighbours]
        todo = [r for r in near if tallies.get(r.name, Tally()).games < config.games_per_rung]
        played = sum(t.games for t in tallies.values())
        if not todo or played >= cap:
            break
        rung = _bisect(tallies, rungs) or todo[0]
        done = tallies.get(rung.name, Tally()).games
        confident = len(tallies) > 1 and _bracketed(tallies, rungs, guess)
        want = config.games_per_rung - done if confident else config.probe_games
        want = max(2, min(want, config.games_per_rung - done, cap - played))
        result = play(
            spec, parse_spec(rung.name), replace(match, games=want, seed=match.seed + 7919 * step)
        )
        step += 1
        tally = tallies.setdefault(rung.name, Tally())
        for outcome in result.outcomes:  # type: ignore[attr-defined]
            engine_white = outcome.index % 2 == 0  # the first engine is White in even games
            score = outcome.white_score() if engine_white else 1 - outcome.white_score()
            tally.add(10_000 * step + outcome.index // 2, score)
        guess = estimate(spec.name, tallies, by_name)[0]
        if on_step is not None:
            on_step(rung.name, tally, guess)
    if not tallies:
        raise UserError(
            f"ladder: no games of {spec.name} to rate (with --games-per-rung 0, only the "
            "games that --resume finds in --pgn are rated)"
        )
    elo, sg, sr, bound = estimate(spec.name, tallies, by_name)
    sigma = math.hypot(sg, sr)
    lo, hi = elo - Z95 * sigma, elo + Z95 * sigma
    if bound == "above":
        hi = math.inf
    elif bound == "below":
        lo = -math.inf
    return LadderResult(spec.name, tallies, by_name, elo, (lo, hi), sg, sr, bound)


def with_rung(data: dict, result: LadderResult, command: str, pgn: str | None) -> dict:
    """The table ``data`` (a ladder.json as read) with the rated engine added as a rung: its
    rating and interval from ``result`` (the other rungs held at theirs, so no rating already
    made on the table moves), its games against each rung, how they were played. Extending a
    ladder this way keeps its calibration; a new ``--calibrate`` would re-rate every rung."""
    if result.bound:
        raise UserError(
            f"ladder --add-rung: {result.engine} won or lost every game; a rung needs a "
            "finite rating (give it rungs on both sides)"
        )
    if any(r["name"] == result.engine for r in data["rungs"]):
        raise UserError(f"ladder --add-rung: {result.engine} is a rung already")
    totals = result.totals()
    sigma = math.hypot(result.sigma_games, result.sigma_rungs)
    rung = {
        "name": result.engine,
        "elo": round(result.elo, 1),
        "sigma": round(sigma, 1),
        "ci95": [round(result.ci95[0], 1), round(result.ci95[1], 1)],
        "games": totals.games,
        "score": round(totals.score, 4),
        "added": {
            "command": command,
            "pgn": pgn,
            "against": {
                name: {"games": t.games, "score": round(t.score, 4)}
                for name, t in sorted(
                    result.tallies.items(), key=lambda kv: result.rungs[kv[0]].elo
                )
            },
        },
    }
    out = copy.deepcopy(data)
    out["rungs"] = sorted([*out["rungs"], rung], key=lambda r: r["elo"])
    out.setdefault("added", []).append(result.engine)
    return out


def resumed_tallies(
    paths: list[str | Path], engine: str, rungs: list[Rung]
) -> tuple[dict[str, Tally], PgnStats]:
    """The finished games of ``engine`` against ``rungs`` in ``paths``, from its side (games
    between other players are passed over); the two games of an opening stay a pair."""
    name = parse_spec(engine).name
    known = {r.name for r in rungs}
    tallies: dict[str, Tally] = {}
    waiting: dict[tuple[str, str], int] = {}
    keys = itertools.count()
    stats = PgnStats()
    for headers in read_headers(paths, stats):
        white, black = headers["White"], headers["Black"]
        score = SCORE[headers["Result"]]
        if white == name and black in known:
            rung = black
        elif black == name and white in known:
            rung, score = white, 1.0 - score
        else:
            continue
        opening = (rung, headers.get("Opening", "") + headers.get("FEN", ""))
        if opening in waiting:  # the pair's second game: the opening may start a new pair
            pair = waiting.pop(opening)
        else:
            pair = waiting[opening] = -1 - next(keys)  # below every new game's key
        tallies.setdefault(rung, Tally()).add(pair, score)
    return tallies, stats


def _bracketed(tallies: dict[str, Tally], rungs: list[Rung], guess: float) -> bool:
    """Has the engine both scored points against a rung and given points to one? Then the
    estimate is finite and the nearest rungs are worth their full share of games."""
    got = any(t.wins + t.draws > 0 for t in tallies.values())
    gave = any(t.losses + t.draws > 0 for t in tallies.values())
    return got and gave


def _bisect(tallies: dict[str, Tally], rungs: list[Rung]) -> Rung | None:
    """While every game so far was lost (won), the rung halfway down (up) to the end of the
    ladder: the level is found in log2(rungs) probes, not one rung at a time (a one-draw prior
    moves the estimate only ~170 Elo per probe)."""
    if not tallies:
        return None
    lost = all(t.wins + t.draws == 0 for t in tallies.values())
    won = all(t.losses + t.draws == 0 for t in tallies.values())
    played = [i for i, r in enumerate(rungs) if r.name in tallies]
    if lost:
        below = rungs[: min(played)]
        return below[len(below) // 2] if below else None
    if won:
        above = rungs[max(played) + 1 :]
        return above[(len(above) - 1) // 2] if above else None
    return None
