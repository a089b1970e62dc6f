"""Values, centipawns, win/draw/loss and mate scores: one module's conventions."""

from __future__ import annotations

import chess
import chess.engine
import numpy as np
import pytest
import torch

from frugalzero.values import (
    MATE_CP,
    cp_to_value,
    mate_moves,
    parse_score_text,
    score_cp,
    score_text,
    score_to_value,
    search_score,
    uci_score,
    value_to_cp,
    value_to_wdl,
    wdl_permille,
    wdl_to_value,
)


def test_cp_to_value_is_the_elo_logistic():
    for cp in (-900, -250, -40, 0, 13, 250, 1200):
        for scale in (200.0, 400.0):
            expected = 2 / (1 + 10 ** (-cp / scale)) - 1
            assert cp_to_value(cp, scale) == pytest.approx(expected, abs=1e-12)
    assert cp_to_value(250, 250) == pytest.approx(9 / 11)  # expected score 10/11
    values = [cp_to_value(cp) for cp in range(-3000, 3001, 50)]
    assert all(a < b for a, b in zip(values, values[1:]))
    assert all(-1 < v < 1 for v in values)
    assert cp_to_value(-170) == pytest.approx(-cp_to_value(170))


def test_mate_scores_are_plus_minus_one():
    assert score_to_value(chess.engine.Mate(3)) == 1.0
    assert score_to_value(chess.engine.Mate(-1)) == -1.0
    assert score_to_value(chess.engine.Mate(0)) == -1.0  # side to move is mated
    assert score_to_value(chess.engine.Cp(0)) == 0.0
    pov = chess.engine.PovScore(chess.engine.Cp(120), chess.BLACK)
    assert score_to_value(pov.relative) > 0 > score_to_value(pov.white())


def test_score_text_round_trips():
    for score in (
        chess.engine.Cp(-35),
        chess.engine.Cp(0),
        chess.engine.Mate(4),
        chess.engine.Mate(-2),
    ):
        assert parse_score_text(score_text(score)) == score
    assert score_text(chess.engine.Mate(-2)) == "#-2"


def test_mate_plies_become_uci_moves() -> None:
    # mating with the next move is 1 ply; being mated after one's own move is 2 plies
    assert [mate_moves(p) for p in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]
    assert [mate_moves(-p) for p in (1, 2, 3, 4)] == [-1, -1, -2, -2]
    assert uci_score(search_score(0.0, -2)) == "mate -1"
    assert uci_score(search_score(0.9, 3)) == "mate 2"
    assert uci_score(search_score(0.25)) == f"cp {value_to_cp(0.25)}"


def test_adjudication_centipawns_match_python_chess() -> None:
    """A net's proven mate reaches adjudication as the same number a UCI engine's would."""
    for plies in (1, 2, 5, -2, -3, -6):
        ours = score_cp(search_score(0.0, plies))
        theirs = chess.engine.Mate(mate_moves(plies)).score(mate_score=MATE_CP)
        assert ours == theirs
        assert abs(ours) > MATE_CP - 10 and (ours > 0) == (plies > 0)
    assert score_cp(chess.engine.Cp(-35)) == -35


def test_value_to_cp_is_leelas_mapping_and_monotonic() -> None:
    assert value_to_cp(0.0) == 0
    assert value_to_cp(-0.5) == -value_to_cp(0.5)
    cps = [value_to_cp(v) for v in np.linspace(-1, 1, 201)]
    assert all(a <= b for a, b in zip(cps, cps[1:]))
    assert 900 < value_to_cp(0.945) < 1100  # resignation sits near 1000 cp


def test_wdl_has_the_value_as_expectation_on_every_array_kind() -> None:
    for v in (-1.0, -0.4, 0.0, 0.3, 1.0):
        w, d, loss = value_to_wdl(v)
        assert min(w, d, loss) >= 0 and w + d + loss == pytest.approx(1.0)
        assert wdl_to_value(w, loss) == pytest.approx(v)
    assert value_to_wdl(1.7) == (1.0, 0.0, 0.0)  # clipped
    grid = np.linspace(-1, 1, 9)
    as_numpy = np.stack(value_to_wdl(grid), axis=1)
    as_torch = torch.stack(value_to_wdl(torch.from_numpy(grid)), dim=1).numpy()
    np.testing.assert_allclose(as_numpy, as_torch)
    np.testing.assert_allclose(wdl_to_value(as_numpy[:, 0], as_numpy[:, 2]), grid)


@pytest.mark.parametrize("draw", [None, 0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("value", [-1.0, -0.9995, -0.42, 0.0, 0.0005, 0.3, 0.999, 1.0])
def test_uci_wdl_is_whole_per_mille_with_the_value_as_expectation(value, draw) -> None:
    win, drawn, loss = wdl_permille(value, draw)
    assert min(win, drawn, loss) >= 0 and win + drawn + loss == 1000
    assert (win - loss) / 1000 == pytest.approx(value, abs=1.5e-3)
    if draw is None:  # the least decisive split, as value_to_wdl makes it
        assert (win, drawn, loss) == tuple(round(1000 * p) for p in value_to_wdl(value))
    else:  # the head's draws, where the value leaves room for them
        assert drawn == round(1000 * min(draw, 1 - abs(value)))
