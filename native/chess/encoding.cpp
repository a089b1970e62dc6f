// The AlphaZero policy index of a move (frugalzero.chess.moves): 73 planes x 64 from-squares,
// seen from the side to move (Black's squares mirrored with sq ^ 56).
#include "chess/bitboard.h"

namespace fz {

namespace {

// moves.py's _plane_of: the plane of a move by rank and file delta from White's view and its
// promotion slot (0 none or queen, 1..3 knight, bishop, rook), or -1.
constexpr int plane_of(int dr, int df, int slot) {
    if (slot) {
        if (dr != 1 || df < -1 || df > 1) return -1;
        return 64 + (slot - 1) * 3 + (df + 1);
    }
    for (int i = 0; i < 8; ++i)
        if (detail::KNIGHT_STEPS[i][0] == dr && detail::KNIGHT_STEPS[i][1] == df) return 56 + i;
    const int adr = dr < 0 ? -dr : dr, adf = df < 0 ? -df : df;
    const int dist = adr > adf ? adr : adf;
    if (dist == 0 || !(dr == 0 || df == 0 || adr == adf)) return -1;
    for (int i = 0; i < 8; ++i)
        if (detail::QUEEN_STEPS[i][0] == dr / dist && detail::QUEEN_STEPS[i][1] == df / dist)
            return i * 7 + dist - 1;
    return -1;
}

struct PolicyTable {
    int16_t index[64][64][4] = {};
};

constexpr PolicyTable make_policy_table() {
    PolicyTable t;
    for (int from = 0; from < 64; ++from)
        for (int to = 0; to < 64; ++to)
            for (int slot = 0; slot < 4; ++slot) {
                const int plane = plane_of(rank_of(to) - rank_of(from), file_of(to) - file_of(from),
                                           slot);
                t.index[from][to][slot] = int16_t(plane < 0 ? -1 : plane * 64 + from);
            }
    return t;
}

constexpr PolicyTable POLICY = make_policy_table();

// promotion piece type -> slot: none and queen 0, knight 1, bishop 2, rook 3; -1 for the rest
constexpr int PROMOTION_SLOT[16] = {0, -1, 1, 2, 3, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

}  // namespace

int policy_index(Move move, Color turn) {
    const int slot = PROMOTION_SLOT[move.promotion()];
    if (slot < 0) return -1;
    const int flip = turn == WHITE ? 0 : 56;
    return POLICY.index[move.from() ^ flip][move.to() ^ flip][slot];
}

}  // namespace fz
