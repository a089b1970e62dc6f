"""Calibrating the ladder: a round robin of the rungs and Glaurung 2.2 pinned at 2793.

Every rung is limited by nodes or depth, never by time, so a rung is the same player on any
machine and under any load, and the table made here holds wherever the package is installed.
The round robin is restricted to neighbours in strength order: games between engines 1000 Elo
apart end 100-0 and say nothing, so each rung plays its next ``window`` stronger rungs, the
nearest ``games`` times and the others ``far_games`` times. Pairs are played in rounds of
``chunk`` games, so a stopped calibration already covers every pair evenly.

Progress is saved after every game (``STATE/state.json``, rewritten atomically; the games also
go to ``STATE/games.pgn``): a killed calibration continues where it stopped when run again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from frugalzero.errors import UserError
from frugalzero.evaluate.adjudicate import AdjudicationConfig
from frugalzero.evaluate.elo import mle_ratings
from frugalzero.evaluate.match import MatchConfig, play_match
from frugalzero.evaluate.pgn import GameOutcome
from frugalzero.evaluate.specs import parse_spec
from frugalzero.output import to_json
from frugalzero.runtime.files import atomic_write_text
from frugalzero.stats import Z95

ANCHOR = ("glaurung?nodes=100000", 2793.0)
"""Glaurung 2.2 (Debian ``glaurung``), CCRL 40/40 2793: an engine that cannot change."""

# Expected order, weakest first (from short pilot matches); the anchor takes its place among
# them. UCI_Elo rungs get a node budget, not a depth: Stockfish picks its weakened move at depth
# 1 + int(level) (level = ((elo - 1346.6) / 143.4) ** (1 / 0.806)) but goes on searching, and
# what that search leaves in the hash makes the next moves' shallow picks better informed, as
# under a clock. Measured: UCI_Elo 1350 limited to depth 1 scored 0.5 of 10 against Stockfish at
# 1 node, with 20000 nodes 7 of 20 (the issue measured 2.5 of 10 at a time control). 20000 nodes
# reach the pick depth of every level up to 2050 (depth 8); 2200 (depth 10) gets 50000.
RUNGS = [
    "random",
    "fairy?nodes=300&skill=-20",  # measured: random scored 3.5/20 against it, 0.5/20 at 1000
    "fairy?nodes=10000&skill=-20",
    "fairy?nodes=10000&skill=-10",
    "fairy?nodes=10000&skill=-5",
    "fairy?nodes=10000&skill=-4",  # added when -5 to -3 measured ~400 Elo
    "fairy?nodes=10000&skill=-3",
    "fairy?nodes=10000&skill=-1",
    "fairy?nodes=10000&skill=0",
    "stockfish?elo=1350&nodes=20000",
    "stockfish?elo=1500&nodes=20000",
    "stockfish?nodes=1",
    "stockfish?elo=1700&nodes=20000",
    "stockfish?elo=1800&nodes=20000",  # added when 1700 to 1900 measured ~300 Elo
    "stockfish?elo=1900&nodes=20000",
    "stockfish?nodes=1000",
    ANCHOR[0],
    "stockfish?elo=2050&nodes=20000",
    "stockfish?elo=2200&nodes=50000",
    "stockfish?nodes=10000",
]


@dataclass
class CalibrationConfig:
    """The calibration round robin."""

    games: int = 100
    """Games between rungs next to each other in strength order."""
    far_games: int = 40
    """Games between rungs further apart (up to ``window``)."""
    window: int = 2
    """How many stronger rungs each rung plays."""
    chunk: int = 10
    """Games per pair per round."""
    concurrency: int = 0
    """Games at once; 0 = one per core."""
    seed: int = 2793
    """Seed of the random openings."""
    adjudication: AdjudicationConfig = field(
        default_factory=lambda: AdjudicationConfig(resign_score=0)
    )
    """No resignations: weak engines report winning scores they cannot convert."""


# what a resumed run must share; game counts may grow and rungs may be added or dropped (games
# of dropped rungs stay in the state but are not used)
IDENTITY = ("window", "seed", "adjudication")


def schedule(names: list[str], config: CalibrationConfig) -> list[tuple[str, str, int]]:
    """(a, b, games) for every pair up to ``window`` apart in strength order."""
    out = []
    for i, a in enumerate(names):
        for gap in range(1, config.window + 1):
            if i + gap < len(names):
                out.append((a, names[i + gap], config.games if gap == 1 else config.far_games))
    return out


def _pair_seed(a: str, b: str, done: int, seed: int) -> int:
    digest = hashlib.sha256(f"{a}|{b}|{seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big") + 1000 * done


STATE_FILE = "state.json"
"""The calibration's games so far, in its ``--state`` folder."""


class CalibrationState:
    """The games so far, saved after each one."""

    def __init__(
        self, folder: Path, names: list[str], anchor: tuple[str, float], config: CalibrationConfig
    ) -> None:
        self.folder = folder
        self.path = folder / STATE_FILE
        self.pgn = folder / "games.pgn"
        settings = asdict(config)
        self.names = names
        self.identity = {"anchor": [anchor[0], anchor[1]], **{k: settings[k] for k in IDENTITY}}
        self.games: list[list] = []
        self.seconds = 0.0
        self.started = datetime.datetime.now().isoformat(timespec="seconds")
        self.updated = self.started
        if self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                games = [[str(w), str(b), float(sc)] for w, b, sc in data["games"]]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise UserError(f"{self.path}: unreadable calibration state ({exc})") from None
            for key, value in self.identity.items():
                if data.get(key) != json.loads(to_json(value)):
                    raise UserError(
                        f"{self.path}: made with another {key}; use another --state folder"
                    )
            self.games = games
            self.seconds = float(data.get("seconds", 0.0))
            self.started = data.get("started", self.started)
            self.updated = data.get("updated", self.started)

    def done(self, a: str, b: str) -> int:
        return sum(1 for w, bl, _ in self.games if {w, bl} == {a, b})

    def add(self, outcome: GameOutcome, seconds: float) -> None:
        self.games.append([outcome.white, outcome.black, outcome.white_score()])
        self.seconds += seconds
        self.save()

    def save(self) -> None:
        self.updated = datetime.datetime.now().isoformat(timespec="seconds")
        data = {
            **self.identity,
            "rungs": self.names,
            "started": self.started,
            "updated": self.updated,
            "seconds": round(self.seconds, 1),
            "games": self.games,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, to_json(data, indent=0))


def run_calibration(
    folder: str | Path,
    config: CalibrationConfig | None = None,
    names: list[str] | None = None,
    anchor: tuple[str, float] = ANCHOR,
    progress: bool = True,
    max_minutes: float = 0.0,
    max_games: int = 0,
    play: bool = True,
) -> tuple[CalibrationState, bool]:
    """Play (or continue) the round robin. Stops early after ``max_minutes`` or ``max_games``
    more games (when > 0); returns the state and whether every pair has its games. With
    ``play=False`` nothing is played: the saved games are loaded, e.g. to remake the table."""
    config = config or CalibrationConfig()
    names = [parse_spec(n).name for n in (names or RUNGS)]
    anchor = (parse_spec(anchor[0]).name, float(anchor[1]))
    if anchor[0] not in names:
        raise UserError(f"the calibration needs the anchor {anchor[0]} among its rungs")
    state = CalibrationState(Path(folder), names, anchor, config)
    pairs = schedule(names, config)
    deadline = time.monotonic() + 60 * max_minutes if max_minutes > 0 else None
    budget = len(state.games) + max_games if max_games > 0 else None
    while True:
        todo = [(a, b, n) for a, b, n in pairs if state.done(a, b) < n]
        if not todo or not play:
            return state, not todo
        # the pairs with the fewest games (relative to their target) first: however often the
        # run is stopped, every pair advances evenly
        todo.sort(key=lambda p: state.done(p[0], p[1]) / p[2])
        for a, b, target in todo:
            out_of_time = deadline is not None and time.monotonic() > deadline
            if out_of_time or (budget is not None and len(state.games) >= budget):
                return state, False
            done = state.done(a, b)
            count = min(config.chunk, target - done)
            if budget is not None:
                count = min(count, budget - len(state.games))
            match = MatchConfig(
                games=count,
                concurrency=config.concurrency,
                seed=_pair_seed(a, b, done, config.seed),
                pgn=str(state.pgn),
                event="frugalzero ladder calibration",
                adjudication=config.adjudication,
            )
            play_match(a, b, match, progress=progress, on_game=_recorder(state))


def _recorder(state: CalibrationState):
    """An on_game callback that saves each game with the wall time since the previous one."""
    last = time.monotonic()

    def record(outcome: GameOutcome, tally) -> None:
        nonlocal last
        now = time.monotonic()
        state.add(outcome, now - last)
        last = now

    return record


def make_table(state: CalibrationState, config: CalibrationConfig, command: str) -> dict:
    """The shipped table: every rung's rating, interval and games, and how they were made."""
    names = state.names
    known = set(names)
    games = [(w, b, float(s)) for w, b, s in state.games if w in known and b in known]
    anchor_name, anchor_elo = state.identity["anchor"]
    ratings = mle_ratings(games, {anchor_name: anchor_elo})
    rungs = []
    for name in sorted(
        (n for n in names if n in ratings.players), key=lambda n: ratings.players[n].elo
    ):
        p = ratings.players[name]
        rungs.append(
            {
                "name": name,
                "elo": round(p.elo, 1),
                "sigma": round(p.sigma, 1),
                "ci95": [round(p.ci95[0], 1), round(p.ci95[1], 1)],
                "games": p.games,
                "score": round(p.score, 4),
            }
        )
    gaps = [b["elo"] - a["elo"] for a, b in zip(rungs, rungs[1:])]
    for lower, upper in zip(rungs, rungs[1:]):  # how well each step of the ladder is known
        i, j = ratings.names.index(lower["name"]), ratings.names.index(upper["name"])
        cov = ratings.covariance
        sigma = math.sqrt(max(cov[i, i] + cov[j, j] - 2 * cov[i, j], 0.0))
        upper["step"] = round(upper["elo"] - lower["elo"], 1)
        upper["step_ci95"] = round(Z95 * sigma, 1)
    planned = schedule(names, config)
    seen = {frozenset(p[:2]) for p in planned}
    for w, bl, _ in games:  # pairs played under an earlier rung set still count; list them
        if frozenset((w, bl)) not in seen:
            seen.add(frozenset((w, bl)))
            lo, hi = sorted((w, bl), key=names.index)
            planned.append((lo, hi, 0))
    pairs = []
    for a, b, target in planned:
        points = sum(sc if w == a else 1 - sc for w, bl, sc in games if {w, bl} == {a, b})
        n = state.done(a, b)
        pair = {"a": a, "b": b, "games": n, "target": target}
        pairs.append({**pair, "score_a": round(points / n, 4) if n else None})
    short = sum(1 for p in pairs if p["games"] < p["target"])
    return {
        "version": 1,
        "scale": f"Elo (logistic), {anchor_name} pinned at {anchor_elo:g}",
        "anchor": {"name": anchor_name, "elo": anchor_elo},
        "date": datetime.date.today().isoformat(),
        "command": command,
        "games": len(games),
        # a stopped calibration still makes a table; it says how far it got
        "partial": short > 0,
        "pairs_short": short,
        "games_per_pair": {"neighbours": config.games, "further": config.far_games},
        "unmeasured": [n for n in names if n not in ratings.players],
        "played": {"from": state.started, "to": state.updated},
        "wall_hours": round(state.seconds / 3600, 2),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "openings": "random 8-ply openings, material level, each played with colours swapped",
        "adjudication": state.identity["adjudication"],
        "unbounded": ratings.unbounded,
        "prior_draws": ratings.prior_draws,
        "largest_gap": round(max(gaps), 1) if gaps else 0.0,
        "rungs": rungs,
        "pairs": pairs,
    }
