// The network's 119 input planes from frames and meta (frugalzero.chess.encoding), built where
// the batch is: the inference process turns a batch's 832 bytes of frames a position into
// 30 KB of float32 planes without a pass of NumPy per plane group.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chess/position.h"

namespace fz {

constexpr int PLANES_PER_STEP = 14;
constexpr int AUX_PLANES = 7;
constexpr int NUM_PLANES = HISTORY * PLANES_PER_STEP + AUX_PLANES;  // 119
constexpr double MOVE_COUNT_SCALE = 100.0;                     // encoding.ENCODING_SPEC
constexpr double NO_PROGRESS_SCALE = 100.0;

// ``n`` positions' planes, channels last: out[i][square][plane], n * 64 * NUM_PLANES floats.
// frames: n * HISTORY * FRAME_WORDS words, newest first; meta: n * META_FIELDS integers.
void encode_planes(const uint64_t* frames, const int64_t* meta, size_t n, float* out);

}  // namespace fz
