"""Engine spec strings and adjudication rules (no engines run here)."""

from __future__ import annotations

import chess
import pytest

from frugalzero.errors import UserError
from frugalzero.evaluate.adjudicate import AdjudicationConfig, Adjudicator
from frugalzero.evaluate.specs import parse_spec


def test_stockfish_elo_sets_limit_strength_and_keeps_a_canonical_name():
    spec = parse_spec("stockfish?nodes=500&elo=1500")
    assert spec.kind == "stockfish" and spec.path == "/usr/games/stockfish"
    assert spec.options["UCI_LimitStrength"] is True and spec.options["UCI_Elo"] == 1500
    assert spec.options["Threads"] == 1 and spec.nodes == 500 and spec.movetime is None
    assert spec.name == "stockfish?elo=1500&nodes=500"
    assert parse_spec("stockfish?elo=1500&nodes=500").name == spec.name


def test_defaults_and_kinds():
    assert parse_spec("stockfish").movetime == 100  # a UCI engine always has a limit
    fairy = parse_spec("fairy?skill=-20&movetime=50")
    assert fairy.options["Skill Level"] == -20 and fairy.movetime == 50
    assert parse_spec("glaurung?nodes=1000").options["OwnBook"] is False
    net = parse_spec("net:default?nodes=1&c_init=2.5")
    assert net.kind == "net" and net.path == "default" and net.nodes == 1
    assert net.params == {"c_init": "2.5"}
    uci = parse_spec("uci:/opt/e?Skill%20Level=3&Ponder=false&depth=4")
    assert uci.options["Skill Level"] == 3 and uci.options["Ponder"] is False and uci.depth == 4
    assert parse_spec("random?seed=3").params == {"seed": "3"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stockfish?elo=1200", "outside 1350..2850"),
        ("stockfish?skill=-5", "outside 0..20"),
        ("fairy?skill=-21", "outside -20..20"),
        ("stockfish?nodes=abc", "must be an integer"),
        ("stockfish?speed=3", "unknown key 'speed'"),
        ("stockfish?nodes", "expected key=value"),
        ("alphazero", "unknown kind"),
        ("net", "needs a file"),
        ("uci", "needs an executable"),
        ("net:x?movetime=5", "limited by nodes"),
        ("random?nodes=5", "unknown key 'nodes'"),
        ("stockfish?nodes=1&nodes=2", "given twice"),
        ("net:default?tc=10+0.1&nodes=400", "tc .a clock. and nodes .a per-move limit."),
        ("stockfish?tc=5+0.1&depth=3", "exclude each other"),
        ("uci:/e?movetime=100&tc=5", "exclude each other"),
        ("stockfish?tc=10+", "not BASE.INC or MOVES/BASE.INC"),
        ("stockfish?tc=ten", "not BASE.INC"),
        ("stockfish?tc=10+0.1+1", "not BASE.INC"),
        ("stockfish?tc=-10+1", "not BASE.INC"),
        ("stockfish?tc=1:00+1", "not BASE.INC"),
        ("fairy?tc=0+1", "must be positive"),
        ("glaurung?tc=0/60+0", "must be positive"),
        ("random?tc=10+0.1", "unknown key 'tc'"),
    ],
)
def test_bad_specs_are_one_line_errors(text, message):
    with pytest.raises(UserError, match=message):
        parse_spec(text)


@pytest.mark.parametrize(
    ("text", "name", "tc_text"),
    [
        ("net:default?tc=10+0.10", "net:default?tc=10+0.1", "10+0.1"),
        ("stockfish?tc=5&elo=1500", "stockfish?elo=1500&tc=5+0", "5+0"),
        ("glaurung?tc=40/60+0.5", "glaurung?tc=40/60+0.5", "40/60+0.5"),
        ("uci:/opt/e?Ponder=false&tc=.5+.05", "uci:/opt/e?Ponder=false&tc=0.5+0.05", "0.5+0.05"),
    ],
)
def test_a_clock_replaces_the_per_move_limit_and_is_named(text, name, tc_text):
    spec = parse_spec(text)
    assert spec.name == name and parse_spec(name).name == name  # one spelling of the clock
    assert spec.tc is not None and spec.tc.text() == tc_text and spec.is_uci
    assert (spec.nodes, spec.depth, spec.movetime) == (None, None, None)  # no default movetime
    assert spec.limit_text() == f"tc={tc_text}"
    assert "tc" not in spec.options


def test_a_net_under_a_clock_plays_through_uci_with_its_keys_as_options():
    spec = parse_spec("net:default?tc=2+0.05&BatchSize=8&temperature=0.5")
    assert spec.kind == "net" and spec.path == "default" and spec.is_uci
    assert spec.options == {"BatchSize": 8, "temperature": "0.5"} and spec.params == {}
    node_limited = parse_spec("net:default?nodes=400&c_init=2.0")  # unchanged: in-process
    assert not node_limited.is_uci and node_limited.params == {"c_init": "2.0"}


def _feed(adjudicator, board, moves_scores):
    verdict = None
    for uci, score in moves_scores:
        mover = board.turn
        board.push_uci(uci)
        verdict = adjudicator.update(board, mover, score)
        if verdict:
            return verdict
    return verdict


SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]


def test_resignation_needs_consecutive_moves_and_the_opponents_agreement():
    cfg = AdjudicationConfig(resign_score=500, resign_moves=3)
    adj, board = Adjudicator(cfg), chess.Board()
    # White thinks it is lost and Black agrees; White's first move does not count (Black has
    # not given a score yet), so its fourth such move resigns
    moves = [(SHUFFLE[i % 4], -600 if i % 2 == 0 else 600) for i in range(9)]
    assert _feed(adj, board, moves) == ("0-1", "White resigns")
    assert board.ply() == 7
    # a single better score in between resets the count
    adj, board = Adjudicator(cfg), chess.Board()
    scores = [-600, 600, -600, 600, -100, 600, -600, 600, -600, 600]
    assert _feed(adj, board, [(SHUFFLE[i % 4], s) for i, s in enumerate(scores)]) is None
    # one-sided: the opponent does not think it is winning
    adj, board = Adjudicator(cfg), chess.Board()
    scores = [-600, 0] * 4
    assert _feed(adj, board, [(SHUFFLE[i % 4], s) for i, s in enumerate(scores)]) is None


def test_no_adjudication_against_a_side_without_scores():
    cfg = AdjudicationConfig(resign_score=500, resign_moves=2, draw_after=1, draw_moves=2)
    adj, board = Adjudicator(cfg), chess.Board()
    scores = [-900, None] * 6
    assert _feed(adj, board, [(SHUFFLE[i % 4], s) for i, s in enumerate(scores)]) is None
    adj, board = Adjudicator(cfg), chess.Board()
    scores = [0, None] * 6
    assert _feed(adj, board, [(SHUFFLE[i % 4], s) for i, s in enumerate(scores)]) is None


def test_draw_adjudication_and_length_limit():
    cfg = AdjudicationConfig(draw_after=3, draw_moves=2, draw_score=10)
    adj, board = Adjudicator(cfg), chess.Board()
    # before move 3 quiet scores do not count; from move 3, 4 quiet plies draw
    verdict = _feed(adj, board, [(SHUFFLE[i % 4], 0) for i in range(12)])
    assert verdict == ("1/2-1/2", "draw by adjudication") and board.fullmove_number >= 3
    assert board.ply() == 7  # the positions after plies 4..7 are from move 3 on
    adj, board = Adjudicator(AdjudicationConfig(draw_after=0, max_plies=6)), chess.Board()
    verdict = _feed(adj, board, [(SHUFFLE[i % 4], 50) for i in range(12)])
    assert verdict == ("1/2-1/2", "length limit (6 plies)") and board.ply() == 6
