"""Measuring strength: engines by spec string, matches, ratings, SPRT, gating, the ladder.

Every claim about strength goes through here (docs/evaluation.md has the commands and the
design). What the rest of frugalzero calls:

* ``play_match(engine_a, engine_b, MatchConfig(...)) -> MatchResult`` -- games in parallel in
  colour-swapped opening pairs, adjudication, PGN; ``result.summary()`` is the ``--json``.
* ``elo_from_score``, ``score_from_elo``, ``elo_interval(w, d, l, pentanomial)``, ``los`` (from
  ``frugalzero.stats``, with the head-to-head estimate of a pair, ``head_to_head``).
* ``mle_ratings(games, anchors) -> Ratings`` -- maximum-likelihood Elo of many players.
* ``sprt(w, d, l, SprtConfig(elo0, elo1, alpha, beta), pentanomial) -> SprtResult``.
* ``gate(mode, w, d, l, ...) -> bool`` and ``gate_match(candidate, best, GateConfig, match)``.
* ``run_ladder(engine, rungs, LadderConfig, MatchConfig)``, ``load_table()``.
* ``parse_spec(text) -> EngineSpec``; any engine but ``random`` may play under a clock,
  ``tc=BASE+INC`` (``frugalzero.evaluate.clock``: the grammar and the clock arithmetic).
"""

from frugalzero.evaluate.adjudicate import AdjudicationConfig
from frugalzero.evaluate.elo import mle_ratings
from frugalzero.evaluate.gating import GateConfig, gate, gate_match
from frugalzero.evaluate.ladder import LadderConfig, load_table, run_ladder
from frugalzero.evaluate.match import MatchConfig, MatchResult, play_match
from frugalzero.evaluate.specs import EngineSpec, parse_spec
from frugalzero.evaluate.sprt import SprtConfig, SprtResult, sprt
from frugalzero.stats import elo_from_score, elo_interval, los, score_from_elo

__all__ = [
    "AdjudicationConfig",
    "EngineSpec",
    "GateConfig",
    "LadderConfig",
    "MatchConfig",
    "MatchResult",
    "SprtConfig",
    "SprtResult",
    "elo_from_score",
    "elo_interval",
    "gate",
    "gate_match",
    "load_table",
    "los",
    "mle_ratings",
    "parse_spec",
    "play_match",
    "run_ladder",
    "score_from_elo",
    "sprt",
]
