"""Rating the kept nets: each one plays the same plain-PUCT player (no noise, fixed nodes)
against every anchor, and one maximum-likelihood fit over all those games, the anchors held
at their calibrated ladder ratings, gives every net its Elo and error.

A net is rated once, by its id (the arms of one seed share their initial net). Its games go to
``ratings/NET_ID-vs-ANCHOR.pgn``, written under a temporary name until the match is complete, so
a killed match is played again whole, and from these files the ratings recompute.

The difference the verdict uses is measured directly where the spec asks for it: each arm's
final net plays its baseline's of the same unit (``ratings/head-to-head/UNIT-ARM.pgn`` and
``.json``, the pentanomial counts of the pairs), which for the same games is far more precise
than two ratings against anchors (each anchor game informs one net; each of these, both).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from frugalzero.errors import UserError
from frugalzero.experiment.spec import RatingSpec

if TYPE_CHECKING:
    from rich.console import Console

    from frugalzero.evaluate.match import MatchConfig
    from frugalzero.evaluate.specs import EngineSpec

HEAD_TO_HEAD = "head-to-head"


def anchor_ratings(rating: RatingSpec) -> dict[str, float]:
    """{canonical anchor name: its calibrated Elo}; an anchor off the ladder is refused."""
    from frugalzero.evaluate.ladder import load_table
    from frugalzero.evaluate.specs import parse_spec

    table = load_table().by_name()
    out = {}
    for anchor in rating.anchors:
        try:
            name = parse_spec(anchor).name
        except UserError as exc:
            raise UserError(f"rating.anchors: {exc}") from None
        rung = table.get(name)
        if rung is None:
            raise UserError(
                f"rating.anchors: {anchor!r} is not on the calibrated ladder "
                f"(its rungs: {', '.join(sorted(table))})"
            )
        out[name] = rung.elo
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[:60]


def match_file(directory: Path, net_id: str, anchor: str) -> Path:
    """Where the net's finished games against ``anchor`` are."""
    return directory / f"{net_id}-vs-{_slug(anchor)}.pgn"


def rate_net(
    directory: Path,
    net_id: str,
    spec: str | EngineSpec,
    rating: RatingSpec,
    anchors: dict[str, float],
) -> None:
    """Play the net ``spec`` (id ``net_id``) against each anchor it has not finished a match
    with; the opening seed depends only on the anchor, so every net meets the same openings."""
    from frugalzero.evaluate.match import MatchConfig

    directory.mkdir(parents=True, exist_ok=True)
    for index, anchor in enumerate(anchors):
        final = match_file(directory, net_id, anchor)
        if final.exists():
            continue
        config = MatchConfig(
            games=rating.games,
            noise_plies=rating.opening_plies,
            seed=7919 + index,
            event=f"frugalzero experiment rating: {net_id}",
        )
        _play_whole(spec, anchor, config, final)


def _play_whole(a: str | EngineSpec, b: str | EngineSpec, config: MatchConfig, pgn: Path):
    """Play the match ``config`` into ``pgn``, written under a temporary name until it is
    complete: a killed match is played again whole, never read half-played."""
    from frugalzero.evaluate.match import play_match

    partial = pgn.with_name(pgn.name + ".partial")
    partial.unlink(missing_ok=True)
    result = play_match(a, b, dataclasses.replace(config, pgn=str(partial)))
    partial.rename(pgn)
    return result


def ratings(directory: Path, anchors: dict[str, float]):
    """``mle_ratings`` over every finished rating game (None before the first)."""
    from frugalzero.evaluate.elo import mle_ratings
    from frugalzero.evaluate.pgn import read_results

    pgns = sorted(directory.glob("*.pgn")) if directory.exists() else []
    games = list(read_results(pgns))
    return mle_ratings(games, anchors=anchors) if games else None


def play_head_to_head(
    directory: Path,
    name: str,
    arm: EngineSpec,
    baseline: EngineSpec,
    rating: RatingSpec,
    seed: int,
    console: Console,
) -> None:
    """``arm`` against ``baseline`` (``rating.head_to_head`` games in colour-swapped pairs from
    the openings of ``seed``), unless that match is finished: its PGN and its counts in
    ``directory/head-to-head/NAME.*``, written once it is complete."""
    from frugalzero.evaluate.match import MatchConfig
    from frugalzero.output import to_json
    from frugalzero.runtime.files import atomic_write_text

    folder = directory / HEAD_TO_HEAD
    final = folder / f"{_slug(name)}.json"
    if final.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    config = MatchConfig(
        games=rating.head_to_head,
        noise_plies=rating.opening_plies,
        seed=seed,
        event=f"frugalzero experiment head-to-head: {name}",
    )
    console.print(f"head-to-head {arm.name} vs {baseline.name} ({rating.head_to_head} games)")
    result = _play_whole(arm, baseline, config, final.with_suffix(".pgn"))
    tally = result.tally
    counts = {
        "arm": arm.name,
        "baseline": baseline.name,
        "wins": tally.wins,
        "draws": tally.draws,
        "losses": tally.losses,
        "pentanomial": list(tally.pentanomial),
    }
    atomic_write_text(final, to_json(counts, indent=1) + "\n")


def head_to_head_counts(directory: Path, name: str) -> list[int] | None:
    """The pentanomial counts of a finished head-to-head match (the arm's pairs scoring 0, 1/2,
    1, 3/2, 2), None before it is."""
    path = directory / HEAD_TO_HEAD / f"{_slug(name)}.json"
    if not path.exists():
        return None
    return [int(x) for x in json.loads(path.read_text(encoding="utf-8"))["pentanomial"]]
