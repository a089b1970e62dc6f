#include "chess/planes.h"

#include <cstring>

namespace fz {

void encode_planes(const uint64_t* frames, const int64_t* meta, size_t n, float* out) {
    constexpr size_t PER_POSITION = size_t(64) * NUM_PLANES;
    for (size_t i = 0; i < n; ++i) {
        float* o = out + i * PER_POSITION;
        std::memset(o, 0, PER_POSITION * sizeof(float));
        const uint64_t* f = frames + i * HISTORY * FRAME_WORDS;
        const int64_t* m = meta + i * META_FIELDS;
        const bool black = m[0] == 0;
        for (int t = 0; t < HISTORY; ++t) {
            const uint64_t* words = f + t * FRAME_WORDS;
            float* step = o + t * PLANES_PER_STEP;
            // the side to move's pieces first; Black's board mirrored vertically (the rank
            // bytes reversed)
            for (int p = 0; p < 12; ++p) {
                uint64_t bits = black ? __builtin_bswap64(words[p < 6 ? p + 6 : p - 6]) : words[p];
                while (bits) {
                    const int square = __builtin_ctzll(bits);
                    bits &= bits - 1;
                    step[square * NUM_PLANES + p] = 1.0f;
                }
            }
            const int64_t reps = int64_t(words[12]);
            if (reps >= 1)
                for (int square = 0; square < 64; ++square) step[square * NUM_PLANES + 12] = 1.0f;
            if (reps >= 2)
                for (int square = 0; square < 64; ++square) step[square * NUM_PLANES + 13] = 1.0f;
        }
        // castling: own king-side, own queen-side, the opponent's (meta 1-4: White K Q, Black K Q)
        const int64_t own_k = black ? m[3] : m[1], own_q = black ? m[4] : m[2];
        const int64_t their_k = black ? m[1] : m[3], their_q = black ? m[2] : m[4];
        const float aux[AUX_PLANES] = {
            black ? 1.0f : 0.0f,
            float(double(m[6]) / MOVE_COUNT_SCALE),  // divided in double, as NumPy does
            float(own_k),
            float(own_q),
            float(their_k),
            float(their_q),
            float(double(m[5]) / NO_PROGRESS_SCALE),
        };
        for (int square = 0; square < 64; ++square)
            std::memcpy(o + square * NUM_PLANES + HISTORY * PLANES_PER_STEP, aux, sizeof(aux));
    }
}

}  // namespace fz
