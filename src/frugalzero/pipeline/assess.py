"""The evaluation step: matches of each iteration's net, the gating decision, and one Elo scale
for the whole run (maximum likelihood over every game played, anchored on ``random``)."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Any

from frugalzero.layout import RunLayout
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.state import RunState
from frugalzero.runtime.files import atomic_write_text

RANDOM = "random"
ELO_COLUMNS = [
    "iteration",
    "net_id",
    "elo",
    "ci95_low",
    "ci95_high",
    "games",
    "positions",
    "minutes",
    "accepted",
]


def net_spec(run_dir: Path, net: str, config: RunConfig) -> str:
    """The engine spec of one of the run's nets: the evaluation's node count, plus the run's
    evaluator settings where they differ from the defaults (e.g. ``compile=off``)."""
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.nn.config import EvaluatorConfig

    params = [f"nodes={config.evaluation.nodes}"]
    default = EvaluatorConfig()
    for f in dataclasses.fields(EvaluatorConfig):
        value = getattr(config.evaluator, f.name)
        if value != getattr(default, f.name):
            params.append(f"{f.name}={str(value).lower() if isinstance(value, bool) else value}")
    spec = f"net:{(run_dir / net).resolve()}?{'&'.join(params)}"
    return parse_spec(spec).name  # the name matches write in their PGN headers


def anchor_elo(config: RunConfig) -> float:
    """Rating of the random mover: as configured, else the calibrated ladder's, else 0."""
    if config.evaluation.anchor_elo:
        return config.evaluation.anchor_elo
    try:
        from frugalzero.evaluate.ladder import load_table

        rung = load_table().by_name().get(RANDOM)
        return rung.elo if rung is not None else 0.0
    except Exception:  # no calibration table yet: a relative scale
        return 0.0


def match(
    run_dir: Path, config: RunConfig, a: str, b: str, games: int, name: str, seed: int
) -> dict[str, Any]:
    """Play a match into ``matches/NAME.pgn`` (written under a temporary name until complete,
    so a killed match is replayed whole rather than counted twice)."""
    from frugalzero.evaluate.match import MatchConfig, play_match

    ev = config.evaluation
    final = RunLayout(run_dir).matches / f"{name}.pgn"
    partial = final.with_name(final.name + ".partial")
    final.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    match_config = MatchConfig(
        games=games,
        noise_plies=ev.noise_plies,
        concurrency=ev.concurrency,
        seed=seed,
        pgn=str(partial),
        event=f"frugalzero run: {name}",
        adjudication=ev.adjudication,
    )
    result = play_match(a, b, match_config)
    if partial.exists():
        partial.rename(final)
    summary = result.summary()
    return {
        k: summary[k]
        for k in ("games", "wins", "draws", "losses", "score", "elo", "elo_ci95", "pentanomial")
        if k in summary
    }


def evaluate_iteration(
    run_dir: Path, config: RunConfig, state: RunState, iteration: int, net: str
) -> dict[str, Any]:
    """Matches of this iteration's net; returns scores and whether it replaces the best."""
    from frugalzero.evaluate.gating import gate

    ev = config.evaluation
    new = net_spec(run_dir, net, config)
    out: dict[str, Any] = {}
    seed = config.seed * 7919 + iteration
    if ev.games_vs_random:
        out["vs_random"] = match(
            run_dir,
            config,
            new,
            RANDOM,
            ev.games_vs_random,
            f"iter-{iteration:04d}-vs-random",
            seed,
        )
    if state.best and ev.games_vs_best:
        best = net_spec(run_dir, state.best, config)
        vs = match(
            run_dir, config, new, best, ev.games_vs_best, f"iter-{iteration:04d}-vs-best", seed + 1
        )
        out["vs_best"] = vs
        g = ev.gate
        out["accepted"] = gate(
            g.mode,
            vs["wins"],
            vs["draws"],
            vs["losses"],
            g.threshold,
            g.sprt,
            vs.get("pentanomial"),
        )
    else:
        out["accepted"] = True  # nothing to beat yet, or gating without games
    return out


def final_matches(run_dir: Path, config: RunConfig, state: RunState) -> dict[str, Any]:
    """The final net against random and against the first iteration's net (the loop calls it
    only with iterations done and ``final_games`` set)."""
    ev = config.evaluation
    last, first = state.iterations[-1].net, state.iterations[0].net
    spec = net_spec(run_dir, last, config)
    out = {
        "vs_random": match(
            run_dir, config, spec, RANDOM, ev.final_games, "final-vs-random", config.seed * 7919 - 1
        )
    }
    if len(state.iterations) > 1:
        out["vs_first"] = match(
            run_dir,
            config,
            spec,
            net_spec(run_dir, first, config),
            ev.final_games,
            "final-vs-first",
            config.seed * 7919 - 2,
        )
    return out


def rate_iterations(run_dir: Path, config: RunConfig, state: RunState) -> None:
    """Elo of every iteration's net from all games so far; fills the records, writes elo.csv."""
    from frugalzero.evaluate.elo import mle_ratings
    from frugalzero.evaluate.pgn import read_results

    pgns = sorted(RunLayout(run_dir).matches.glob("*.pgn"))
    if not pgns:
        return
    games = list(read_results(pgns))
    if not games:
        return
    anchor = anchor_elo(config)
    ratings = mle_ratings(games, anchors={RANDOM: anchor})
    for record in state.iterations:
        rating = ratings.players.get(net_spec(run_dir, record.net, config))
        if rating is not None:
            record.elo = round(rating.elo, 1)
            record.elo_ci95 = [round(rating.ci95[0], 1), round(rating.ci95[1], 1)]
    write_elo_csv(run_dir, config, state, ratings)


def write_elo_csv(run_dir: Path, config: RunConfig, state: RunState, ratings) -> None:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(ELO_COLUMNS)
    positions = minutes = 0.0
    for r in state.iterations:
        positions += r.positions
        minutes += (r.generate_s + r.train_s + r.evaluate_s) / 60
        rating = ratings.players.get(net_spec(run_dir, r.net, config))
        games = rating.games if rating is not None else 0
        low, high = r.elo_ci95 if r.elo_ci95 else ("", "")
        writer.writerow(
            [
                r.iteration,
                r.net_id,
                "" if r.elo is None else r.elo,
                low,
                high,
                games,
                int(positions),
                round(minutes, 2),
                int(r.accepted),
            ]
        )
    atomic_write_text(RunLayout(run_dir).elo, text.getvalue())
