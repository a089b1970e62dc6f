"""The device-side plane builder agrees with NumPy's bit for bit."""

from __future__ import annotations

import chess
import numpy as np
import pytest
import torch

from frugalzero.chess.encoding import encode
from frugalzero.chess.history import net_input_from_board
from frugalzero.chess.positions import random_boards
from frugalzero.nn.evaluator import pack_inputs
from frugalzero.nn.planes import encode_on, frames_bytes


def _boards() -> list[chess.Board]:
    boards = random_boards(64, seed=3, max_plies=80)  # both sides to move, all phases
    shuffle = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 7 30")  # castling, clocks
    for uci in ("e8d8", "e1d1", "d8e8", "d1e1") * 3:  # kings out and back three times: the
        shuffle.push_uci(uci)  # same position (castling gone) occurs thrice, repetitions set
        boards.append(shuffle.copy())
    return boards


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_device_planes_equal_numpy_planes(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    frames, meta, _, _ = pack_inputs([net_input_from_board(b) for b in _boards()])
    assert frames[:, :, 12].max() == 2  # the repetition counts are exercised
    frames = frames.copy()
    frames[3, 2:] = 0  # a history cut short: filled alike by both doors
    want = encode(frames, meta, "always")
    packed = frames_bytes(frames, "always").to(device)
    got = encode_on(packed, torch.from_numpy(meta).to(device))
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert np.array_equal(got.cpu().numpy(), want)
    with pytest.raises(ValueError, match="bad shapes"):
        encode_on(packed[:, :4], torch.from_numpy(meta).to(device))
