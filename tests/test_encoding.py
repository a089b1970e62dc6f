"""The 119 input planes: checked against a slow square-by-square reference, under mirroring,
and along constructed games where repetition, castling and no-progress planes must change."""

from __future__ import annotations

import chess
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from frugalzero.chess.encoding import HISTORY, NUM_PLANES, encode, frames_array
from frugalzero.chess.history import (
    GameHistory,
    board_frames,
    net_input_from_board,
)
from frugalzero.chess.positions import random_boards

PIECES = [chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING]
COLOUR_PLANE = HISTORY * 14


def planes_of(board: chess.Board) -> np.ndarray:
    inp = net_input_from_board(board)
    return encode(frames_array(inp.frames, 1), np.array([inp.meta]), "no")[0]


def _identity(board: chess.Board) -> str:
    """What makes two positions the same for repetition (FIDE 9.2): placement, side to move,
    castling rights and a legal en-passant capture, i.e. the FEN without its clocks."""
    return " ".join(board.fen(en_passant="legal").split()[:4])


def reference_planes(board: chess.Board) -> np.ndarray:
    """The encoding as the AlphaZero paper describes it, one square at a time."""
    out = np.zeros((NUM_PLANES, 8, 8), dtype=np.float32)
    me = board.turn
    game = chess.Board(board.root().fen())
    positions = [game.copy(stack=False)]
    keys = [_identity(game)]
    for move in board.move_stack:
        game.push(move)
        positions.append(game.copy(stack=False))
        keys.append(_identity(game))
    for t in range(HISTORY):
        i = len(positions) - 1 - t
        if i < 0:
            break
        pos = positions[i]
        for sq in chess.SQUARES:
            piece = pos.piece_at(sq)
            if piece is None:
                continue
            rank, file = chess.square_rank(sq), chess.square_file(sq)
            if me == chess.BLACK:
                rank = 7 - rank
            group = 0 if piece.color == me else 6
            out[t * 14 + group + PIECES.index(piece.piece_type), rank, file] = 1
        reps = keys[:i].count(keys[i])
        out[t * 14 + 12] = reps >= 1
        out[t * 14 + 13] = reps >= 2
    them = not me
    out[COLOUR_PLANE] = me == chess.BLACK
    out[COLOUR_PLANE + 1] = board.fullmove_number / 100
    out[COLOUR_PLANE + 2] = board.has_kingside_castling_rights(me)
    out[COLOUR_PLANE + 3] = board.has_queenside_castling_rights(me)
    out[COLOUR_PLANE + 4] = board.has_kingside_castling_rights(them)
    out[COLOUR_PLANE + 5] = board.has_queenside_castling_rights(them)
    out[COLOUR_PLANE + 6] = board.halfmove_clock / 100
    return out


def test_matches_reference_on_random_games():
    for board in random_boards(150, seed=11, max_plies=120):
        np.testing.assert_array_equal(
            planes_of(board), reference_planes(board), err_msg=board.fen()
        )


def test_matches_reference_with_repetitions_and_fen_start():
    board = chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 9")
    for uci in ["f3g5", "f6g4", "g5f3", "g4f6", "f3g5", "f6g4", "g5f3", "g4f6", "e1c1"]:
        board.push_uci(uci)
        np.testing.assert_array_equal(planes_of(board), reference_planes(board))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 200))
def test_stack_reading_equals_replaying(seed, plies):
    board = random_boards(1, seed=seed, max_plies=plies)[0]
    assert board_frames(board) == GameHistory.of_board(board).frames()


def test_mirrored_position_gives_the_same_planes():
    for board in random_boards(100, seed=5, max_plies=60):
        mirrored = chess.Board(board.root().mirror().fen())
        for move in board.move_stack:
            mirrored.push(
                chess.Move(
                    chess.square_mirror(move.from_square),
                    chess.square_mirror(move.to_square),
                    move.promotion,
                )
            )
        mirrored.fullmove_number = board.fullmove_number  # as Board.mirror() keeps it
        a, b = planes_of(board), planes_of(mirrored)
        same = [p for p in range(NUM_PLANES) if p != COLOUR_PLANE]
        np.testing.assert_array_equal(a[same], b[same])
        assert a[COLOUR_PLANE].max() != b[COLOUR_PLANE].max()  # only the colour differs


def test_history_before_the_start_is_zero():
    board = chess.Board()
    board.push_uci("e2e4")
    planes = planes_of(board)
    assert planes[:14].any() and planes[14:28].any()
    assert not planes[28 : HISTORY * 14].any()


def test_repetition_and_no_progress_planes_along_a_game():
    history = GameHistory()
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    seen = []
    for uci in shuffle * 2 + ["e2e4"]:
        history.push(chess.Move.from_uci(uci))
        inp = history.net_input()
        p = encode(frames_array(inp.frames, 1), np.array([inp.meta]), "no")[0]
        seen.append((p[12].max(), p[13].max(), p[COLOUR_PLANE + 6].max()))
    # after 4 plies the start position recurs (seen once before), after 8 twice
    assert seen[3][:2] == (1, 0)
    assert seen[7][:2] == (1, 1)
    assert history.repetitions == 0  # e2e4 made a new position
    # the no-progress counter climbs by 1/100 a ply and resets on the pawn move
    assert [round(s[2] * 100) for s in seen] == [1, 2, 3, 4, 5, 6, 7, 8, 0]


def test_castling_planes_follow_rights():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    p = planes_of(board)
    assert p[COLOUR_PLANE + 2 : COLOUR_PLANE + 6].min() == 1
    board.push_uci("e1f1")  # White loses both rights; Black to move sees them as opponent's
    p = planes_of(board)
    assert p[COLOUR_PLANE + 2].max() == 1 and p[COLOUR_PLANE + 3].max() == 1  # Black's own
    assert p[COLOUR_PLANE + 4].max() == 0 and p[COLOUR_PLANE + 5].max() == 0  # White's


def test_batch_encoding_is_channels_last_and_matches_single():
    boards = random_boards(16, seed=2)
    inputs = [net_input_from_board(b) for b in boards]
    batch = encode(
        frames_array([i.frames for i in inputs], 16), np.array([i.meta for i in inputs]), "no"
    )
    assert batch.shape == (16, NUM_PLANES, 8, 8)
    assert batch.strides[1] == 4  # planes innermost in memory (NHWC)
    for k, board in enumerate(boards):
        np.testing.assert_array_equal(batch[k], planes_of(board))


def test_the_native_planes_use_the_specs_scales():
    """The C++ encoder's constants are the ones a network file records as its encoding."""
    from frugalzero import _native
    from frugalzero.chess.encoding import ENCODING_SPEC, NUM_PLANES

    assert _native.MOVE_COUNT_SCALE == ENCODING_SPEC["move_count_scale"]
    assert _native.NO_PROGRESS_SCALE == ENCODING_SPEC["no_progress_scale"]
    assert encode(
        np.zeros((0, HISTORY, 13), np.uint64), np.zeros((0, 7), np.int64), "always"
    ).shape == (
        0,
        NUM_PLANES,
        8,
        8,
    )
