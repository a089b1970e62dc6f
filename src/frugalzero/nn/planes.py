"""The 119 input planes built with torch on the network's device, from the compact frames.

``frugalzero.chess.encoding.encode`` builds them in C++ on the CPU: 30 KB of float32 per
position. On a GPU the inference process instead moves the 832 bytes of packed frames and the
7 meta integers of each position to the device and unpacks them there, so the host-to-device
copy is 36 times smaller and the CPU does none of it. Same planes, bit for bit (tested).
"""

from __future__ import annotations

import numpy as np
import torch

from frugalzero.chess.encoding import (
    CASTLING_BLACK,
    CASTLING_WHITE,
    ENCODING_SPEC,
    FRAME_WORDS,
    HISTORY,
    META_FIELDS,
    NUM_PLANES,
    PLANES_PER_STEP,
    HistoryFill,
    fill_history,
)


def frames_bytes(frames: np.ndarray, history_fill: HistoryFill) -> torch.Tensor:
    """Frames (N, 8, 13) uint64 as the (N, 8, 13, 8) bytes they are (little-endian), their
    missing history steps as ``history_fill`` says (``chess.encoding.fill_history``); no copy
    where nothing is missing."""
    n = frames.shape[0]
    data = np.ascontiguousarray(fill_history(frames, history_fill), dtype="<u8")
    if not data.flags.writeable:  # torch wants writable memory (frames of bytes objects)
        data = data.copy()
    return torch.from_numpy(data.view(np.uint8).reshape(n, HISTORY, FRAME_WORDS, 8))


def encode_on(frames: torch.Tensor, meta: torch.Tensor) -> torch.Tensor:
    """Planes (N, 119, 8, 8) float32, channels-last, on the device of ``frames``: bytes
    (N, 8, 13, 8) uint8 from ``frames_bytes`` and meta (N, 7) int64, both already there."""
    n, device = frames.shape[0], frames.device
    if frames.shape[1:] != (HISTORY, FRAME_WORDS, 8) or meta.shape != (n, META_FIELDS):
        raise ValueError(f"bad shapes: frames {tuple(frames.shape)}, meta {tuple(meta.shape)}")
    black = meta[:, 0] == 0
    pieces = frames[:, :, :12]  # (N, T, 12, 8 ranks)
    # Black to move: mirror vertically (reverse the rank bytes) and put its pieces first
    mirrored = torch.cat([pieces[:, :, 6:], pieces[:, :, :6]], dim=2).flip(-1)
    pieces = torch.where(black[:, None, None, None], mirrored, pieces)
    masks = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8, device=device)
    bits = (pieces[..., None] & masks).ne(0)  # (N, T, 12, 8 ranks, 8 files): square = 8r + f
    out = torch.empty((n, 8, 8, NUM_PLANES), dtype=torch.float32, device=device)
    steps = out[..., : HISTORY * PLANES_PER_STEP].view(n, 8, 8, HISTORY, PLANES_PER_STEP)
    steps[..., :12] = bits.permute(0, 3, 4, 1, 2)
    reps = frames[:, :, 12, 0].to(torch.int64)  # the count fits the word's low byte (0-2)
    steps[..., 12] = (reps >= 1)[:, None, None, :]
    steps[..., 13] = (reps >= 2)[:, None, None, :]
    # float64 as the CPU encoder divides: CUDA divides a float32 by a Python number as a
    # multiplication by its float32 reciprocal, one ulp off the quotient for 5/100, 9/100, ...
    m = meta.to(torch.float64)
    castling = torch.where(black[:, None], m[:, CASTLING_BLACK], m[:, CASTLING_WHITE])
    aux = torch.cat(
        [
            black[:, None].to(torch.float64),
            m[:, 6:7] / ENCODING_SPEC["move_count_scale"],
            castling,
            m[:, 5:6] / ENCODING_SPEC["no_progress_scale"],
        ],
        dim=1,
    )
    out[..., HISTORY * PLANES_PER_STEP :] = aux.to(torch.float32)[:, None, None, :]
    return out.permute(0, 3, 1, 2)
