"""Rating the kept nets: each one plays the same plain-PUCT player (no noise, fixed nodes)
against every anchor, and one maximum-likelihood fit over all those games, the anchors held
at their calibrated ladder ratings, gives every net its Elo and error.

A net is rated once, by its id (the arms of one seed share their initial net). Its games go to
``ratings/NET_ID-vs-ANCHOR.pgn``, written under a temporary name until the match is complete, so
a killed match is played again whole, and from these files the ratings recompute.
"""

from __future__ import annotations

import re
from pathlib import Path

from frugalzero.errors import UserError
from frugalzero.experiment.spec import RatingSpec


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
    directory: Path, net_id: str, spec: str, rating: RatingSpec, anchors: dict[str, float]
) -> None:
    """Play the net ``spec`` (id ``net_id``) against each anchor it has not finished a match
    with; the opening seed depends only on the anchor, so every net meets the same openings."""
    from frugalzero.evaluate.match import MatchConfig, play_match

    directory.mkdir(parents=True, exist_ok=True)
    for index, anchor in enumerate(anchors):
        final = match_file(directory, net_id, anchor)
        if final.exists():
            continue
        partial = final.with_name(final.name + ".partial")
        partial.unlink(missing_ok=True)
        config = MatchConfig(
            games=rating.games,
            noise_plies=rating.opening_plies,
            seed=7919 + index,
            pgn=str(partial),
            event=f"frugalzero experiment rating: {net_id}",
        )
        play_match(spec, anchor, config)
        partial.rename(final)


def ratings(directory: Path, anchors: dict[str, float]):
    """``mle_ratings`` over every finished rating game (None before the first)."""
    from frugalzero.evaluate.elo import mle_ratings
    from frugalzero.evaluate.pgn import read_results

    pgns = sorted(directory.glob("*.pgn")) if directory.exists() else []
    games = list(read_results(pgns))
    return mle_ratings(games, anchors=anchors) if games else None
